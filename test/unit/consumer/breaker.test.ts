/** src/consumer/breaker.ts with a fake clock: when it opens, probes, closes, and what it logs. */
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../src/consumer/breaker.js';

function make() {
  const lines: string[] = [];
  let now = 0;
  const log = {
    info: (m: string) => lines.push(`INFO ${m}`),
    warn: (m: string) => lines.push(`WARN ${m}`),
    error: (m: string) => lines.push(`ERROR ${m}`),
  };
  const b = new CircuitBreaker(log, 'the flow route', {
    threshold: 3,
    cooldownMs: 5000,
    maxCooldownMs: 20_000,
    now: () => now,
  });
  return { b, lines, advance: (ms: number) => (now += ms) };
}

describe('CircuitBreaker', () => {
  it('opens after three outage failures in a row, logs once, and pauses until the cool-down', () => {
    const { b, lines, advance } = make();
    expect(b.failed('m1', 'HTTP 503')).toBe(false);
    expect(b.failed('m1', 'HTTP 503')).toBe(false);
    expect(b.failed('m1', 'HTTP 503')).toBe(true);
    expect(b.isOpen).toBe(true);
    expect(lines.filter((l) => l.includes('circuit open'))).toHaveLength(1);
    expect(b.tryAcquire()).toBe(false);
    expect(b.waitMs()).toBe(5000);
    advance(5000);
    expect(b.tryAcquire()).toBe(true); // the probe
    expect(b.tryAcquire()).toBe(false); // one at a time
    b.succeeded();
    expect(b.isOpen).toBe(false);
    expect(lines.filter((l) => l.includes('circuit closed'))).toHaveLength(1);
  });

  it('a failed probe reopens with a doubled cool-down, capped', () => {
    const { b, advance } = make();
    for (let i = 0; i < 3; i++) b.failed(`m${i}`, 'ECONNREFUSED');
    for (const want of [10, 20, 20]) {
      advance(60_000);
      expect(b.tryAcquire()).toBe(true);
      expect(b.failed('p', 'ECONNREFUSED')).toBe(true);
      expect(b.cooldownSeconds).toBe(want);
    }
  });

  it('a plain 500 from one message over and over does not open it (poison goes to the DLQ)', () => {
    const { b } = make();
    for (let i = 0; i < 10; i++) expect(b.failed('same', 'HTTP 500', true)).toBe(false);
    expect(b.isOpen).toBe(false);
    expect(b.failed('other', 'HTTP 500', true)).toBe(true);
  });

  it('a success resets the streak', () => {
    const { b } = make();
    b.failed('a', 'x');
    b.failed('b', 'x');
    b.succeeded();
    expect(b.failed('c', 'x')).toBe(false);
    expect(b.isOpen).toBe(false);
  });
});
