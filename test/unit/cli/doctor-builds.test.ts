/**
 * doctor's "older builds" decision (src/cli/doctor-builds.ts) on the formats that wrote a run. The
 * check against a table the real 0.1.0 build wrote to is in test/e2e/rollback.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { olderBuildName, olderWritesIn, SKEW_MARGIN_MS } from '../../../src/cli/doctor-builds.js';

const initAt = Date.parse('2026-12-01T10:00:00Z');
const table = { recorded: true, formats: { log: 2, records: 2, messages: 2 }, updatedAt: initAt };
const run = (createdAt: number) => ({ runId: 'wrun_1', createdAt: new Date(createdAt) });
const log = (...formats: number[]) => formats.map((format, i) => ({ slot: i + 1, format }));

describe('olderWritesIn', () => {
  it('an older format after a newer one in one log: named, whatever the clocks say', () => {
    expect(olderWritesIn(run(initAt - 86_400_000), { created: 2, log: log(2, 2, 1, 1) }, table)).toEqual([
      { runId: 'wrun_1', format: 1, how: 'after', slot: 3, newer: 2 },
    ]);
    // The run view's creator counts as the first writer.
    expect(olderWritesIn(run(initAt), { created: 2, log: log(1) }, table)).toEqual([
      { runId: 'wrun_1', format: 1, how: 'after', slot: 1, newer: 2 },
    ]);
  });

  it('a run an older build wrote alone: named only when created past the clock margin after init', () => {
    const alone = { created: 1, log: log(1, 1, 1) };
    expect(olderWritesIn(run(initAt + SKEW_MARGIN_MS - 1), alone, table)).toEqual([]);
    expect(olderWritesIn(run(initAt + SKEW_MARGIN_MS + 1), alone, table)).toEqual([
      { runId: 'wrun_1', format: 1, how: 'created' },
    ]);
    // Before `init` recorded a format (a rolling upgrade from 0.1.0): nothing to compare with.
    expect(olderWritesIn(run(initAt + 3_600_000), alone, { ...table, recorded: false })).toEqual([]);
  });

  it('this build alone, or an older build before this one: nothing', () => {
    expect(olderWritesIn(run(initAt + 3_600_000), { created: 2, log: log(2, 2, 2) }, table)).toEqual([]);
    // A rolling upgrade: 0.1.0 wrote first, this build after it.
    expect(olderWritesIn(run(initAt - 60_000), { created: 1, log: log(1, 1, 2, 2) }, table)).toEqual([]);
    expect(olderWritesIn(run(initAt), { log: [] }, table)).toEqual([]);
  });

  it('names the build', () => {
    expect(olderBuildName(1)).toBe('0.1.0 or older (a build from before format versions: no format stamps)');
    expect(olderBuildName(2)).toMatch(/^a build writing format 2/);
  });
});
