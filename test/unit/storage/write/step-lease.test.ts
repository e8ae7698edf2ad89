/**
 * The step lease's pure parts (src/storage/write/step-lease.ts): the ttl follows the visibility a
 * consumer hides a copy for (half of it, at most 60 s), and the start decision takes another
 * delivery's lease over only once this process has seen it stand still for the holder's ttl on its
 * own clock, whatever the lease's end (written on the holder's clock) says.
 */
import { describe, expect, test } from 'vitest';
import { type Cond, Placeholders } from '../../../../src/aws/expression.js';
import { LeaseWatch } from '../../../../src/storage/memory/lease-watch.js';
import {
  type LeaseFields,
  MAX_STEP_LEASE_TTL_MS,
  startFence,
  stepLeaseTtlMs,
  watchPeriodMs,
} from '../../../../src/storage/write/step-lease.js';
import { condText } from '../../../helpers/expression-text.js';

/** The values a condition compares with. */
function valuesOf(c: Cond) {
  const x = new Placeholders();
  c(x);
  return x.values;
}

describe('stepLeaseTtlMs', () => {
  test('half the visibility, between 1 s and 60 s', () => {
    expect(stepLeaseTtlMs(30)).toBe(15_000); // the in-process poller's default visibility
    expect(stepLeaseTtlMs(900)).toBe(MAX_STEP_LEASE_TTL_MS);
    expect(MAX_STEP_LEASE_TTL_MS).toBe(60_000);
    expect(stepLeaseTtlMs(10)).toBe(5000);
    expect(stepLeaseTtlMs(1)).toBe(1000);
  });
});

describe('watchPeriodMs', () => {
  test("the holder's ttl (at least 1 s); an older build's lease, which names none, the longest ttl", () => {
    expect(watchPeriodMs({ leaseTtl: 15_000 })).toBe(15_000);
    expect(watchPeriodMs({ leaseTtl: 120_000 })).toBe(120_000); // a newer build's longer lease is honoured
    expect(watchPeriodMs({ leaseTtl: 10 })).toBe(1000);
    expect(watchPeriodMs({})).toBe(MAX_STEP_LEASE_TTL_MS);
  });
});

describe('startFence', () => {
  const mine = { token: 'mine', ttlMs: 10_000, started: new Map() };
  /** A watch whose clock the test moves. */
  const watched = () => {
    const clock = { t: 0 };
    return { clock, watch: new LeaseWatch(() => clock.t) };
  };
  const foreign = (over: Partial<LeaseFields> = {}): LeaseFields => ({
    runId: 'r',
    stepId: 's',
    leaseToken: 'other',
    leaseBeat: 3,
    leaseTtl: 15_000,
    leaseUntil: 1_000,
    ...over,
  });
  const refusal = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as Error & { retryAfter?: number };
    }
    throw new Error('expected a refusal');
  };

  test('no lease, or this delivery’s own: allowed at once (the fence: no lease end, or our token)', () => {
    const { watch } = watched();
    const none = startFence(mine, { runId: 'r', stepId: 's' }, true, watch);
    expect(condText(none)).toBe('(attribute_not_exists(leaseUntil)) OR (leaseToken = "mine")');
    expect(() => startFence(mine, foreign({ leaseToken: 'mine' }), false, watch)).not.toThrow();
  });

  test('another delivery’s lease: refused until this process saw the same mark for its ttl, then fenced on exactly that mark', () => {
    const { clock, watch } = watched();
    // Its lease end says it expired long ago (a holder whose clock is behind): irrelevant.
    const s = foreign({ leaseUntil: -1e12 });
    const first = refusal(() => startFence(mine, s, true, watch));
    expect(first.name).toBe('TooEarlyError');
    expect(first.retryAfter).toBe(15);
    clock.t = 14_000;
    expect(refusal(() => startFence(mine, s, true, watch)).retryAfter).toBe(1);
    clock.t = 15_000;
    const fence = startFence(mine, s, true, watch);
    // No lease end, ours, or exactly the mark watched (token, end, beat).
    const values = Object.values(valuesOf(fence));
    expect(values).toEqual(expect.arrayContaining([{ S: 'mine' }, { S: 'other' }, { N: String(-1e12) }, { N: '3' }]));
  });

  test('a heartbeat (the count, or an older build’s moved end) restarts the watch; so does another token', () => {
    const { clock, watch } = watched();
    refusal(() => startFence(mine, foreign(), true, watch));
    clock.t = 10_000;
    refusal(() => startFence(mine, foreign({ leaseBeat: 4 }), true, watch));
    clock.t = 20_000; // 20 s after the first sight, but only 10 s after the last heartbeat
    expect(refusal(() => startFence(mine, foreign({ leaseBeat: 4 }), true, watch)).retryAfter).toBe(5);
    // An older holder: no count, no ttl (watched for the longest ttl); its heartbeat moves the end.
    const old = foreign({ leaseBeat: undefined, leaseTtl: undefined, leaseUntil: 5_000 });
    refusal(() => startFence(mine, old, true, watch));
    clock.t = 60_000;
    refusal(() => startFence(mine, { ...old, leaseUntil: 9_000 }, true, watch));
    clock.t = 119_999;
    expect(refusal(() => startFence(mine, { ...old, leaseUntil: 9_000 }, true, watch)).retryAfter).toBe(1);
    clock.t = 120_000;
    expect(() => startFence(mine, { ...old, leaseUntil: 9_000 }, true, watch)).not.toThrow();
  });

  test('a remembered item is never a sight: refused, and not recorded', () => {
    const { clock, watch } = watched();
    expect(refusal(() => startFence(mine, foreign(), false, watch)).retryAfter).toBe(15);
    clock.t = 15_000;
    // Had the remembered read counted, this fresh one would take the lease over.
    expect(refusal(() => startFence(mine, foreign(), true, watch)).retryAfter).toBe(15);
    expect(watch.size).toBe(1);
  });
});
