/**
 * A subfolder does not import the files of a folder above it (issue 42, item 4): a module of
 * `a/b/` (or deeper) may import its own folder, its subfolders, sibling folders (`a/c/`) and other
 * top-level units, but not a file directly in `a/` (or any folder it is nested in). What a
 * subfolder shares with its parent belongs in a folder of their own, which both import. Where
 * test/unit/layers.test.ts forbids cycles between a folder and its subfolders, this forbids the
 * upward edge itself. Pure: parses the files of src/ and the root emulator/.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { emulatorFiles, importsOf, resolveRel, type SourceFile, SRC, sourceFiles } from '../helpers/imports.js';

/**
 * Upward imports allowed for now, as subfolder -> the parent's files it may still import. Empty:
 * the consumer's shared helpers moved to src/consumer/shared/ (issue 42). The list only shrinks: an
 * entry no longer used fails the last test until it is deleted.
 */
const KNOWN_UPWARD: Record<string, string[]> = {};

/** Every import from a module into a file of a folder above it, as "from -> to" (paths relative to src/). */
function upwardImports(files: SourceFile[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const dir = path.posix.dirname(f.rel);
    for (const spec of importsOf(f.text)) {
      const to = resolveRel(path.join(SRC, f.rel), spec);
      if (to === undefined) continue;
      const toDir = path.posix.dirname(to);
      if (toDir !== '.' && toDir !== dir && dir.startsWith(`${toDir}/`)) out.push(`${f.rel} -> ${to}`);
    }
  }
  return out.sort();
}

/** Whether KNOWN_UPWARD allows the edge "from -> to". */
function known(edge: string): boolean {
  const [from, to] = edge.split(' -> ');
  return Object.entries(KNOWN_UPWARD).some(([sub, parents]) => from.startsWith(sub) && parents.includes(to));
}

describe('subfolders import no folder above them', () => {
  const edges = upwardImports([...sourceFiles(), ...emulatorFiles()]);

  it('no module imports a file of a folder it is nested in, but the known ones', () => {
    expect(edges.filter((e) => !known(e))).toEqual([]);
  });

  it('the known list only shrinks: each allowed parent file is still imported from its subfolder', () => {
    const unused = Object.entries(KNOWN_UPWARD).flatMap(([sub, parents]) =>
      parents
        .filter((p) => !edges.some((e) => e.startsWith(sub) && e.endsWith(` -> ${p}`)))
        .map((p) => `${sub} -> ${p}`),
    );
    expect(unused).toEqual([]);
  });

  it('finds an import into a parent or grandparent folder, and passes siblings, children and other units (the check can fail)', () => {
    const planted: SourceFile[] = [
      { rel: 'storage/write/a.ts', text: "import { x } from '../index.js';\nimport { t } from '../table/keys.js';" },
      { rel: 'cli/redrive/x/m.ts', text: "import { f } from '../../format.js';\nimport { s } from '../stranded.js';" },
      {
        rel: 'cli/redrive/index.ts',
        text: "import { m } from './x/m.js';\nimport { c } from '../../config/index.js';",
      },
      { rel: 'consumer/index.ts', text: "import { d } from './delivery/deps.js';" },
    ];
    expect(upwardImports(planted)).toEqual([
      'cli/redrive/x/m.ts -> cli/format.ts',
      'cli/redrive/x/m.ts -> cli/redrive/stranded.ts',
      'storage/write/a.ts -> storage/index.ts',
    ]);
  });
});
