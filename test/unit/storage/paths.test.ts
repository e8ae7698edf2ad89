/**
 * storage/'s folders depend one way (docs/layout.md, "Where things are"):
 * table/ <- records/ <- memory/ <- read/ <- write/ <- index.ts. A module imports only its own
 * folder or one to its left; no subfolder imports storage/index.ts. Pure: parses the files.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from '../../helpers/imports.js';

const ORDER = ['table', 'records', 'memory', 'read', 'write', 'index.ts'];

/** Rank of a module by its path relative to src/storage (undefined: an unknown place, itself a violation). */
const rankOf = (rel: string): number => ORDER.indexOf(rel.split('/')[0]);

function violations(files: { rel: string; text: string }[]): string[] {
  const bad: string[] = [];
  for (const f of files) {
    const from = rankOf(f.rel);
    if (from < 0) bad.push(`${f.rel} is outside ${ORDER.join(', ')}`);
    for (const spec of importsOf(f.text).filter((s) => s.startsWith('.'))) {
      const to = path.posix.normalize(path.posix.join(path.posix.dirname(f.rel), spec)).replace(/\.js$/, '.ts');
      if (to.startsWith('..')) continue; // outside storage/: the layers test's business
      if (rankOf(to) > from) bad.push(`${f.rel} -> ${to}`);
    }
  }
  return bad;
}

/** The modules of src/storage/, `rel` relative to it. */
const files = sourceFiles()
  .filter((f) => f.rel.startsWith('storage/'))
  .map((f) => ({ rel: f.rel.slice('storage/'.length), text: f.text }));

describe('storage paths', () => {
  it('every module imports only its own folder or one before it', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(violations(files)).toEqual([]);
  });

  it('detects an import against the order (the check can fail)', () => {
    const planted = [
      { rel: 'records/event.ts', text: "import type { CreateCall } from '../write/create-call.js';" },
      { rel: 'read/runs.ts', text: "import { x } from '../index.js';\nimport { y } from '../table/reads.js';" },
      { rel: 'table/reads.ts', text: "import { expired } from '../records/lifecycle.js';" },
      { rel: 'memory/view-items.ts', text: "import { ByteLru } from '../../util/byte-lru.js';" },
      { rel: 'loose.ts', text: '' },
    ];
    expect(violations(planted)).toEqual([
      'records/event.ts -> write/create-call.ts',
      'read/runs.ts -> index.ts',
      'table/reads.ts -> records/lifecycle.ts',
      'loose.ts is outside table, records, memory, read, write, index.ts',
    ]);
  });
});
