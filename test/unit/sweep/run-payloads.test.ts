/**
 * Which run prefixes the orphan sweep may touch (src/sweep/run-payloads.ts `runState`,
 * `sweepable`): never an active run, a terminal run only after the grace, a run with no item only
 * once no run_created can commit under its id (24 h after the id was minted, plus the grace).
 */
import { monotonicFactory } from 'ulid';
import { describe, expect, it } from 'vitest';
import { RUN_CREATE_WINDOW_MS, runState, sweepable } from '../../../src/sweep/run-payloads.js';

const HOUR = 3_600_000;
const t0 = Date.UTC(2026, 11, 1, 12);
const runId = `wrun_${monotonicFactory()(t0)}`;
const run = (status: string, extra: Record<string, { N: string }> = {}) => ({
  PK: { S: `RUN#${runId}` },
  SK: { S: 'RUN#meta' },
  status: { S: status },
  ...extra,
});

describe('orphan sweep: which runs', () => {
  it('never an active run', () => {
    for (const s of ['pending', 'running']) {
      const st = runState(runId, run(s), t0 + 1000 * HOUR);
      expect(st.kind).toBe('active');
      expect(sweepable(st, t0 + 1000 * HOUR, HOUR)).toBe(false);
    }
  });

  it('a terminal run once it ended more than the grace ago', () => {
    for (const s of ['completed', 'failed', 'cancelled']) {
      const st = runState(runId, run(s, { completedAt: { N: String(t0) } }), t0);
      expect(st).toEqual({ kind: 'terminal', endedAt: t0, swept: false });
      expect(sweepable(st, t0 + HOUR - 1, HOUR)).toBe(false);
      expect(sweepable(st, t0 + HOUR, HOUR)).toBe(true);
    }
  });

  it('no run item (or one past its TTL): only after the run-id window plus the grace', () => {
    expect(RUN_CREATE_WINDOW_MS).toBe(24 * HOUR);
    for (const item of [undefined, run('completed', { ttl: { N: String(t0 / 1000 + 60) } })]) {
      const st = runState(runId, item, t0 + 2 * HOUR);
      expect(st.kind).toBe('absent');
      expect(sweepable(st, t0 + 25 * HOUR - 1, HOUR)).toBe(false);
      expect(sweepable(st, t0 + 25 * HOUR, HOUR)).toBe(true);
    }
  });

  it('prefixes that are not run ids are not this World’s', () => {
    for (const id of ['not-a-run', 'wrun_', 'wrun_xyz', '']) expect(runState(id, undefined, t0).kind).toBe('foreign');
  });
});
