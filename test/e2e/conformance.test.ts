/**
 * Our port of the @workflow/world-testing checklist (the published suite only loads spec-5
 * Worlds), plus AWS-specific cases, run through the real core on eve-world-aws.
 */
import { eventIdToSlot } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resumeHook, start } from 'workflow/api';
import { type E2e, startE2e } from '../helpers/e2e.js';

let e2e: E2e;

beforeAll(async () => {
  e2e = await startE2e({ tuning: { maxDelayHopSeconds: 2 } });
});
afterAll(async () => {
  await e2e?.close();
});

const wf = (name: string) => {
  const meta = e2e.workflows[name];
  if (!meta) throw new Error(`workflow ${name} is not in the manifest`);
  return meta as never;
};

async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function events(runId: string) {
  const out = await e2e.world.events.list({ runId, pagination: {} });
  return out.data;
}

describe('world-testing checklist', () => {
  it('runs an addition', async () => {
    const run = await start(wf('addition'), [1, 2]);
    expect(await run.returnValue).toBe(3);
    const stored = await e2e.world.runs.get(run.runId);
    expect(stored.status).toBe('completed');
    expect(stored.completedAt).toBeInstanceOf(Date);
  });

  it('idempotency: 20 sequential steps complete, one step_completed each', async () => {
    const run = await start(wf('manySteps'), [20]);
    expect(await run.returnValue).toBe(20);
    const evs = await events(run.runId);
    const completed = evs.filter((e) => e.eventType === 'step_completed');
    expect(completed).toHaveLength(20);
    expect(new Set(completed.map((e) => e.correlationId)).size).toBe(20);
    expect(evs.filter((e) => e.eventType === 'run_completed')).toHaveLength(1);
  });

  it('hooks: resumes deliver payloads in order', async () => {
    const token = `tok-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const run = await start(wf('hookCollector'), [token, 2]);
    await vi.waitFor(async () => expect(await e2e.world.hooks.getByToken(token)).toBeTruthy(), {
      timeout: 20_000,
      interval: 100,
    });
    await resumeHook(token, { value: 'first' });
    await resumeHook(token, { value: { second: true } });
    expect(await run.returnValue).toEqual(['first', { second: true }]);
    // The token is released when the run ends (right after the terminal event commits).
    await vi.waitFor(() => expect(e2e.world.hooks.getByToken(token)).rejects.toThrow(), {
      timeout: 5000,
      interval: 100,
    });
  });

  it('supports null bytes in step results', async () => {
    const run = await start(wf('nullBytes'), []);
    const out = (await run.returnValue) as Uint8Array;
    expect(Array.from(out)).toEqual([0, 1, 0, 2, 0, 0, 255, 0]);
  });

  it('retriable and fatal errors', async () => {
    const run = await start(wf('retriableAndFatal'), []);
    expect(await run.returnValue).toEqual({ attempts: 2, fatal: 'fatal on purpose' });
    const evs = await events(run.runId);
    expect(evs.some((e) => e.eventType === 'step_retrying')).toBe(true);
    expect(evs.some((e) => e.eventType === 'step_failed')).toBe(true);

    const failing = await start(wf('failsFatally'), []);
    await expect(failing.returnValue).rejects.toThrow();
    expect((await e2e.world.runs.get(failing.runId)).status).toBe('failed');
  });

  it('sequential steps complete in a single flow invocation', async () => {
    const run = await start(wf('sequentialSteps'), [10]);
    expect(await run.returnValue).toBe(20);
    expect(e2e.invocations.get(run.runId)).toBe(1);
  });

  it('sequential steps with a stream complete in a single flow invocation; the caller reads the stream', async () => {
    const run = await start(wf('sequentialWithStream'), []);
    const reader = run.getReadable<Uint8Array>().getReader();
    const chunks: string[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(typeof value === 'string' ? value : new TextDecoder().decode(value));
    }
    expect(chunks.join('')).toBe('hello world');
    expect(await run.returnValue).toBe('hello world');
    expect(e2e.invocations.get(run.runId)).toBe(1);
  });

  it('sleep workflow takes exactly 2 flow invocations', async () => {
    const t0 = Date.now();
    const run = await start(wf('sleepThenStep'), ['1s']);
    expect(await run.returnValue).toBe(3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(e2e.invocations.get(run.runId)).toBe(2);
  });

  it('parallel steps (Promise.all of 2) complete in 1-3 flow invocations', async () => {
    const run = await start(wf('fanOut'), [2]);
    expect(await run.returnValue).toEqual([0, 2]);
    const n = e2e.invocations.get(run.runId) ?? 0;
    expect(n).toBeGreaterThanOrEqual(1);
    expect(n).toBeLessThanOrEqual(3);
  });

  it('sequential steps carrying an AbortSignal still run in a single flow invocation', async () => {
    const run = await start(wf('stepsWithSignal'), [3]);
    expect(await run.returnValue).toBe(3);
    expect(e2e.invocations.get(run.runId)).toBe(1);
  });

  it('lineage: a child started from a workflow body records its parent and root', async () => {
    const parent = await start(wf('parentStartsChild'), []);
    const childId = (await parent.returnValue) as string;
    const child = await e2e.world.runs.get(childId);
    expect(child.attributes?.$parentRunId).toBe(parent.runId);
    expect(child.attributes?.$rootRunId).toBe(parent.runId);

    const root = await start(wf('grandparent'), []);
    const midId = (await root.returnValue) as string;
    const mid = await e2e.world.runs.get(midId);
    expect(mid.attributes?.$rootRunId).toBe(root.runId);
    await vi.waitFor(
      async () => {
        const midRun = await e2e.world.runs.get(midId);
        expect(midRun.status).toBe('completed');
      },
      { timeout: 30_000, interval: 200 },
    );
    const { getRun } = await import('workflow/api');
    const leafId = (await getRun(midId).returnValue) as string;
    const leaf = await e2e.world.runs.get(leafId);
    expect(leaf.attributes?.$rootRunId).toBe(root.runId);
    expect(leaf.attributes?.$parentRunId).toBe(midId);
  });

  it('event ids are dense 1-based slots', async () => {
    const run = await start(wf('fanOut'), [3]);
    await run.returnValue;
    const evs = await events(run.runId);
    expect(evs.map((e) => eventIdToSlot(e.eventId))).toEqual(evs.map((_, i) => i + 1));
  });

  it('fails a runaway run at the event limit', async () => {
    await withEnv({ WORKFLOW_MAX_EVENTS: '10', WORKFLOW_TURBO: '0' }, async () => {
      const run = await start(wf('runaway'), []);
      await vi.waitFor(
        async () => {
          const r = await e2e.world.runs.get(run.runId);
          expect(r.status).toBe('failed');
          expect(r.errorCode).toBe('MAX_EVENTS_EXCEEDED');
        },
        { timeout: 30_000, interval: 200 },
      );
    });
  });

  it("resolveData: 'none' leaves payloads out of runs, steps and events", async () => {
    const run = await start(wf('addition'), [20, 22]);
    expect(await run.returnValue).toBe(42);
    const full = await e2e.world.runs.get(run.runId);
    expect(full.input).toBeInstanceOf(Uint8Array);
    expect(full.output).toBeInstanceOf(Uint8Array);
    const bare = await e2e.world.runs.get(run.runId, { resolveData: 'none' });
    expect(bare.input).toBeUndefined();
    expect(bare.output).toBeUndefined();
    const steps = await e2e.world.steps.list({ runId: run.runId, resolveData: 'none' });
    expect(steps.data.length).toBeGreaterThan(0);
    for (const s of steps.data) expect(s.output).toBeUndefined();
    const evs = await e2e.world.events.list({ runId: run.runId, resolveData: 'none', pagination: {} });
    for (const e of evs.data) {
      const data = (e as { eventData?: Record<string, unknown> }).eventData ?? {};
      expect(data.result).toBeUndefined();
      expect(data.input).toBeUndefined();
    }
  });
});

describe('beyond the checklist', () => {
  it('a long wait crosses several queue hops (2 s hop) and fires after its due time', async () => {
    const t0 = Date.now();
    const run = await start(wf('sleepThenStep'), ['5s']);
    expect(await run.returnValue).toBe(3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(5000);
  });

  it('a Promise.all fan-out of 8', async () => {
    const run = await start(wf('fanOut'), [8]);
    expect(await run.returnValue).toEqual([0, 2, 4, 6, 8, 10, 12, 14]);
  });

  it('a 1 MB step output round-trips through S3', async () => {
    const size = 1_000_000;
    const run = await start(wf('largeResult'), [size]);
    const out = (await run.returnValue) as Uint8Array;
    expect(out.byteLength).toBe(size);
    for (const i of [0, 1, 12345, size - 1]) expect(out[i]).toBe((i * 31 + 7) & 0xff);
  });

  it('20 concurrent runs all complete', async () => {
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => start(wf('addition'), [i, 1000])));
    const results = await Promise.all(runs.map((r) => r.returnValue));
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i + 1000));
  });

  for (const max of ['1', '3']) {
    it(`lazy inline start with WORKFLOW_MAX_INLINE_STEPS=${max}`, async () => {
      await withEnv({ WORKFLOW_MAX_INLINE_STEPS: max }, async () => {
        const run = await start(wf('sequentialSteps'), [1]);
        expect(await run.returnValue).toBe(11);
        const evs = await events(run.runId);
        expect(evs.filter((e) => e.eventType === 'step_created')).toHaveLength(3);
        expect(evs.filter((e) => e.eventType === 'step_completed')).toHaveLength(3);
      });
    });
  }

  it('WORKFLOW_OPTIMISTIC_INLINE_START=1', async () => {
    await withEnv({ WORKFLOW_OPTIMISTIC_INLINE_START: '1' }, async () => {
      const run = await start(wf('fanOut'), [4]);
      expect(await run.returnValue).toEqual([0, 2, 4, 6]);
      const evs = await events(run.runId);
      expect(evs.filter((e) => e.eventType === 'step_completed')).toHaveLength(4);
    });
  });
});
