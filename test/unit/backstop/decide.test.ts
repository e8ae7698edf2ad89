/**
 * The backstop's decision table (src/backstop/decide.ts), pure: each case, the backoff, leases as
 * the checker observed them (live, or lapsed and revoked), and clock skew between the checker and
 * the writers of retry and resume times.
 */
import { describe, expect, it } from 'vitest';
import { type CheckInput, decide, IDLE_CHECK_MS, MAX_BACKOFF_MS } from '../../../src/backstop/decide.js';

const B = 60_000;
const NOW = 1_800_000_000_000;

function input(over: Partial<CheckInput> = {}): CheckInput {
  return {
    run: { status: 'running' },
    tail: 7,
    unacked: [],
    steps: [],
    waits: [],
    due: { seenSlot: 7, wakes: 0 },
    now: NOW,
    quietMs: B,
    ...over,
  };
}

describe('decide', () => {
  it('deletes the item of a run that is gone or terminal', () => {
    expect(decide(input({ run: undefined })).kind).toBe('delete');
    for (const status of ['completed', 'failed', 'cancelled'])
      expect(decide(input({ run: { status } })).kind).toBe('delete');
  });

  it('a log that moved since the last check is active: no wake, look again in B, backoff reset', () => {
    const d = decide(
      input({ tail: 9, due: { seenSlot: 7, wakes: 3 }, unacked: [{ slot: 9, type: 'step_completed' }] }),
    );
    expect(d).toEqual({ kind: 'later', next: NOW + B, wakes: 0, why: 'active' });
  });

  it('quiet and owing a replay (an event after ackedSlot): wakes', () => {
    for (const type of ['run_created', 'step_completed', 'step_failed', 'wait_completed', 'hook_received']) {
      const d = decide(input({ unacked: [{ slot: 7, type }] }));
      expect(d.kind, type).toBe('wake');
    }
  });

  it('quiet, the last replay acknowledged, idling on a hook: never woken, checked in 6 h', () => {
    const d = decide(input({ unacked: [] }));
    expect(d).toEqual({ kind: 'later', next: NOW + IDLE_CHECK_MS, wakes: 0, why: 'idle' });
    // Events after the ack that owe nothing (the hook it waits on) do not wake it either.
    expect(decide(input({ unacked: [{ slot: 7, type: 'hook_created' }] })).kind).toBe('later');
  });

  it('a pending step with no lease, or a running one whose lease the checker saw lapse: wakes, naming the stranded steps', () => {
    const pending = decide(input({ steps: [{ stepId: 's1', stepName: 'a', status: 'pending' }] }));
    expect(pending).toMatchObject({ kind: 'wake', wakes: 1, stranded: [{ stepId: 's1', stepName: 'a' }] });
    const lapsed = decide(input({ steps: [{ stepId: 's2', stepName: 'b', status: 'running', lease: 'lapsed' }] }));
    expect(lapsed).toMatchObject({ kind: 'wake', stranded: [{ stepId: 's2', stepName: 'b' }] });
    expect(lapsed.kind === 'wake' && lapsed.why).toMatch(/no heartbeat for its ttl and was revoked/);
    // A running step with no lease at all (started outside a delivery) is stranded too.
    const bare = decide(input({ steps: [{ stepId: 's4', stepName: 'd', status: 'running' }] }));
    expect(bare).toMatchObject({ kind: 'wake', stranded: [{ stepId: 's4', stepName: 'd' }] });
    // Finished steps are never stranded.
    expect(decide(input({ steps: [{ stepId: 's3', stepName: 'c', status: 'completed' }] })).kind).toBe('later');
  });

  it('a step whose holder was seen to heartbeat is running: look again in B, whatever the clocks; a retry in the future: look when it comes', () => {
    const leased = decide(input({ steps: [{ stepId: 's', stepName: 'a', status: 'running', lease: 'live' }] }));
    expect(leased).toMatchObject({ kind: 'later', next: NOW + B, why: 'a step is running' });
    const retry = decide(
      input({ steps: [{ stepId: 's', stepName: 'a', status: 'pending', retryAfter: NOW + 600_000 }] }),
    );
    expect(retry).toMatchObject({ kind: 'later', next: NOW + 600_000 + B });
  });

  it('a waiting wait: woken once its time has come, looked at then (+ B) before', () => {
    expect(decide(input({ waits: [{ status: 'waiting', resumeAt: NOW - 1 }] })).kind).toBe('wake');
    expect(decide(input({ waits: [{ status: 'waiting', resumeAt: NOW + 1000 }] }))).toMatchObject({
      kind: 'later',
      next: NOW + 1000 + B,
    });
    expect(decide(input({ waits: [{ status: 'completed', resumeAt: NOW - 1 }] })).kind).toBe('later');
  });

  it('repeated wakes back off: B, 2B, 4B, ... at most 15 min', () => {
    const owed = { unacked: [{ slot: 7, type: 'hook_received' }] };
    const nexts = [0, 1, 2, 3, 10].map((wakes) => {
      const d = decide(input({ ...owed, due: { seenSlot: 7, wakes } }));
      expect(d.kind).toBe('wake');
      return d.kind === 'wake' ? [d.wakes, d.next - NOW] : [];
    });
    expect(nexts).toEqual([
      [1, B],
      [2, 2 * B],
      [3, 4 * B],
      [4, 8 * B],
      [11, MAX_BACKOFF_MS],
    ]);
  });

  it('clock skew (+/-10 min) moves when a wake goes out, never whether: an owing run is always woken', () => {
    const SKEW = 10 * 60_000;
    for (const skew of [-SKEW, -B, 0, B, SKEW]) {
      // A retry time and a wait's resume time, written on a clock `skew` from the checker's.
      const written = NOW + skew;
      const cases: Array<Partial<CheckInput>> = [{ waits: [{ status: 'waiting', resumeAt: written + 5_000 }] }];
      for (const c of cases) {
        // Run checks as the item says: each at the `next` the previous one chose.
        let now = NOW;
        let woken: number | undefined;
        for (let i = 0; i < 100 && woken === undefined; i++) {
          const d = decide(input({ ...c, now }));
          expect(d.kind).not.toBe('delete');
          if (d.kind === 'wake') woken = now;
          else if (d.kind === 'later') now = d.next;
        }
        expect(woken, `skew ${skew}`).toBeDefined();
        // Never later than the skew, the retry time and two checks past it.
        expect((woken as number) - NOW).toBeLessThanOrEqual(Math.max(0, skew) + 30_000 + 2 * B);
      }
    }
  });
});
