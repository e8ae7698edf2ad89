/**
 * No import circle in src/ and the root emulator/ (issue #31, item 5): reads the relative imports of every module under
 * src/ (type-only imports included: a circle of types is still two files that each need the other
 * to be read) and fails on any cycle between files, printing one concrete path of it. Where
 * test/unit/layers.test.ts checks layers and folders, this checks files, inside a folder too.
 *
 * Pure: parses the files, no emulator. (File sizes: test/unit/file-size.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import {
  cyclePath,
  cyclesOf,
  EMULATOR,
  emulatorFiles,
  moduleGraph,
  SRC,
  sourceFiles,
  walk,
} from '../helpers/imports.js';

/**
 * Cycles that exist today and are to be removed (issue #33), each as its modules sorted and joined
 * by ' ⇄ ' (as the failure message prints them). The list can only shrink: an entry no longer
 * found fails the second test until it is deleted. Empty: src/ has no cycle.
 */
const ALLOWED_CYCLES: string[] = [];

describe('import cycles', () => {
  const graph = moduleGraph([...sourceFiles(), ...emulatorFiles()]);
  const cycles = cyclesOf(graph).map((scc) => ({ key: scc.join(' ⇄ '), path: cyclePath(graph, scc) }));

  it('reads the graph: every module is in it, with the imports it has', () => {
    expect(graph.size).toBe(walk(SRC).length + walk(EMULATOR).length);
    expect(graph.get('../emulator/stack.ts')).toContain('../emulator/kms.ts');
    expect(graph.get('consumer/delivery/pipeline.ts')).toContain('consumer/delivery/decide.ts');
    // a type-only import counts
    expect(graph.get('consumer/delivery/delivery-telemetry.ts')).toContain('consumer/delivery/verdict.ts');
  });

  it('src/ has no import cycle outside the allow-list', () => {
    const found = cycles.filter((c) => !ALLOWED_CYCLES.includes(c.key)).map((c) => c.path);
    expect(found, 'import cycles (one path each; break one of its imports)').toEqual([]);
  });

  it('the allow-list only shrinks: every entry is still a cycle', () => {
    const keys = new Set(cycles.map((c) => c.key));
    expect(
      ALLOWED_CYCLES.filter((k) => !keys.has(k)),
      'allowed cycles that are gone: delete them',
    ).toEqual([]);
  });

  it('finds and prints a cycle (the check can fail)', () => {
    const g = new Map([
      ['a.ts', new Set(['b.ts'])],
      ['b.ts', new Set(['c.ts', 'd.ts'])],
      ['c.ts', new Set(['a.ts'])],
      ['d.ts', new Set<string>()],
    ]);
    const found = cyclesOf(g);
    expect(found).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    expect(cyclePath(g, found[0])).toBe('a.ts -> b.ts -> c.ts -> a.ts');
    expect(cyclesOf(new Map([['a.ts', new Set(['b.ts'])]]))).toEqual([]);
  });
});
