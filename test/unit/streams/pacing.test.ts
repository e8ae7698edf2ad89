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

  it('from the third write of a burst, releases each acknowledgement one window after the write arrived', () => {
    const p = new BurstPacer(80);
    expect(p.arrive(0)).toBe(0); // the burst's first chunk: at once
    expect(p.arrive(20)).toBe(20); // its second write: at once (a short reply is not paced)
    expect(p.arrive(40)).toBe(120); // the third: paced
    // Core sends the next group as soon as the previous write is acknowledged.
    expect(p.arrive(120)).toBe(200);
    expect(p.arrive(200)).toBe(280);
    // A gap shorter than two windows keeps the burst; at two windows it is over.
    expect(p.arrive(359)).toBe(439); // 159 ms after the previous write
    expect(p.arrive(519)).toBe(519); // 160 ms after it: quiet
    expect(p.arrive(539)).toBe(539); // the next burst's second write: at once
    expect(p.arrive(559)).toBe(639); // its third: paced again
  });

  it('acknowledges a short reply (one chunk, then the rest as one group) without a window', () => {
    const p = new BurstPacer(60);
    // Five chunks written at once: core sends the first alone, then the four that accumulated
    // while it was in flight. Both acknowledgements are released as soon as they are durable,
    // so the step's drain (and its step_completed) does not wait for the window.
    expect(p.arrive(1000)).toBe(1000);
    expect(p.arrive(1004)).toBe(1004);
  });

  it('never paces with a window of 0', () => {
    const p = new BurstPacer(0);
    for (const t of [0, 1, 2, 20, 21]) expect(p.arrive(t)).toBe(t);
  });
});
