/**
 * Unit tests for src/streams/pacing.ts: when the write session may acknowledge a write of core's
 * stream writer. Pure bookkeeping over a clock the test supplies (no timers, no wall time).
 */
import { describe, expect, it } from 'vitest';
import { BurstPacer } from '../../../src/streams/pacing.js';

describe('BurstPacer', () => {
  it('acknowledges the first write and a write after quiet at once', () => {
    const p = new BurstPacer(80);
    expect(p.arrive(1000)).toBe(1000); // first write of the stream
    expect(p.arrive(1160)).toBe(1160); // 160 ms = 2 windows of quiet: a lone chunk again
    expect(p.arrive(5000)).toBe(5000);
  });

  it('in a burst, releases each acknowledgement one window after the write arrived', () => {
    const p = new BurstPacer(80);
    expect(p.arrive(0)).toBe(0); // the burst's first chunk: at once
    expect(p.arrive(20)).toBe(100); // the next one 20 ms later: paced
    // Core sends the next group as soon as the previous write is acknowledged.
    expect(p.arrive(100)).toBe(180);
    expect(p.arrive(180)).toBe(260);
    // A gap shorter than two windows keeps the burst; at two windows it is over.
    expect(p.arrive(339)).toBe(419); // 159 ms after the previous write
    expect(p.arrive(499)).toBe(499); // 160 ms after it: quiet
    expect(p.arrive(519)).toBe(599); // and the next chunk starts a burst again
  });

  it('never paces with a window of 0', () => {
    const p = new BurstPacer(0);
    for (const t of [0, 1, 2, 20, 21]) expect(p.arrive(t)).toBe(t);
  });
});
