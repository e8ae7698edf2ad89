/**
 * Every repository path a document or a source comment cites exists.
 *
 * Cited paths are found precisely, so prose is not flagged:
 * - in README.md, docs/*.md, bench/README.md and the examples' READMEs: backticked spans with no
 *   space that start with a top-level folder of the repository (`src/cdk/`) or end in a file
 *   extension of its own (`commit.ts`, `lib/meter.mjs`); markdown links are
 *   test/unit/docs.test.ts's job;
 * - in comments of src/, emulator/, bench/ and scripts/ files: the same shapes, backticked or not, and
 *   `./x.ts` / `../x.ts`.
 * Skipped: placeholders and globs (`<runId>`, `*`), package paths (`@workflow/core/...`), URLs,
 * and build outputs that are not in a clean checkout (`dist/`, `.tmp/`, `node_modules/`).
 *
 * And every `eve-world-aws <command>` they cite (backticked, or a line of a code block) is a command
 * of the CLI, and every section they cite by name (`docs/design.md, "Retention"`) is a heading of
 * that file (test/ comments included).
 *
 * A path resolves from the repository root, from the citing file's folder, or as the tail of a
 * file or folder in the tree (`write/commit.ts`); a bare file name (`commit.ts`) as the name of a
 * file in the tree. An import-style `x.js` resolves to its `x.ts`. Resolving by tail keeps short
 * citations valid and still catches a folder that moved (`storage/step-lease.ts` after the file
 * went to `storage/write/`).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Tracked and new (not ignored) files: what a clean checkout of this tree holds. */
const FILES = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: ROOT,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f && !f.includes('node_modules/'));
const TREE = new Set<string>();
for (const f of FILES) {
  TREE.add(f);
  const parts = f.split('/');
  for (let i = 1; i < parts.length; i++) TREE.add(`${parts.slice(0, i).join('/')}/`);
}
const TOP_FOLDERS = [...TREE].filter((p) => /^[^/]+\/$/.test(p)).map((p) => p.slice(0, -1));
const EXTENSIONS = ['ts', 'tsx', 'mts', 'mjs', 'cjs', 'js', 'json', 'md', 'yml', 'yaml', 'conf', 'sh'];
const NOT_IN_A_CHECKOUT = ['dist/', '.tmp/', 'node_modules/', 'cdk.out/', '.output/', 'bench/results/'];

/** Trees of other projects that the docs cite on purpose: a Workflow DevKit build's output, an eve app. */
const OTHER_PROJECTS = ['.well-known/', 'agent/'];

/** Whether a token has the shape of a path into this repository. */
function looksLikePath(token: string, topFolders: readonly string[] = TOP_FOLDERS): boolean {
  if (/[<>*${}]|:\/\/|^@|^node:|\s/.test(token)) return false;
  const bare = token.replace(/^(\.{1,2}\/)+/, '');
  if (OTHER_PROJECTS.some((p) => bare.startsWith(p))) return false;
  if (bare !== token) return /[a-z]/i.test(bare);
  if (!/^[\w][\w./-]*$/.test(token)) return false;
  if (token.includes('/')) {
    if (topFolders.includes(token.split('/')[0])) return true;
    return EXTENSIONS.includes(/\.([a-z]+)$/.exec(token)?.[1] ?? '');
  }
  // A bare file name: only this repository's own sources and docs (`commit.ts`, `design.md`), not
  // the names of generated or third-party files (`manifest.json`, core's `step-executor.js`).
  return /\.(ts|tsx|mts|md)$/.test(token);
}

/** Whether a cited path exists, for a citation in `from` (a repository-relative file). */
function resolves(cited: string, from: string, tree: ReadonlySet<string> = TREE): boolean {
  const clean = cited.replace(/[.,:;]+$/, '');
  const candidates = [clean];
  if (clean.endsWith('.js')) candidates.push(clean.replace(/\.js$/, '.ts'));
  for (const c of candidates) {
    const rooted = path.posix.normalize(c.replace(/^\.\//, ''));
    const local = path.posix.normalize(path.posix.join(path.posix.dirname(from), c));
    for (const p of [rooted, local]) {
      if (NOT_IN_A_CHECKOUT.some((x) => p.startsWith(x))) return true;
      if (tree.has(p) || tree.has(`${p}/`)) return true;
    }
    if (c.startsWith('./') || c.startsWith('../')) continue;
    for (const t of tree) if (t.endsWith(`/${c}`) || t === c) return true;
  }
  return false;
}

/** Backticked spans of a markdown file (outside fenced code blocks). */
function backticked(md: string): string[] {
  const out: string[] = [];
  let fence = false;
  for (const line of md.split('\n')) {
    if (line.startsWith('```')) {
      fence = !fence;
      continue;
    }
    if (fence) continue;
    for (const m of line.matchAll(/`([^`\s]+)`/g)) out.push(m[1]);
  }
  return out;
}

/** The text of the comments of a JS/TS source (line and block comments; strings are skipped). */
function comments(source: string): string {
  const out: string[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      out.push(source.slice(i + 2, end < 0 ? source.length : end));
      i = end < 0 ? source.length : end;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      out.push(source.slice(i + 2, end < 0 ? source.length : end));
      i = end < 0 ? source.length : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      // Skip the string (template literals included, without nesting: good enough for comments).
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === '\\' ? 2 : 1;
      i = j + 1;
    } else i++;
  }
  return out.join('\n');
}

/** Path-shaped tokens of comment text, backticked or not. */
function commentTokens(text: string): string[] {
  return [...text.matchAll(/[\w.@:<>*${}/-]+/g)]
    .map((m) => m[0].replace(/[.,:;)]+$/, ''))
    .filter((t) => t.includes('/') || /\.[a-z]+$/.test(t));
}

const DOCS = FILES.filter(
  (f) =>
    f === 'README.md' ||
    /^docs\/[^/]+\.md$/.test(f) ||
    f === 'bench/README.md' ||
    /^examples\/[^/]+\/README\.md$/.test(f),
);
const SOURCES = FILES.filter((f) => /^(src|emulator|bench|scripts)\/.*\.(ts|mts|mjs|js)$/.test(f));

describe('every path a document or a comment cites exists', () => {
  it.each(DOCS)('%s', (file) => {
    const missing = backticked(readFileSync(path.join(ROOT, file), 'utf8'))
      .filter((t) => looksLikePath(t))
      .filter((t) => !resolves(t, file));
    expect([...new Set(missing)]).toEqual([]);
  });

  it('comments in src/, emulator/, bench/ and scripts/', () => {
    const missing: string[] = [];
    for (const file of SOURCES) {
      const text = comments(readFileSync(path.join(ROOT, file), 'utf8'));
      for (const t of commentTokens(text)) if (looksLikePath(t) && !resolves(t, file)) missing.push(`${file}: ${t}`);
    }
    expect([...new Set(missing)]).toEqual([]);
  });
});

/**
 * The command words of `eve-world-aws <command>` citations: backticked spans, and in markdown the
 * lines of code blocks.
 */
function citedCommands(text: string, markdown: boolean): string[] {
  const spans = [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]);
  const codeLines: string[] = [];
  let fence = false;
  for (const line of markdown ? text.split('\n') : []) {
    if (line.startsWith('```')) fence = !fence;
    else if (fence) codeLines.push(line.trim());
  }
  return [...spans, ...codeLines]
    .map((t) => /^(?:npx )?eve-world-aws ([a-z][\w-]*)/.exec(t)?.[1])
    .filter((c): c is string => c !== undefined);
}

describe('every eve-world-aws command a document or a comment cites exists', () => {
  const commands = new Set(buildProgram().commands.map((c) => c.name()));
  const unknown = (cited: string[]) => [...new Set(cited.filter((c) => !commands.has(c)))];

  it.each(DOCS)('%s', (file) => {
    expect(unknown(citedCommands(readFileSync(path.join(ROOT, file), 'utf8'), true))).toEqual([]);
  });

  it('comments in src/, emulator/, bench/ and scripts/', () => {
    const missing = SOURCES.flatMap((file) =>
      unknown(citedCommands(comments(readFileSync(path.join(ROOT, file), 'utf8')), false)).map((c) => `${file}: ${c}`),
    );
    expect(missing).toEqual([]);
  });

  it('finds backticked and code-block citations, not prose', () => {
    const md =
      'run `eve-world-aws init --json`, or\n```sh\nnpx eve-world-aws dockerfile > x\n```\neve-world-aws spends less';
    expect(citedCommands(md, true)).toEqual(['init', 'dockerfile']);
    expect(citedCommands('what eve-world-aws spends; `npx eve-world-aws sweep`', false)).toEqual(['sweep']);
  });
});

/** The headings of a markdown file (outside code fences), backticks dropped. */
function headings(md: string): Set<string> {
  const out = new Set<string>();
  let fence = false;
  for (const line of md.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const m = !fence && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(m[1].replace(/`/g, '').trim());
  }
  return out;
}

/** `docs/design.md, "Retention"`, `design.md "Log items"`, `README "Use it"`: [file, section] pairs. */
function sectionCitations(text: string): Array<[string, string]> {
  const flat = text.replace(/\n\s*(\*\s?)?/g, ' ');
  return [...flat.matchAll(/\b((?:[\w-]+\/)*[\w-]+\.md|README),? ["\u201c]([^"\u201d]+)["\u201d]/g)].map(
    (m) => [m[1], m[2]] as [string, string],
  );
}

/** The markdown file a citation names: from the root, else under docs/. */
function citedDoc(name: string): string | undefined {
  const file = name === 'README' ? 'README.md' : name;
  return [file, `docs/${file}`].find((f) => TREE.has(f));
}

describe('every section a document or a comment cites by name exists', () => {
  // This file is left out: its examples are citations on purpose.
  const TESTS = FILES.filter((f) => /^test\/.*\.(ts|tsx|mts|mjs)$/.test(f) && f !== 'test/unit/docs-paths.test.ts');
  it('in README.md, docs/*.md, bench/README.md and the comments of src/, emulator/, bench/, scripts/ and test/', () => {
    const missing: string[] = [];
    for (const file of [...DOCS, ...SOURCES, ...TESTS]) {
      const raw = readFileSync(path.join(ROOT, file), 'utf8');
      for (const [doc, section] of sectionCitations(DOCS.includes(file) ? raw : comments(raw))) {
        const target = citedDoc(doc);
        if (!target) missing.push(`${file}: ${doc} (no such file)`);
        else if (!headings(readFileSync(path.join(ROOT, target), 'utf8')).has(section))
          missing.push(`${file}: ${doc} "${section}" (no such heading in ${target})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('reads citations across comment lines', () => {
    expect(sectionCitations('the argument: docs/design.md, "Live\n * stream reads"; README "Use it"')).toEqual([
      ['docs/design.md', 'Live stream reads'],
      ['README', 'Use it'],
    ]);
    expect(headings('# A\n```\n# not\n```\n### `tail <runId>`: x')).toEqual(new Set(['A', 'tail <runId>: x']));
  });
});

describe('the path detection', () => {
  const tops = ['src', 'docs', 'bench'];
  it('takes repository paths and leaves prose, keys, packages and URLs alone', () => {
    for (const p of [
      'src/cdk/',
      'src/schema/keys.ts',
      'commit.ts',
      'lib/meter.mjs',
      './observability.ts',
      '../limits.ts',
      'a/b.json',
    ])
      expect(looksLikePath(p, tops), p).toBe(true);
    for (const p of [
      'runs/<runId>/',
      'queue/<id>/<created>',
      '@workflow/core/dist/x.js',
      'https://example.com/a.md',
      'input/output/error',
      'Get/Put/DeleteObject',
      'aws-cdk-lib/aws-iam',
      'node:fs',
      'v1=<HMAC>',
      'index.handler',
      'manifest.json',
      'step-executor.js',
      '../..',
      './.well-known/workflow/v1/flow.mjs',
      'agent/instrumentation.ts',
    ])
      expect(looksLikePath(p, tops), p).toBe(false);
  });

  it('resolves from the root, from the citing folder, by tail and by name, and refuses a moved folder', () => {
    const tree = new Set(['src/', 'src/storage/', 'src/storage/write/', 'src/storage/write/step-lease.ts', 'src/x.ts']);
    expect(resolves('src/storage/write/step-lease.ts', 'docs/a.md', tree)).toBe(true);
    expect(resolves('./write/step-lease.ts', 'src/storage/index.ts', tree)).toBe(true);
    expect(resolves('write/step-lease.ts', 'docs/a.md', tree)).toBe(true);
    expect(resolves('step-lease.ts', 'docs/a.md', tree)).toBe(true);
    expect(resolves('x.js', 'src/y.ts', tree)).toBe(true);
    expect(resolves('storage/step-lease.ts', 'src/config/index.ts', tree)).toBe(false);
    expect(resolves('src/storage/step-lease.ts', 'docs/a.md', tree)).toBe(false);
    expect(resolves('gone.ts', 'docs/a.md', tree)).toBe(false);
  });

  it('reads comments, not strings', () => {
    const src =
      "const a = '// src/not-a-comment.ts'; // see src/schema/keys.ts\n/* and ./x.ts */ const b = `/* no */`;";
    expect(commentTokens(comments(src))).toEqual(['src/schema/keys.ts', './x.ts']);
  });
});
