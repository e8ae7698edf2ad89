/**
 * The step lease's pure parts (src/storage/write/step-lease.ts): the ttl follows the visibility a
 * consumer hides a copy for (half of it, at most 60 s), and the start decision refuses only a
 * live lease of another delivery.
 */
import { describe, expect, test } from 'vitest';
import {
  assertNoForeignLease,
  MAX_STEP_LEASE_TTL_MS,
  stepLeaseTtlMs,
} from '../../../../src/storage/write/step-lease.js';

describe('stepLeaseTtlMs', () => {
  test('half the visibility, between 1 s and 60 s', () => {
    expect(stepLeaseTtlMs(30)).toBe(15_000); // the in-process poller's default visibility
    expect(stepLeaseTtlMs(900)).toBe(MAX_STEP_LEASE_TTL_MS);
    expect(MAX_STEP_LEASE_TTL_MS).toBe(60_000);
    expect(stepLeaseTtlMs(10)).toBe(5000);
    expect(stepLeaseTtlMs(1)).toBe(1000);
  });
});

describe('assertNoForeignLease', () => {
  const mine = { token: 'mine', ttlMs: 10_000, started: new Map() };
  const now = 1_000_000;
  test('no lease, an expired lease, or this delivery’s own: allowed', () => {
    expect(() => assertNoForeignLease(mine, { stepId: 's' }, now)).not.toThrow();
    expect(() =>
      assertNoForeignLease(mine, { stepId: 's', leaseToken: 'other', leaseUntil: now - 1 }, now),
    ).not.toThrow();
    expect(() =>
      assertNoForeignLease(mine, { stepId: 's', leaseToken: 'mine', leaseUntil: now + 5000 }, now),
    ).not.toThrow();
  });
  test('another delivery’s live lease: TooEarlyError with the seconds until it expires', () => {
    let err: (Error & { retryAfter?: number }) | undefined;
    try {
      assertNoForeignLease(mine, { stepId: 's', leaseToken: 'other', leaseUntil: now + 4200 }, now);
    } catch (e) {
      err = e as Error & { retryAfter?: number };
    }
    expect(err?.name).toBe('TooEarlyError');
    expect(err?.retryAfter).toBe(5);
    // Expiring right now is still live (the write's fence is `leaseUntil < now`): at least 1 s.
    expect(() => assertNoForeignLease(mine, { stepId: 's', leaseToken: 'other', leaseUntil: now }, now)).toThrow(
      /running in another delivery/,
    );
  });
});
