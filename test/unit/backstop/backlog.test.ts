/**
 * The backlog gate of one tick (src/backstop/backlog.ts): a first wake is never held and never asks
 * the queue; a repeat wake is held while the queue shows messages waiting; the queue is asked at
 * most once per tick; a failed read lets the repeat go out, with one warning.
 */
import { describe, expect, it } from 'vitest';
import { backlogGate } from '../../../src/backstop/backlog.js';

describe('the backlog gate', () => {
  it('a first wake goes out without asking the queue', async () => {
    let reads = 0;
    const gate = backlogGate(
      async () => {
        reads++;
        return 500;
      },
      () => {},
    );
    expect(await gate(0)).toBeUndefined();
    expect(reads).toBe(0);
  });

  it('a repeat wake is held while the queue shows a backlog; the queue is read once per tick', async () => {
    let reads = 0;
    const gate = backlogGate(
      async () => {
        reads++;
        return 3;
      },
      () => {},
    );
    expect(await Promise.all([gate(1), gate(2), gate(5)])).toEqual([3, 3, 3]);
    expect(reads).toBe(1);
  });

  it('a repeat wake goes out when the queue shows none', async () => {
    const gate = backlogGate(
      async () => 0,
      () => {},
    );
    expect(await gate(3)).toBeUndefined();
  });

  it('a failed read lets repeats go out (liveness first), with one warning per tick', async () => {
    const warnings: string[] = [];
    const gate = backlogGate(
      async () => {
        throw new Error('AccessDenied');
      },
      (m) => warnings.push(m),
    );
    expect(await gate(1)).toBeUndefined();
    expect(await gate(2)).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/cannot read the queue's backlog.*AccessDenied/);
  });

  it('no reader (a caller without one): nothing is held', async () => {
    expect(await backlogGate(undefined, () => {})(4)).toBeUndefined();
  });
});
