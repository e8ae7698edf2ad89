/**
 * The duplicate-delivery cases, shared by duplicates.test.ts (copies through SQS) and
 * duplicates-parallel.test.ts (copies handed to the flow route at the same time).
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { resumeHook, start } from 'workflow/api';
import { type E2e, type E2eOptions, startE2e } from './e2e.js';

export function duplicateDeliveryCases(
  mode: NonNullable<E2eOptions['duplicateDelivery']>,
  opts: { bodiesRunOnce: boolean },
) {
  let e2e: E2e;
  beforeAll(async () => {
    e2e = await startE2e({ duplicateDelivery: mode });
  });
  afterAll(async () => {
    await e2e?.close();
  });

  const wf = (name: string) => e2e.workflows[name] as never;

  async function terminalCounts(runId: string) {
    const evs = (await e2e.world.events.list({ runId, pagination: {} })).data;
    const perStep = new Map<string, number>();
    for (const e of evs) {
      if (e.eventType === 'step_completed' || e.eventType === 'step_failed') {
        perStep.set(e.correlationId!, (perStep.get(e.correlationId!) ?? 0) + 1);
      }
    }
    const runTerminal = evs.filter((e) =>
      ['run_completed', 'run_failed', 'run_cancelled'].includes(e.eventType),
    ).length;
    return { perStep, runTerminal };
  }

  it(`sequential steps, a fan-out and a sleep complete; each step and run ends once; each body ran ${opts.bodiesRunOnce ? 'once' : 'at least once'}`, async () => {
    const prefix = `dup-${mode}-${Date.now()}`;
    const run = await start(wf('countedSteps'), [prefix, 6]);
    expect(await run.returnValue).toBe(6 + (0 + 1 + 2 + 3));
    const { perStep, runTerminal } = await terminalCounts(run.runId);
    expect(runTerminal).toBe(1);
    expect(perStep.size).toBe(10);
    for (const n of perStep.values()) expect(n).toBe(1);
    const mine = [...e2e.stepTally().entries()].filter(([k]) => k.startsWith(prefix));
    expect(mine).toHaveLength(10);
    for (const [key, n] of mine) {
      if (opts.bodiesRunOnce) expect(n, key).toBe(1);
      else expect(n, key).toBeGreaterThanOrEqual(1);
    }
  });

  it('many concurrent runs with duplicated deliveries all complete exactly once', async () => {
    const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => start(wf('manySteps'), [3 + i])));
    const results = await Promise.all(runs.map((r) => r.returnValue));
    expect(results).toEqual(Array.from({ length: 8 }, (_, i) => 3 + i));
    for (const r of runs) {
      const { perStep, runTerminal } = await terminalCounts(r.runId);
      expect(runTerminal).toBe(1);
      for (const n of perStep.values()) expect(n).toBe(1);
    }
  });

  it('hooks resume once per resume under duplicated deliveries', async () => {
    const token = `dup-tok-${Date.now()}`;
    const run = await start(wf('hookCollector'), [token, 2]);
    await vi.waitFor(async () => expect(await e2e.world.hooks.getByToken(token)).toBeTruthy(), {
      timeout: 20_000,
      interval: 100,
    });
    await resumeHook(token, { value: 1 });
    await resumeHook(token, { value: 2 });
    expect(await run.returnValue).toEqual([1, 2]);
    const { runTerminal } = await terminalCounts(run.runId);
    expect(runTerminal).toBe(1);
  });
}
