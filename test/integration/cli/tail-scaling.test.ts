/**
 * `tail` scales with the run: the reducer never copies what it has folded (counted as element
 * reads of the state's lists, not timed), and a follow round reads only what changed (counted
 * World calls against the real World on the emulators).
 */
import type { World } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followRun, MAX_STEP_READS, type TailWorld } from '../../../src/cli/tail-follow.js';
import type { ChunkRow, EventRow } from '../../../src/cli/tail-rows.js';
import { emptyTailState, reduceTail } from '../../../src/cli/tail-view.js';
import { completeRun, createRun, type OpsFixture, opsFixture, startRun, step } from '../../helpers/runs.js';

/** An array that counts reads of its elements (what a copy or a spread does n times). */
function countingArray<T>(): { array: T[]; reads: () => number } {
  let reads = 0;
  const array = new Proxy([] as T[], {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && /^\d+$/.test(prop)) reads++;
      return Reflect.get(target, prop, receiver);
    },
  });
  return { array, reads: () => reads };
}

describe('tail reducer', () => {
  it('folds n records with zero element copies: events and stream lines are appended in place', () => {
    const events = countingArray<EventRow>();
    let state = { ...emptyTailState(), events: events.array };
    const at = new Date(0).toISOString();
    for (let i = 0; i < 20_000; i++) {
      state = reduceTail(state, {
        kind: 'event',
        runId: 'r',
        slot: i + 1,
        eventId: `e${i}`,
        eventType: 'attr_set',
        createdAt: at,
        preview: '',
      });
    }
    state = reduceTail(state, { kind: 'stream', runId: 'r', stream: 's', done: false });
    const stream = state.streams.get('s');
    for (let i = 0; i < 20_000; i++) {
      const chunk: ChunkRow = { kind: 'chunk', runId: 'r', stream: 's', index: i, bytes: 2, text: `t${i}` };
      state = reduceTail(state, chunk);
    }
    state = reduceTail(state, { kind: 'stream', runId: 'r', stream: 's', done: true });
    expect(events.reads()).toBe(0);
    expect(state.events).toBe(events.array);
    expect(state.events).toHaveLength(20_000);
    // The same stream state object throughout: its lists were never rebuilt.
    expect(state.streams.get('s')).toBe(stream);
    expect(stream).toMatchObject({ done: true });
    expect(stream?.chunks).toHaveLength(20_000);
    expect(stream?.lines.at(-1)).toBe('t19999');
  });
});

describe('tail follow rounds', () => {
  let f: OpsFixture;
  beforeAll(async () => {
    f = await opsFixture({}, 'tscale');
  });
  afterAll(async () => {
    await f?.close();
  });

  it('lists the steps once, then reads only changed steps (at most MAX_STEP_READS per round)', async () => {
    const runId = await createRun(f.world, 'wf-many');
    await startRun(f.world, runId);
    for (let i = 0; i < 40; i++) await step(f.world, runId, `step_a${String(i).padStart(3, '0')}`, 'add', i);

    const calls: Record<string, number> = {};
    const count = <T extends object>(name: string, obj: T): T =>
      new Proxy(obj, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== 'function') return v;
          return (...args: unknown[]) => {
            const key = `${name}.${String(prop)}`;
            calls[key] = (calls[key] ?? 0) + 1;
            return v.apply(target, args);
          };
        },
      });
    const w = f.world as unknown as World;
    const world: TailWorld = {
      runs: count('runs', w.runs),
      events: count('events', w.events),
      steps: count('steps', w.steps),
      streams: count('streams', w.streams),
    };

    const ac = new AbortController();
    const seen: string[] = [];
    const follow = (async () => {
      for await (const rec of followRun(world, runId, { follow: true, intervalMs: 20, signal: ac.signal })) {
        if (rec.kind === 'step') seen.push(`${rec.stepId}:${rec.status}`);
      }
    })();
    const waitFor = async (pred: () => boolean) => {
      while (!pred()) await new Promise((r) => setTimeout(r, 20));
    };
    await waitFor(() => seen.length >= 40);
    expect(calls['steps.list']).toBe(1);
    const getsBefore = calls['steps.get'] ?? 0;
    expect(getsBefore).toBe(0);

    // 30 more steps land in one go: read back with gets only, MAX_STEP_READS per round at most.
    for (let i = 40; i < 70; i++) await step(f.world, runId, `step_a${String(i).padStart(3, '0')}`, 'add', i);
    await completeRun(f.world, runId);
    await follow;
    ac.abort();
    expect(calls['steps.list']).toBe(1);
    // Each new step is read once per round in which its events were new (1 to 3 times).
    expect(calls['steps.get']).toBeGreaterThanOrEqual(30);
    expect(calls['steps.get']).toBeLessThanOrEqual(90);
    expect(new Set(seen.filter((s) => s.endsWith(':completed'))).size).toBe(70);
    // Every round reads the run once and at most MAX_STEP_READS steps: the per-round cost is bounded.
    expect(calls['steps.get']).toBeLessThanOrEqual(MAX_STEP_READS * (calls['runs.get'] ?? 0));
    // One stream listing per round, never a re-read of every step.
    expect(calls['streams.list']).toBe(calls['runs.get']);
  });
});
