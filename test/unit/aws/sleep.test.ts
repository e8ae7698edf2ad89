/** src/aws/sleep.ts: the one sleep helper. */
import { describe, expect, it } from 'vitest';
import { sleep } from '../../../src/aws/sleep.js';

describe('aws/sleep', () => {
  it('resolves early (never rejects) when the signal aborts, and at once when already aborted', async () => {
    const c = new AbortController();
    const p = sleep(60_000, c.signal);
    c.abort();
    await expect(p).resolves.toBeUndefined();
    await expect(sleep(60_000, c.signal)).resolves.toBeUndefined();
  });
});
