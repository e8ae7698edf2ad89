/**
 * The README stays a README (at most 300 lines), bench/README.md at most 400, and the documentation
 * holds together: every relative link in README.md, bench/README.md, the pages under docs/ and each
 * example's README points at a file that exists, and every `#anchor` at a heading of the file it
 * names (GitHub's slugs).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown file's headings (outside code fences), with GitHub's -1, -2 for repeats. */
function anchors(md: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of md.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const m = !fence && /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** `[text](target)` links outside code fences and inline code. */
function links(md: string): string[] {
  const out: string[] = [];
  let fence = false;
  for (const line of md.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    if (fence) continue;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1]);
  }
  return out;
}

const docs = [
  'README.md',
  'bench/README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(path.join(ROOT, 'examples'))
    .map((d) => `examples/${d}/README.md`)
    .filter((f) => existsSync(path.join(ROOT, f))),
];

describe('documentation', () => {
  it('README.md has at most 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(300);
  });

  it('bench/README.md has at most 400 lines (the method and the current results; the headline figures are docs/benchmarks.md)', () => {
    expect(read('bench/README.md').split('\n').length).toBeLessThanOrEqual(400);
  });

  it.each(docs)('%s: every relative link resolves, anchors included', (file) => {
    const broken: string[] = [];
    for (const target of links(read(file))) {
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [p, anchor] = target.split('#');
      const resolved = p ? path.join(path.dirname(file), p) : file;
      if (!existsSync(path.join(ROOT, resolved))) {
        broken.push(`${target} (no ${resolved})`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor))
        broken.push(`${target} (no heading #${anchor} in ${resolved})`);
    }
    expect(broken).toEqual([]);
  });
});

describe('slug and anchors', () => {
  it('follow GitHub: punctuation dropped, spaces to dashes, repeats numbered', () => {
    expect(slug('`sweep`: delete what nothing can reference')).toBe('sweep-delete-what-nothing-can-reference');
    expect(slug('Scale and data lifecycle')).toBe('scale-and-data-lifecycle');
    expect([...anchors('# A\n## B c\n```\n# not\n```\n## B c\n')]).toEqual(['a', 'b-c', 'b-c-1']);
  });
});
