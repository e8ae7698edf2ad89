/**
 * The "Where things are" map in docs/layout.md matches the tree.
 *
 * The section is a list with one line per folder or file group: `- \`path\`, \`path\` — what`.
 * The backticked names before the first " — " are the paths. Checks: every path exists; every
 * folder and file directly under src/ and every tracked top-level entry (but .gitignore) is
 * listed; src/ holds no file but its entry index.ts. And the rules docs/layout.md states for
 * test/: folders under test/unit and test/integration mirror src/ (or the root emulator/), and
 * hold only tests (and fixtures/); helpers live in test/helpers/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const HEADING = '## Where things are';

/** The listed paths, in order, from the map section of docs/layout.md. */
function mapPaths(readme: string): string[] {
  const start = readme.indexOf(`\n${HEADING}\n`);
  if (start < 0) throw new Error(`docs/layout.md has no "${HEADING}" section`);
  const body = readme.slice(start + HEADING.length + 2);
  const end = body.search(/^## /m);
  const section = end < 0 ? body : body.slice(0, end);
  const paths: string[] = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('- ')) continue;
    const sep = line.indexOf(' — ');
    if (sep < 0) throw new Error(`map line without " — ": ${line}`);
    const names = [...line.slice(2, sep).matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    if (names.length === 0) throw new Error(`map line without a backticked path: ${line}`);
    paths.push(...names);
  }
  return paths;
}

/** `name/` for a folder, `name` for a file. */
function entry(dir: string, name: string): string {
  return statSync(path.join(ROOT, dir, name)).isDirectory()
    ? `${path.posix.join(dir, name)}/`
    : path.posix.join(dir, name);
}

function subfolders(dir: string): string[] {
  if (!existsSync(path.join(ROOT, dir))) return [];
  return (readdirSync(path.join(ROOT, dir), { recursive: true }) as string[])
    .filter((p) => statSync(path.join(ROOT, dir, p)).isDirectory())
    .map((p) => p.split(path.sep).join('/'));
}

describe('docs/layout.md "Where things are"', () => {
  const listed = mapPaths(readFileSync(path.join(ROOT, 'docs', 'layout.md'), 'utf8'));

  it('lists only paths that exist', () => {
    const missing = listed.filter(
      (p) => !existsSync(path.join(ROOT, p)) || p.endsWith('/') !== statSync(path.join(ROOT, p)).isDirectory(),
    );
    expect(missing, 'listed in docs/layout.md but not in the tree (folders end with /)').toEqual([]);
  });

  it('lists every folder and file directly under src/', () => {
    const entries = readdirSync(path.join(ROOT, 'src')).map((n) => entry('src', n));
    expect(
      entries.filter((e) => !listed.includes(e)),
      'in src/ but not in the map of docs/layout.md',
    ).toEqual([]);
  });

  it('lists every tracked top-level entry', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((f) => f.split('/')[0]);
    const top = [...new Set(tracked)]
      .filter((n) => n !== '.gitignore' && existsSync(path.join(ROOT, n)))
      .map((n) => entry('', n));
    // A folder counts as listed when it, or something inside it (src/'s lines), is listed.
    const covered = (e: string) => listed.some((p) => p === e || (e.endsWith('/') && p.startsWith(e)));
    expect(
      top.filter((e) => !covered(e)),
      'tracked at the top level but not in the map of docs/layout.md',
    ).toEqual([]);
  });

  it('src/ holds folders and its entry index.ts only (every other file lives in the folder of its job)', () => {
    const loose = readdirSync(path.join(ROOT, 'src')).filter(
      (n) => n !== 'index.ts' && !statSync(path.join(ROOT, 'src', n)).isDirectory(),
    );
    expect(loose, 'files directly under src/: move each into the folder it belongs to').toEqual([]);
  });

  it('a file name names one module across src/ and emulator/ (index.ts, CLI commands and the decide steps aside)', () => {
    const modules = ['src', 'emulator'].flatMap((dir) =>
      (readdirSync(path.join(ROOT, dir), { recursive: true }) as string[])
        .map((p) => `${dir}/${p.split(path.sep).join('/')}`)
        .filter((p) => /\.tsx?$/.test(p)),
    );
    const byName = new Map<string, string[]>();
    for (const m of modules) byName.set(path.posix.basename(m), [...(byName.get(path.posix.basename(m)) ?? []), m]);
    // A command's file is named for the command (src/cli/runs.ts beside storage/read/runs.ts), and
    // each pipeline has its decide step (the backstop's tick, the consumer's delivery).
    const SHARED = ['index.ts', 'decide.ts'];
    const isCommand = (m: string) => /^src\/cli\/[^/]+$/.test(m);
    const twice = [...byName]
      .filter(([name, paths]) => !SHARED.includes(name) && paths.filter((m) => !isCommand(m)).length > 1)
      .map(([, paths]) => paths.sort().join(' and '));
    expect(twice, 'one name, two modules: name each for its job').toEqual([]);
  });

  it('test/unit and test/integration mirror src/ and the root emulator/ (fixtures/ folders aside)', () => {
    const mirrored = (d: string) =>
      existsSync(path.join(ROOT, 'src', d)) || (d.split('/')[0] === 'emulator' && existsSync(path.join(ROOT, d)));
    const strays = ['unit', 'integration'].flatMap((kind) =>
      subfolders(`test/${kind}`)
        .filter((d) => !d.split('/').includes('fixtures') && !mirrored(d))
        .map((d) => `test/${kind}/${d}/`),
    );
    expect(strays, 'test folders without a src/ folder of the same name').toEqual([]);
  });

  it('test/unit and test/integration hold only tests (helpers are test/helpers/<topic>.ts)', () => {
    const others = ['unit', 'integration'].flatMap((kind) => {
      const dir = path.join(ROOT, 'test', kind);
      if (!existsSync(dir)) return [];
      return (readdirSync(dir, { recursive: true }) as string[])
        .map((p) => p.split(path.sep).join('/'))
        .filter(
          (p) => statSync(path.join(dir, p)).isFile() && !/\.test\.tsx?$/.test(p) && !p.split('/').includes('fixtures'),
        )
        .map((p) => `test/${kind}/${p}`);
    });
    expect(others, 'non-test files outside fixtures/').toEqual([]);
  });
});

describe('mapPaths', () => {
  it('reads the backticked names before the dash, and stops at the next section', () => {
    const md = `# x\n\n${HEADING}\n\nIntro \`not/this\`.\n\n- \`src/a/\`, \`src/b.ts\` — two things, \`not/this\` either\n- \`bin/\` — launcher\n\n## Next\n- \`nope/\` — no\n`;
    expect(mapPaths(md)).toEqual(['src/a/', 'src/b.ts', 'bin/']);
  });

  it('rejects a list line without a path or without the separator', () => {
    expect(() => mapPaths(`${HEADING}\n- src/a/ — bare\n`.replace(/^/, '\n'))).toThrow(/without a backticked path/);
    expect(() => mapPaths(`\n${HEADING}\n- \`src/a/\` and more\n`)).toThrow(/without " — "/);
  });
});
