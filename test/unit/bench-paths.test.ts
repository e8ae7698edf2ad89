/**
 * Every path the bench and the scripts name exists (issue 42, item 5): a file move must not break
 * `npm run bench` unseen, as the move of dist/ to the repository's layout once broke
 * bench/streams/tokens.mjs (it imported `.tmp/bench-streams/provision/index.js`). Reads
 * bench/**, scripts/** and bin/ with the TypeScript parser (comments aside) and checks:
 *
 * - every relative import (static, `export … from`, `import('…')`) and every relative path literal
 *   (`new URL('./x.mjs', import.meta.url)`) resolves to a file;
 * - every module of src/ named through `importOwn(srcOut, 'config/index.js')` (bench/lib/dist.mjs)
 *   has its source in src/ (its third argument, the path in an older layout, is not checked);
 * - every other path literal with a folder in it ('emulator/stack.js', 'dist/src/cli/tail-view.js',
 *   'test/e2e/build.mjs') names a file from the repository root, a compiled one (under dist/ or
 *   .tmp/<dir>/) by its source;
 * - no module path is glued to a variable in a template (`${dist}/provision/index.js`): its base
 *   cannot be read, so it goes through importOwn or path.join(base, 'src/…').
 *
 * A bare file name ('index.js', 'flow.mjs') and a key into an object (`manifest.workflows['…']`)
 * are not checked, nor text to find (`.includes('cli/main.js')`), nor a file the bench writes. The CI's quick pass (`npm run bench:quick`) runs every part besides.
 * Pure: parses the files, no build.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Paths into another build's tree, named on purpose: [file, path, why]. */
const OLDER_LAYOUT: [file: string, literal: string, why: string][] = [
  ['bench/telemetry.mjs', 'src/consumer/lambda.ts', 'the Lambda entry in the tree of the commit before src/telemetry/'],
];

/** A literal that is a path with at least one folder, ending in a module (or, relative, a data file). */
const PATH = /^[\w@.-]+(?:\/[\w@.-]+)+\.(?:m?js|tsx?)$/;
const RELATIVE = /^(?:\.{1,2}\/)+[\w@.-]+(?:\/[\w@.-]+)*\.(?:m?js|tsx?|json)$/;
/** Methods whose string argument is a piece of text to find, not a path to open. */
const TEXT_MATCH = new Set(['includes', 'startsWith', 'endsWith', 'indexOf']);
/** A template's text after a substitution that continues a path to a module. */
const GLUED = /^\/?[\w@.-]+(?:\/[\w@.-]+)*\.(?:m?js|tsx?)$/;
/** A compiled tree: its files are named by their source's path from the root. */
const COMPILED = /^(?:dist|\.tmp\/[\w.-]+)\//;

/** The source files a repository path names (a compiled one by its source). */
function exists(rel: string): boolean {
  const p = rel.replace(COMPILED, '');
  const candidates = [p, p.replace(/\.m?js$/, '.ts'), p.replace(/\.m?js$/, '.tsx')];
  return candidates.some((c) => existsSync(path.join(ROOT, c)) && statSync(path.join(ROOT, c)).isFile());
}

/** `spec`, relative to `file` (a repository path), as a repository path; undefined outside it. */
function fromFile(file: string, spec: string): string | undefined {
  const p = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
  return p.startsWith('../') ? undefined : p;
}

/** Every problem of `file` (its repository path) with its text, as "file: what". */
function pathProblems(file: string, text: string): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const out: string[] = [];
  const done = new Set<ts.Node>();
  const line = (n: ts.Node) => src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1;
  const missing = (n: ts.Node, what: string) => out.push(`${file}:${line(n)}: ${what}`);
  const relative = (n: ts.Node, spec: string) => {
    const p = fromFile(file, spec);
    if (p === undefined || !exists(p)) missing(n, `'${spec}' (${p ?? 'outside the repository'}) does not exist`);
  };
  const visit = (n: ts.Node): void => {
    // Static imports and re-exports, and import('literal').
    const spec =
      (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier
        ? n.moduleSpecifier
        : ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword
          ? n.arguments[0]
          : undefined;
    if (spec && ts.isStringLiteralLike(spec)) {
      done.add(spec);
      if (spec.text.startsWith('.')) relative(spec, spec.text);
    }
    // importOwn(srcOut, 'x/y.js', 'older.js'): a module of src/; the older layout's path is not checked.
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'importOwn') {
      const [, rel, older] = n.arguments;
      if (older) done.add(older);
      if (rel && ts.isStringLiteralLike(rel)) {
        done.add(rel);
        if (!exists(`src/${rel.text}`)) missing(rel, `importOwn '${rel.text}': src/${rel.text} has no source`);
      } else if (rel) missing(rel, 'importOwn takes its path as a literal (so that this test can read it)');
    }
    // A key into an object, or text to find in a string, is not a path.
    if (ts.isElementAccessExpression(n)) done.add(n.argumentExpression);
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && TEXT_MATCH.has(n.expression.name.text))
      for (const a of n.arguments) done.add(a);
    if (ts.isStringLiteralLike(n) && !done.has(n)) {
      const ok = OLDER_LAYOUT.some(([f, lit]) => f === file && lit === n.text);
      if (RELATIVE.test(n.text)) relative(n, n.text);
      else if (PATH.test(n.text) && !ok && !exists(n.text))
        missing(n, `'${n.text}' does not exist (a path from the repository root)`);
    }
    if (ts.isTemplateExpression(n))
      for (const s of n.templateSpans)
        if (GLUED.test(s.literal.text))
          missing(s, `a module path glued to \${${s.expression.getText(src)}}: use importOwn or path.join(base, '…')`);
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

/** The JavaScript of bench/, scripts/ and bin/, as repository paths. */
function scripts(): string[] {
  const files: string[] = [];
  for (const dir of ['bench', 'scripts', 'bin']) {
    for (const p of readdirSync(path.join(ROOT, dir), { recursive: true }) as string[]) {
      const rel = `${dir}/${p.split(path.sep).join('/')}`;
      if (!statSync(path.join(ROOT, rel)).isFile()) continue;
      if (/\.m?js$/.test(rel) || (dir === 'bin' && readFileSync(path.join(ROOT, rel), 'utf8').startsWith('#!')))
        files.push(rel);
    }
  }
  return files.sort();
}

describe('paths named by the bench, the scripts and the launcher', () => {
  const files = scripts();

  it('every one exists', () => {
    expect(files).toContain('bench/streams/tokens.mjs');
    expect(files).toContain('bin/eve-world-aws');
    const problems = files.flatMap((f) => pathProblems(f, readFileSync(path.join(ROOT, f), 'utf8')));
    expect(problems).toEqual([]);
  });

  it('every OLDER_LAYOUT entry is still named, and does not exist today', () => {
    for (const [file, literal] of OLDER_LAYOUT) {
      expect(readFileSync(path.join(ROOT, file), 'utf8'), file).toContain(`'${literal}'`);
      expect(exists(literal), literal).toBe(false);
    }
  });

  it('finds a missing path of each kind, and passes the ones that exist (the check can fail)', () => {
    const planted = [
      // The break this test was written for: glued to the build's root, without src/.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text with a template in it
      'const stack = await import(`${CURRENT}/provision/index.js`);',
      "import { reconcile } from '../../.tmp/bench-streams/provision/index.js';",
      "const { x } = await importOwn(dist, 'provisions/index.js');",
      "const view = await import(pathToFileURL(path.join(ROOT, 'dist/src/cli/nope.js')).href);",
      "const hooks = new URL('./lib/nope.json', import.meta.url);",
      'const { y } = await importOwn(dist, name);',
      // Fine: each exists, or is not a path this test reads.
      "import { reconcile } from '../../.tmp/bench-streams/src/provision/index.js';",
      "const { a } = await importOwn(dist, 'config/index.js', 'config.js');",
      "const s = path.join(DIST, 'emulator/stack.js'); const e = path.join(ROOT, 'test/e2e/build.mjs');",
      "const w = manifest.workflows['workflows/checklist.ts']; const f = path.join(dir, 'flow.mjs');",
      "if (String(err.message).includes('cli/main.js')) writeFileSync('bench/results/x-latest.json', j);",
      "const baseline = new URL('./baseline-tokens.json', import.meta.url);",
      "import { fmt } from '../lib/format.mjs'; import { setWorld } from '@workflow/core/runtime';",
      "// import { gone } from '../../.tmp/bench-streams/gone.js'; (a comment)",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text with a template in it
      'const file = path.join(RESULTS, `${stamp}.json`); const u = `${flow}?world=${n}`;',
    ].join('\n');
    expect(pathProblems('bench/streams/planted.mjs', planted)).toEqual([
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text with a template in it
      "bench/streams/planted.mjs:1: a module path glued to ${CURRENT}: use importOwn or path.join(base, '…')",
      "bench/streams/planted.mjs:2: '../../.tmp/bench-streams/provision/index.js' (.tmp/bench-streams/provision/index.js) does not exist",
      "bench/streams/planted.mjs:3: importOwn 'provisions/index.js': src/provisions/index.js has no source",
      "bench/streams/planted.mjs:4: 'dist/src/cli/nope.js' does not exist (a path from the repository root)",
      "bench/streams/planted.mjs:5: './lib/nope.json' (bench/streams/lib/nope.json) does not exist",
      'bench/streams/planted.mjs:6: importOwn takes its path as a literal (so that this test can read it)',
    ]);
  });
});
