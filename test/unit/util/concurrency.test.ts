/**
 * The one bounded-concurrency helper (src/util/concurrency.ts): the limit is never exceeded,
 * every item runs once and in order of taking, results keep input order, `stop` starts nothing
 * new, and the first error propagates after the calls in flight settle.
 */
import { describe, expect, it } from 'vitest';
import { forEachLimited, mapLimited } from '../../../src/util/concurrency.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe('mapLimited', () => {
  it('never runs more than `limit` calls at once, and uses all of them', async () => {
    let inFlight = 0;
    let peak = 0;
    const items = Array.from({ length: 50 }, (_, i) => i);
    const out = await mapLimited(items, 4, async (x) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await tick(x % 3);
      inFlight--;
      return x * 2;
    });
    expect(peak).toBe(4);
    expect(out).toEqual(items.map((x) => x * 2));
  });

  it('takes each item once, in order', async () => {
    const taken: number[] = [];
    await forEachLimited([0, 1, 2, 3, 4, 5, 6], 3, async (x, i) => {
      expect(i).toBe(x);
      taken.push(x);
      await tick(6 - x);
    });
    expect(taken).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('an empty list calls nothing; fewer items than the limit run all at once', async () => {
    let calls = 0;
    expect(await mapLimited([], 8, async () => ++calls)).toEqual([]);
    let inFlight = 0;
    let peak = 0;
    await forEachLimited([1, 2, 3], 8, async () => {
      calls++;
      peak = Math.max(peak, ++inFlight);
      await tick(1);
      inFlight--;
    });
    expect(calls).toBe(3);
    expect(peak).toBe(3);
  });

  it('stop() starts nothing new; the calls in flight finish', async () => {
    let stopped = false;
    const started: number[] = [];
    const finished: number[] = [];
    await forEachLimited(
      Array.from({ length: 20 }, (_, i) => i),
      2,
      async (x) => {
        started.push(x);
        if (x === 3) stopped = true;
        await tick(1);
        finished.push(x);
      },
      { stop: () => stopped },
    );
    expect(started).toEqual([0, 1, 2, 3]);
    expect(finished.sort((a, b) => a - b)).toEqual([0, 1, 2, 3]);
  });

  it('the first error propagates once the calls in flight settle, and nothing new starts', async () => {
    const started: number[] = [];
    let settled = 0;
    const run = mapLimited(
      Array.from({ length: 20 }, (_, i) => i),
      3,
      async (x) => {
        started.push(x);
        await tick(x === 1 ? 1 : 5);
        settled++;
        if (x === 1) throw new Error('first');
        if (x === 2) throw new Error('second');
        return x;
      },
    );
    await expect(run).rejects.toThrow('first');
    // 0, 1, 2 started; 1 failed first, after which only the worker that was free took one more.
    expect(started).toEqual([0, 1, 2]);
    expect(settled).toBe(3);
  });

  it('rejects a limit that is not a whole number >= 1', async () => {
    await expect(mapLimited([1], 0, async () => 1)).rejects.toThrow(/limit must be a whole number >= 1, got 0/);
    await expect(mapLimited([1], 1.5, async () => 1)).rejects.toThrow(RangeError);
  });
});
