/**
 * No dead exports (issue 42, item 4): every value a module of src/ or the root emulator/ exports (a
 * function, class, constant or enum) is named by another file — a module, a test, the bench, a
 * script — or is the package's public API (what src/index.ts, src/lambda/index.ts and
 * src/cdk/index.ts export). A value used only in its own file is not exported; one used nowhere is
 * deleted. Types are not checked: an exported function's parameter and result types belong to its
 * signature. Another file's comments do not count as a use. Pure: parses the files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { stripComments } from '../helpers/imports.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** The package's entry points: what they export is public. */
const ENTRIES = ['src/index.ts', 'src/lambda/index.ts', 'src/cdk/index.ts'];

/**
 * Repository paths under `dir` whose names match `re`. The walk never enters node_modules/ (the eve
 * test app's links the package back to this repository: a recursive readdir there never ends) or a
 * folder whose name starts with a dot (build output: .well-known/, .output/, .eve/, which bundle
 * the package and so name everything it exports).
 */
function filesUnder(dir: string, re: RegExp): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.')) out.push(...filesUnder(rel, re));
    else if (e.isFile() && re.test(rel)) out.push(rel);
  }
  return out;
}

/** The values `text` exports by name (declarations and `export { a, b }`; not re-exports). */
function valueExports(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  for (const st of sf.statements) {
    if (ts.isExportDeclaration(st)) {
      if (st.moduleSpecifier || st.isTypeOnly || !st.exportClause || !ts.isNamedExports(st.exportClause)) continue;
      for (const e of st.exportClause.elements) if (!e.isTypeOnly) out.push(e.name.text);
      continue;
    }
    const exported =
      ts.canHaveModifiers(st) && ts.getModifiers(st)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) continue;
    if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) out.push(d.name.text);
    } else if (
      (ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isEnumDeclaration(st)) &&
      st.name &&
      !st.modifiers?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword)
    )
      out.push(st.name.text);
  }
  return out;
}

/** Every exported value of `modules` that no other file of `all` names, as "file: name". */
function deadExports(modules: string[], all: Map<string, string>): string[] {
  const code = new Map([...all].map(([f, t]) => [f, stripComments(t)]));
  const out: string[] = [];
  for (const m of modules) {
    if (ENTRIES.includes(m)) continue;
    for (const name of valueExports(m, all.get(m) ?? '')) {
      const word = new RegExp(`(^|[^\\w$])${name.replace(/\$/g, '\\$')}($|[^\\w$])`);
      if (![...code].some(([f, t]) => f !== m && word.test(t))) out.push(`${m}: ${name}`);
    }
  }
  return out.sort();
}

describe('dead exports', () => {
  const modules = [...filesUnder('src', /\.tsx?$/), ...filesUnder('emulator', /\.ts$/)];
  const readers = [
    ...modules,
    // This file's planted case names values: not a use.
    ...filesUnder('test', /\.(tsx?|mjs)$/).filter((f) => f !== 'test/unit/dead-exports.test.ts'),
    ...filesUnder('bench', /\.mjs$/),
    ...filesUnder('scripts', /\.mjs$/),
    'bin/eve-world-aws',
  ];
  const all = new Map(readers.map((f) => [f, readFileSync(path.join(ROOT, f), 'utf8')]));
  const dead = deadExports(modules, all);

  it('every value a module exports is used by another file, or is the public API', () => {
    expect(modules.length).toBeGreaterThan(200);
    expect(dead).toEqual([]);
  });

  it('finds a value nothing else names, and passes types, re-exports, the API and comment-only mentions (the check can fail)', () => {
    const planted = new Map([
      [
        'src/x/a.ts',
        [
          'export function used() {}',
          'export const lonely = 1, alsoUsed = 2;',
          'export class Only {}',
          'export interface Shape { a: number }',
          'export type Kind = "a";',
          "export { fromB } from './b.js';",
          'const local = 3;',
          'export { local };',
        ].join('\n'),
      ],
      ['src/x/b.ts', "import { used, alsoUsed } from './a.js'; // lonely, Only and local are named only here"],
      ['src/index.ts', 'export function publicApi() {}'],
    ]);
    expect(deadExports(['src/x/a.ts', 'src/x/b.ts', 'src/index.ts'], planted)).toEqual([
      'src/x/a.ts: Only',
      'src/x/a.ts: local',
      'src/x/a.ts: lonely',
    ]);
  });
});
