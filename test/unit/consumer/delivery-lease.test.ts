/**
 * The delivery lease's ttl follows the visibility in force (src/consumer/delivery-lease.ts): half
 * of it, so an abandoned delivery's lease is gone before SQS shows its copy again, at most 60 s.
 */
import { describe, expect, test } from 'vitest';
import { leaseTtlMs, MAX_LEASE_TTL_MS } from '../../../src/consumer/delivery-lease.js';

describe('leaseTtlMs', () => {
  test('half the visibility in force, at most 60 s, at least 1 s', () => {
    expect(leaseTtlMs(30)).toBe(15_000); // the in-process poller's default visibility
    expect(leaseTtlMs(900)).toBe(MAX_LEASE_TTL_MS); // Lambda on the queue's default visibility
    expect(MAX_LEASE_TTL_MS).toBe(60_000);
    expect(leaseTtlMs(20)).toBe(10_000);
    expect(leaseTtlMs(1)).toBe(1000);
  });
});
