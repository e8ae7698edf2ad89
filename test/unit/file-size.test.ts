/**
 * Files stay small enough to read whole (issue 42, item 4): every file under src/ and the root
 * emulator/ has fewer than 400 lines, and every file of the receive side (src/consumer/) fewer than
 * 300. A file over its limit is split by job, one file per job, named for it. Pure: reads the files.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Fewer lines than this in every file of a tree, by the longest matching prefix. */
const LIMITS: [prefix: string, lines: number][] = [
  ['src/consumer/', 300],
  ['src/', 400],
  ['emulator/', 400],
];

/** Lines of a file, as `wc -l` counts them for a file ending in a newline. */
const linesOf = (text: string) => text.trimEnd().split('\n').length;

/** The limit of a repository path: the one of its longest matching prefix. */
function limitOf(rel: string): number | undefined {
  return LIMITS.filter(([p]) => rel.startsWith(p)).sort((a, b) => b[0].length - a[0].length)[0]?.[1];
}

/** Every file of `files` (repository path -> text) at or over its limit, as "path: n lines (limit)". */
function overLimit(files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [rel, text] of files) {
    const limit = limitOf(rel);
    const n = linesOf(text);
    if (limit !== undefined && n >= limit) out.push(`${rel}: ${n} lines (fewer than ${limit} allowed)`);
  }
  return out.sort();
}

function tree(): Map<string, string> {
  const files = new Map<string, string>();
  for (const dir of ['src', 'emulator']) {
    for (const p of readdirSync(path.join(ROOT, dir), { recursive: true }) as string[]) {
      const rel = `${dir}/${p.split(path.sep).join('/')}`;
      if (statSync(path.join(ROOT, rel)).isFile()) files.set(rel, readFileSync(path.join(ROOT, rel), 'utf8'));
    }
  }
  return files;
}

describe('file size', () => {
  const files = tree();
  const over = overLimit(files);

  it('every file of src/ and emulator/ is under its limit (400 lines; 300 in src/consumer/)', () => {
    expect(files.size).toBeGreaterThan(200);
    expect(over).toEqual([]);
  });

  it('finds a file at or over its limit, by the longest prefix (the check can fail)', () => {
    const planted = new Map([
      ['src/consumer/delivery/poller.ts', 'x\n'.repeat(300)],
      ['src/consumer/ok.ts', 'x\n'.repeat(299)],
      ['src/storage/long.ts', 'x\n'.repeat(400)],
      ['src/storage/fine.ts', 'x\n'.repeat(350)],
      ['emulator/stack.ts', `${'x\n'.repeat(401)}\n\n`],
      ['bench/run.mjs', 'x\n'.repeat(900)],
    ]);
    expect(overLimit(planted)).toEqual([
      'emulator/stack.ts: 401 lines (fewer than 400 allowed)',
      'src/consumer/delivery/poller.ts: 300 lines (fewer than 300 allowed)',
      'src/storage/long.ts: 400 lines (fewer than 400 allowed)',
    ]);
  });
});
