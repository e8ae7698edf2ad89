/** src/consumer/delivery/breaker.ts with a fake clock: when it opens, probes, closes, and what it logs. */
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../src/consumer/delivery/breaker.js';

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
  it('opens after outage failures of three distinct messages in a row, logs once, and pauses until the cool-down', () => {
    const { b, lines, advance } = make();
    expect(b.failed('m1', 'HTTP 503')).toBe(false);
    expect(b.failed('m2', 'HTTP 503')).toBe(false);
    expect(b.failed('m3', 'HTTP 503')).toBe(true);
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

  it('one message (or two) failing over and over never opens it, whatever the failure', () => {
    for (const ambiguous of [true, false]) {
      const { b } = make();
      for (let i = 0; i < 10; i++) expect(b.failed('same', 'HTTP 502', ambiguous)).toBe(false);
      for (let i = 0; i < 10; i++) expect(b.failed('other', 'HTTP 502', ambiguous)).toBe(false);
      expect(b.isOpen).toBe(false);
      expect(b.failed('third', 'HTTP 502', ambiguous)).toBe(true);
    }
  });

  it('a probe that ends neither way frees the slot at once', () => {
    const { b, advance } = make();
    for (const m of ['a', 'b', 'c']) b.failed(m, 'ECONNREFUSED');
    advance(5000);
    expect(b.tryAcquire()).toBe(true);
    expect(b.tryAcquire()).toBe(false);
    b.neutral();
    expect(b.tryAcquire()).toBe(true);
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
