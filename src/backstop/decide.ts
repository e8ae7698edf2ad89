/**
 * What a backstop check does with a run: pure, a table of cases (docs/operations.md, "Liveness
 * backstop"). The check has won the fence (./check.ts) and read the run, its log since the last
 * acknowledged replay, its steps and its waits.
 *
 * 1. The run is gone or terminal: delete its DUE item.
 * 2. The log moved since the last check (`tail != seenSlot`): the run is active; look again in B.
 *    This is how "quiet for B" is known without comparing clocks: the same tail two checks apart.
 * 3. Quiet, and it owes work: a non-terminal step without a live step lease whose retry time has
 *    come, a waiting wait whose time has come, or an event after `ackedSlot` that a replay must see
 *    ({@link REPLAY_OWED}: a step or wait finished, a hook received, the run created or started).
 *    Wake it; repeats back off (B, 2B, 4B, ... at most 15 min) until the log moves.
 * 4. Otherwise it is idle: look again when its earliest wait or retry comes (+ B), in B while a
 *    step lease is live, else in 6 h.
 *
 * A step's lease is as the checker observed it (./check.ts, src/storage/write/step-lease.ts
 * `observeStepLeases`): `live` when its holder was seen to heartbeat, `lapsed` when the checker saw
 * its mark unchanged for the holder's ttl on its own monotonic clock and revoked it. No lease end
 * written by another process is compared with a clock, so skew never reopens a live step.
 *
 * Clocks: `now` is the checker's clock; retry and resume times are their writers'. They decide only
 * when a wake goes out (a retry time from a clock ahead looks due later), never whether a step with
 * a live lease is stranded: every case but 1 leads to another check, and every time compared is
 * fixed while `now` grows.
 */
import { eventTypesWhere } from '../schema/event-kinds.js';
import { isTerminalRun, isTerminalStep } from '../storage/index.js';

/** Event types whose replay the workflow owes: something it waits for has happened (`replayOwed`). */
const REPLAY_OWED = eventTypesWhere((k) => k.replayOwed);

export const MAX_BACKOFF_MS = 15 * 60_000;
export const IDLE_CHECK_MS = 6 * 3600_000;

export interface CheckInput {
  /** The run view; undefined when the run is gone. */
  run?: { status: string };
  /** The last slot of the log. */
  tail: number;
  /** Events after the DUE item's `ackedSlot` (slot and type; at most a page). */
  unacked: ReadonlyArray<{ slot: number; type: string }>;
  /** Its steps; `lease` as observed (absent: the step has no lease). */
  steps: ReadonlyArray<{
    stepId: string;
    stepName: string;
    status: string;
    lease?: 'live' | 'lapsed';
    retryAfter?: number;
  }>;
  waits: ReadonlyArray<{ status: string; resumeAt?: number }>;
  due: { seenSlot?: number; wakes: number };
  now: number;
  /** B (ms). */
  quietMs: number;
}

export type Decision =
  | { kind: 'delete'; why: string }
  | { kind: 'later'; next: number; wakes: number; why: string }
  | { kind: 'wake'; next: number; wakes: number; why: string; stranded: Array<{ stepId: string; stepName: string }> };

export function decide(c: CheckInput): Decision {
  const { now, quietMs: B } = c;
  if (!c.run) return { kind: 'delete', why: 'run gone' };
  if (isTerminalRun(c.run.status)) return { kind: 'delete', why: `run ${c.run.status}` };
  if (c.due.seenSlot !== c.tail) return { kind: 'later', next: now + B, wakes: 0, why: 'active' };

  const open = c.steps.filter((s) => !isTerminalStep(s.status));
  const leased = open.filter((s) => s.lease === 'live');
  const stranded = open.filter((s) => s.lease !== 'live' && !(s.retryAfter !== undefined && s.retryAfter > now));
  const elapsed = c.waits.filter((w) => w.status === 'waiting' && w.resumeAt !== undefined && w.resumeAt <= now);
  const owed = c.unacked.filter((e) => REPLAY_OWED.has(e.type));
  if (stranded.length > 0 || elapsed.length > 0 || owed.length > 0) {
    const wakes = c.due.wakes + 1;
    const why =
      stranded.length > 0
        ? stranded[0].lease === 'lapsed'
          ? `step ${stranded[0].stepId} (${stranded[0].status}): its lease saw no heartbeat for its ttl and was revoked`
          : `step ${stranded[0].stepId} (${stranded[0].status}) has no live lease`
        : elapsed.length > 0
          ? 'a wait has elapsed'
          : `${owed[owed.length - 1].type} at slot ${owed[owed.length - 1].slot} not replayed`;
    return {
      kind: 'wake',
      next: now + Math.min(B * 2 ** (wakes - 1), MAX_BACKOFF_MS),
      wakes,
      why,
      stranded: stranded.map((s) => ({ stepId: s.stepId, stepName: s.stepName })),
    };
  }
  if (leased.length > 0) return { kind: 'later', next: now + B, wakes: c.due.wakes, why: 'a step is running' };
  const times = [
    ...c.waits.filter((w) => w.status === 'waiting' && w.resumeAt !== undefined).map((w) => w.resumeAt as number),
    ...open.filter((s) => s.retryAfter !== undefined).map((s) => s.retryAfter as number),
  ];
  const next = times.length > 0 ? Math.min(Math.min(...times) + B, now + IDLE_CHECK_MS) : now + IDLE_CHECK_MS;
  return { kind: 'later', next: Math.max(next, now + B), wakes: c.due.wakes, why: 'idle' };
}
