/**
 * The modules of src/ and the root emulator/ and their import graph, read from the files' text (no
 * compiler, no emulator): every module with its text, the modules it imports (static, `export ...
 * from` and dynamic `import()`, type-only imports included), and the cycles in it. The one walker
 * of the tests that read the source (the architecture tests under test/unit/, and the scans for a
 * rule's rivals).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export const SRC = path.resolve(__dirname, '../../src');

/** A module of src/: its path relative to src/ (posix separators) and its text. */
export interface SourceFile {
  rel: string;
  text: string;
}

/** Every .ts/.tsx module under `dir` (absolute paths), declarations excluded. */
export function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) return walk(p);
    return /\.(ts|tsx)$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

/** The root emulator/: the local AWS stack's code, tooling beside src/ (its modules' `rel` start with `../emulator/`). */
export const EMULATOR = path.resolve(__dirname, '../../emulator');

/** Every module of src/ with its text. */
export function sourceFiles(): SourceFile[] {
  return readModules(SRC);
}

/** Every module of the root emulator/, `rel` relative to src/ (`../emulator/stack.ts`), as imports resolve. */
export function emulatorFiles(): SourceFile[] {
  return readModules(EMULATOR);
}

function readModules(dir: string): SourceFile[] {
  return walk(dir).map((f) => ({
    rel: path.relative(SRC, f).split(path.sep).join('/'),
    text: readFileSync(f, 'utf8'),
  }));
}

/** `text` without its comments (block and line; a `//` after a `:`, as in a URL, is kept). */
export function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}

/** Specifiers of every static import/export-from and dynamic import() in `text` (packages included). */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  const stripped = stripComments(text);
  const re =
    /(?:\bimport\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?|\bexport\s+(?:type\s+)?[\w*{}\s,$]+\s+from\s+|\bimport\s*\(\s*)['"]([^'"]+)['"]/g;
  for (const m of stripped.matchAll(re)) out.push(m[1]);
  return out;
}

/** The module (relative to src/) a relative specifier in `fromFile` names; undefined for a package. */
export function resolveRel(fromFile: string, spec: string): string | undefined {
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

/** The module graph: each module of src/ -> the modules of src/ it imports. */
export function moduleGraph(files: SourceFile[]): Map<string, Set<string>> {
  const known = new Set(files.map((f) => f.rel));
  const g = new Map<string, Set<string>>();
  for (const f of files) {
    const edges = new Set<string>();
    for (const spec of importsOf(f.text)) {
      const to = resolveRel(path.join(SRC, f.rel), spec);
      if (to !== undefined && to !== f.rel && known.has(to)) edges.add(to);
    }
    g.set(f.rel, edges);
  }
  return g;
}

/** The strongly connected components of more than one node (Tarjan), each sorted. */
export function cyclesOf(g: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      for (let w = stack.pop(); w !== undefined; w = stack.pop()) {
        onStack.delete(w);
        scc.push(w);
        if (w === v) break;
      }
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of [...g.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/**
 * One concrete cycle through the first module of `scc` (a strongly connected component of `g`),
 * as "a -> b -> ... -> a": the imports to read when the cycle is to be broken.
 */
export function cyclePath(g: Map<string, Set<string>>, scc: string[]): string {
  const members = new Set(scc);
  const start = scc[0];
  // Breadth-first from start, inside the component, back to start: the shortest such cycle.
  const parent = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const w of [...(g.get(v) ?? [])].sort()) {
      if (!members.has(w)) continue;
      if (w === start) {
        const pathBack = [v];
        for (let p = parent.get(v); p !== undefined; p = parent.get(p)) pathBack.push(p);
        return [...pathBack.reverse(), start].join(' -> ');
      }
      if (!parent.has(w) && w !== start) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return scc.join(' ⇄ ');
}
