/**
 * The layers of src/ run one way (design.md, "Layout"): reads every import of every module under
 * src/ and fails when a module imports one of a higher layer. Pure: parses the files, no emulator.
 *
 *   0 base      config.ts, aws/, log.ts, ddb.ts, payloads.ts, context.ts, polyfills.ts, resources.ts,
 *               delivery-scope.ts (the delivery a call runs inside of: set by the flow route, read below),
 *               encryption/ (per-run KMS data keys and at-rest settings: needs only the base),
 *               util/ (bounded concurrency, the byte-bounded cache: no World knowledge at all)
 *   1 parts     storage/, queue/ (send side), streams/ or streamer(.ts|/)
 *   1.5 sweep   sweep/ (the orphan sweep composed from storage and queue, and its scheduled
 *               Lambda handler, which the consumer's `/lambda` entry re-exports)
 *   2 consumer  consumer/ (receive side: poller, Lambda handler, the delivery pipeline)
 *   3 world     index.ts (composition)
 *   4 tooling   cli/, emulator/, demo/, cdk/
 * Within a layer, parts do not import each other either (storage, queue and streams are
 * independent), except that the base may be imported by anyone.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(__dirname, '../../src');

type Layer = { rank: number; name: string };

/** The layer of a module, by its path relative to src/ (posix separators). */
function layerOf(rel: string): Layer {
  const top = rel.split('/')[0];
  if (
    [
      'config.ts',
      'log.ts',
      'ddb.ts',
      'payloads.ts',
      'context.ts',
      'delivery-scope.ts',
      'polyfills.ts',
      'resources.ts',
      'aws',
      'encryption',
      'util',
    ].includes(top)
  )
    return { rank: 0, name: 'base' };
  if (top === 'storage') return { rank: 1, name: 'storage' };
  if (top === 'queue') return { rank: 1, name: 'queue' };
  if (top === 'streams' || top === 'streamer' || top === 'streamer.ts') return { rank: 1, name: 'streams' };
  if (top === 'sweep') return { rank: 1.5, name: 'sweep' };
  if (top === 'consumer') return { rank: 2, name: 'consumer' };
  if (top === 'index.ts') return { rank: 3, name: 'world' };
  return { rank: 4, name: top.replace(/\.tsx?$/, '') };
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) return walk(p);
    return /\.(ts|tsx)$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

/** Relative specifiers of every static import/export-from and dynamic import() in `text`. */
function importsOf(text: string): string[] {
  const out: string[] = [];
  const stripped = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
  const re =
    /(?:\bimport\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?|\bexport\s+(?:type\s+)?[\w*{}\s,$]+\s+from\s+|\bimport\s*\(\s*)['"]([^'"]+)['"]/g;
  for (const m of stripped.matchAll(re)) out.push(m[1]);
  return out;
}

function resolveRel(fromFile: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const abs = path.resolve(path.dirname(fromFile), spec.replace(/\.js$/, '.ts'));
  for (const cand of [abs, abs.replace(/\.ts$/, '.tsx'), path.join(abs.replace(/\.ts$/, ''), 'index.ts')]) {
    try {
      if (statSync(cand).isFile()) return path.relative(SRC, cand).split(path.sep).join('/');
    } catch {
      // try the next candidate
    }
  }
  return path.relative(SRC, abs).split(path.sep).join('/');
}

/** Every edge that breaks the rule, as "from -> to (layer -> layer)". */
function violations(files: { rel: string; text: string }[]): string[] {
  const bad: string[] = [];
  for (const f of files) {
    const from = layerOf(f.rel);
    for (const spec of importsOf(f.text)) {
      const to = resolveRel(path.join(SRC, f.rel), spec);
      if (to === undefined || to.startsWith('..')) continue;
      const target = layerOf(to);
      const upward = target.rank > from.rank;
      const sideways = target.rank === from.rank && from.rank === 1 && target.name !== from.name;
      if (upward || sideways) bad.push(`${f.rel} -> ${to} (${from.name} -> ${target.name})`);
    }
  }
  return bad;
}

const files = walk(SRC).map((p) => ({
  rel: path.relative(SRC, p).split(path.sep).join('/'),
  text: readFileSync(p, 'utf8'),
}));

describe('layers', () => {
  it('no module under src/ imports a higher layer (or a sibling part)', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(violations(files)).toEqual([]);
  });

  it('the queue (send side) does not import the consumer, and the consumer is used only by index.ts and tooling', () => {
    const intoConsumer = files.filter((f) =>
      importsOf(f.text).some((s) => /(^|\/)consumer\//.test(s) || s.endsWith('/consumer/index.js')),
    );
    for (const f of intoConsumer) expect(layerOf(f.rel).rank >= 2, f.rel).toBe(true);
  });

  it('detects an upward import (the check can fail)', () => {
    const planted = [
      { rel: 'queue/index.ts', text: "import { SqsPoller } from '../consumer/poller.js';" },
      {
        rel: 'aws/errors.ts',
        text: "export { x } from '../storage/index.js';\nconst m = await import('../index.js');",
      },
      { rel: 'storage/a.ts', text: "import type { Q } from '../queue/index.js'; // a sibling part" },
      { rel: 'sweep/index.ts', text: "import { createConsumer } from '../consumer/index.js';" },
      { rel: 'storage/b.ts', text: "import { sweepOrphans } from '../sweep/index.js';" },
      {
        rel: 'consumer/ok.ts',
        text: "import { createQueue } from '../queue/index.js';\n// import { x } from '../index.js';",
      },
    ];
    expect(violations(planted)).toEqual([
      'queue/index.ts -> consumer/poller.ts (queue -> consumer)',
      'aws/errors.ts -> storage/index.ts (base -> storage)',
      'aws/errors.ts -> index.ts (base -> world)',
      'storage/a.ts -> queue/index.ts (storage -> queue)',
      'sweep/index.ts -> consumer/index.ts (sweep -> consumer)',
      'storage/b.ts -> sweep/index.ts (storage -> sweep)',
    ]);
  });
});
