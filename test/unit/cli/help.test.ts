/**
 * `--help` shows defaults as a user would type them: `1h`, not the milliseconds the parser
 * returns, and what an empty list means, not `[]`.
 */
import { describe, expect, it } from 'vitest';
import { durationText } from '../../../src/cli/format.js';
import { redriveCommand } from '../../../src/cli/redrive/index.js';
import { sweepCommand } from '../../../src/cli/sweep.js';
import { tailCommand } from '../../../src/cli/tail.js';

describe('--help defaults', () => {
  it.each([
    ['redrive', redriveCommand],
    ['sweep', sweepCommand],
    ['tail', tailCommand],
  ])('%s --help prints no raw default (milliseconds, [])', (_name, make) => {
    const help = make().helpInformation();
    expect(help).not.toMatch(/default: (\d{4,}|\[\])/);
  });

  it('durations print in the unit that divides them, and still parse back', () => {
    expect(redriveCommand().helpInformation()).toMatch(/--older-than <duration>[\s\S]*\(default: 1h\)/);
    expect(sweepCommand().helpInformation()).toMatch(/\(default: 1h\)/);
    expect(tailCommand().helpInformation()).toMatch(/\(default: every stream of\s+the run\)/);
    expect([3_600_000, 90_000, 900_000, 172_800_000, 1500].map(durationText)).toEqual([
      '1h',
      '90s',
      '15m',
      '2d',
      '1500ms',
    ]);
  });

  it('the defaults still reach the action as values', async () => {
    const cmd = sweepCommand();
    cmd.exitOverride();
    expect(cmd.opts().olderThan).toBe(3_600_000);
    expect(tailCommand().opts().stream).toEqual([]);
  });
});
