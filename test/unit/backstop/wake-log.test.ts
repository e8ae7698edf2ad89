/**
 * The fault suite's "backstop" column counts wakes from the line a check logs for each
 * (src/backstop/check.ts `wakeLogLine`), read by test/helpers/faults-backstop.ts from a World's
 * logger and from consumer processes' stdout, which arrives in chunks.
 */
import { describe, expect, it } from 'vitest';
import { wakeLogLine } from '../../../src/backstop/check.js';
import type { Logger } from '../../../src/telemetry/log.js';
import { BackstopTally } from '../../helpers/faults-backstop.js';

describe('BackstopTally', () => {
  it('counts each wake line and the distinct runs, from whole lines and from split chunks', () => {
    const t = new BackstopTally();
    t.line(wakeLogLine('wrun_A', 1, 'run_created at slot 1 not replayed'));
    t.line('[eve-world-aws] something else about wrun_B');
    const two = `${wakeLogLine('wrun_B', 1, 'a wait has elapsed')}\n${wakeLogLine('wrun_A', 2, 'step s (pending) has no live lease')}\n`;
    // A child's stdout: the second line split mid-way, and a chunk of another child between.
    t.chunk('child-1', two.slice(0, two.length - 20));
    t.chunk('child-2', 'ready\n[eve-world-aws] backstop: wak');
    expect(t.wakes).toBe(2);
    t.chunk('child-1', two.slice(two.length - 20));
    t.chunk('child-2', 'ing run wrun_C (wake 1): x\n');
    expect(t.wakes).toBe(4);
    expect([...t.runs].sort()).toEqual(['wrun_A', 'wrun_B', 'wrun_C']);
  });

  it('reads the info lines of a logger it wraps and passes every line on', () => {
    const t = new BackstopTally();
    const seen: string[] = [];
    const inner: Logger = {
      info: (m) => seen.push(`info ${m}`),
      warn: (m) => seen.push(`warn ${m}`),
      error: (m) => seen.push(`error ${m}`),
    };
    const l = t.logger(inner);
    l.info(wakeLogLine('wrun_X', 1, 'why'));
    l.warn(wakeLogLine('wrun_Y', 1, 'a warning is not a wake'));
    expect(t.wakes).toBe(1);
    expect([...t.runs]).toEqual(['wrun_X']);
    expect(seen).toHaveLength(2);
  });
});
