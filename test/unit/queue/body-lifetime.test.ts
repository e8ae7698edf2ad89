/**
 * The lifetime arithmetic of offloaded queue bodies (src/queue/body-lifetime.ts): which key a
 * body gets for how long it is needed, and when a re-send must copy it to a fresh key.
 */
import { describe, expect, it } from 'vitest';
import { bodyAliveUntil, bodyKey, bodyNeededUntil } from '../../../src/queue/body-lifetime.js';

const DAY = 86_400_000;
const now = Date.UTC(2026, 11, 1, 12, 0, 0);

describe('queue body lifetime', () => {
  it('an SQS copy needs its body for 14 days of retention plus a day; a schedule from its time on', () => {
    expect(bodyNeededUntil({ kind: 'now' }, now)).toBe(now + 15 * DAY);
    expect(bodyNeededUntil({ kind: 'sqs', delaySeconds: 900, deliverAt: now + 40 * DAY }, now)).toBe(now + 15 * DAY);
    const at = new Date(now + 60 * DAY);
    expect(bodyNeededUntil({ kind: 'schedule', at, deliverAt: at.getTime() }, now)).toBe(at.getTime() + 16 * DAY);
  });

  it('keys within the 30-day lifecycle window go under queue/, longer ones under queue-held/', () => {
    const short = bodyKey('msg_A', now + 15 * DAY, now);
    expect(short).toBe(`queue/msg_A/${now / 1000}`);
    expect(bodyAliveUntil(short)).toBe(now + 30 * DAY);
    const long = bodyKey('msg_A', now + 76 * DAY + 1, now);
    expect(long).toBe(`queue-held/msg_A/${Math.ceil((now + 76 * DAY + 1) / 1000)}`);
    expect(bodyAliveUntil(long)).toBeGreaterThanOrEqual(now + 76 * DAY + 1);
  });

  it('a body older than 15 days no longer covers a new SQS copy; unknown keys never do', () => {
    const key = bodyKey('msg_B', now + 15 * DAY, now);
    expect(bodyAliveUntil(key) >= bodyNeededUntil({ kind: 'now' }, now + 15 * DAY)).toBe(true);
    expect(bodyAliveUntil(key) >= bodyNeededUntil({ kind: 'now' }, now + 15 * DAY + 1000)).toBe(false);
    for (const legacy of ['queue/msg_B', 'queue/msg_B/abc', 'runs/x/y/1', 'queue-held/msg_B/'])
      expect(bodyAliveUntil(legacy)).toBe(0);
  });
});
