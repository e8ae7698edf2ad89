/**
 * The lease watch (src/storage/memory/lease-watch.ts): how long this process has seen a lease's
 * mark unchanged, on its own clock; any change restarts it; bounded.
 */
import { describe, expect, test } from 'vitest';
import { LeaseWatch, sameMark } from '../../../../src/storage/memory/lease-watch.js';

describe('LeaseWatch', () => {
  test('0 at the first sight, then the time since it; a changed token, count or end starts over', () => {
    let t = 100;
    const w = new LeaseWatch(() => t);
    const m = { token: 'a', beat: 1, until: 5 };
    expect(w.observe('k', m)).toBe(0);
    t = 400;
    expect(w.observe('k', { ...m })).toBe(300);
    for (const changed of [
      { ...m, token: 'b' },
      { ...m, beat: 2 },
      { ...m, until: 6 },
      { token: 'a', beat: 1 },
    ]) {
      t += 1000;
      expect(w.observe('k', changed)).toBe(0);
      expect(w.observe('k', m)).toBe(0);
    }
    expect(sameMark({ token: 'a' }, { token: 'a', beat: undefined, until: undefined })).toBe(true);
  });

  test('the marks of different leases are watched apart; forget starts a watch over', () => {
    let t = 0;
    const w = new LeaseWatch(() => t);
    w.observe('x', { token: 'a', beat: 0 });
    t = 50;
    w.observe('y', { token: 'a', beat: 0 });
    t = 100;
    expect(w.observe('x', { token: 'a', beat: 0 })).toBe(100);
    expect(w.observe('y', { token: 'a', beat: 0 })).toBe(50);
    w.forget('x');
    expect(w.observe('x', { token: 'a', beat: 0 })).toBe(0);
  });

  test('bounded: past its capacity the least recently observed lease is forgotten', () => {
    let t = 0;
    const w = new LeaseWatch(() => t, 2);
    w.observe('a', { token: 'a' });
    w.observe('b', { token: 'b' });
    t = 10;
    w.observe('a', { token: 'a' }); // a is now the most recent
    w.observe('c', { token: 'c' }); // b goes
    expect(w.size).toBe(2);
    t = 20;
    expect(w.observe('a', { token: 'a' })).toBe(20);
    expect(w.observe('b', { token: 'b' })).toBe(0);
  });

  test('the default clock is monotonic (performance.now), not the wall clock', () => {
    const w = new LeaseWatch();
    w.observe('k', { token: 't' });
    const realNow = Date.now;
    Date.now = () => realNow() + 3_600_000; // the wall clock jumps an hour
    try {
      expect(w.observe('k', { token: 't' })).toBeLessThan(1000);
    } finally {
      Date.now = realNow;
    }
  });
});
