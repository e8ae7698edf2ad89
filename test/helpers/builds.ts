/**
 * Other builds of this package, for the format tests (test/e2e/upgrade.test.ts,
 * test/integration/formats.test.ts): the previous release built from a pinned git ref, this
 * checkout's build, and a "bumped" build (this checkout with every format constant of
 * src/schema/formats.ts raised by one, as the next format would).
 *
 * Each build is `src/` transpiled file by file with esbuild (the package's own devDependency; a
 * type check is `npm run typecheck`'s job, and it takes a minute on a loaded machine where this
 * takes seconds) into a folder under node_modules/.cache/eve-world-aws/builds/, with a
 * `node_modules` link to this checkout's, so its imports resolve to the same pinned packages.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cache = path.join(root, 'node_modules', '.cache', 'eve-world-aws', 'builds');

/**
 * The previous release the rolling-upgrade test runs against: the main head before format
 * versions (pair log items and early delivery, no format stamps: everything it writes is format 1).
 */
export const PREVIOUS_REF = '5dbee8f';

export interface Build {
  /** The build's root folder (holds dist/ and a node_modules link). */
  dir: string;
  /** `file:` URL of its dist/index.js. */
  indexUrl: string;
  /** Its CLI launcher: `node <cli> <command> ...` runs the build's `eve-world-aws`. */
  cli: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) return n === 'workflows' ? [] : walk(p); // demo sources ship as is
    return /\.tsx?$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

/** Transpile `<dir>/src` to `<dir>/dist` and link node_modules; returns the build. */
async function transpile(dir: string): Promise<Build> {
  await build({
    entryPoints: walk(path.join(dir, 'src')),
    outdir: path.join(dir, 'dist'),
    outbase: path.join(dir, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    jsx: 'automatic',
    logLevel: 'error',
  });
  const link = path.join(dir, 'node_modules');
  if (!existsSync(link)) symlinkSync(path.join(root, 'node_modules'), link, 'dir');
  return asBuild(dir);
}

function asBuild(dir: string): Build {
  const index = path.join(dir, 'dist', 'index.js');
  if (!existsSync(index)) throw new Error(`the build in ${dir} has no dist/index.js`);
  const cli = path.join(dir, 'cli.mjs');
  if (!existsSync(cli)) writeFileSync(cli, "const { run } = await import('./dist/cli/main.js');\nawait run();\n");
  return { dir, indexUrl: pathToFileURL(index).href, cli };
}

/**
 * The build of git ref `ref` of this repository (kept in the cache once built). Fails loudly, never
 * skips, when the ref is not in the clone: the upgrade test must run against the real previous build.
 */
export async function buildRef(ref: string = PREVIOUS_REF): Promise<Build> {
  let commit: string;
  try {
    commit = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
  } catch (err) {
    throw new Error(
      `git ref ${ref} (the previous build the rolling-upgrade test runs) is not in this clone: fetch the full history (git fetch --unshallow) (${String(err)})`,
    );
  }
  const dir = path.join(cache, commit);
  if (existsSync(path.join(dir, 'dist', 'index.js'))) return asBuild(dir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync('git', ['archive', '--format=tar', commit, 'src', 'package.json'], {
    cwd: root,
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return transpile(dir);
}

/** This checkout's src/ as a build of its own (rebuilt every call: seconds). */
export async function buildCurrent(name = 'current'): Promise<Build> {
  const dir = path.join(cache, `${name}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('cp', ['-R', path.join(root, 'src'), path.join(dir, 'src')]);
  writeFileSync(path.join(dir, 'package.json'), readFileSync(path.join(root, 'package.json')));
  return transpile(dir);
}

/** The constants of src/schema/formats.ts a bumped build raises, and to what (relative to this build). */
const BUMPS = ['LOG_FORMAT', 'RECORD_FORMAT', 'MESSAGE_FORMAT', 'READER_FORMAT', 'MIN_READER_OF_WRITES'] as const;

/**
 * This checkout with the next format: every family's current format and the reader version one
 * higher, and writes that need that reader (as a major format change would). Returns the build and
 * its formats.
 */
export async function buildBumped(): Promise<Build & { format: number }> {
  const b = await buildCurrent('bumped');
  const file = path.join(b.dir, 'dist', 'formats.js');
  let text = readFileSync(file, 'utf8');
  const reader = Number(/const READER_FORMAT = (\d+);/.exec(text)?.[1]);
  if (!Number.isInteger(reader)) throw new Error(`READER_FORMAT not found in ${file}`);
  const format = reader + 1;
  for (const name of BUMPS) {
    const re = new RegExp(`const ${name} = \\d+;`);
    if (!re.test(text))
      throw new Error(`${name} not found in ${file}: src/schema/formats.ts must keep one \`const X = n;\` each`);
    text = text.replace(re, `const ${name} = ${format};`);
  }
  writeFileSync(file, text);
  return { ...b, format };
}

/** Remove a build made by {@link buildCurrent} or {@link buildBumped} (the ref builds stay cached). */
export function removeBuild(b: Build): void {
  if (path.basename(b.dir).includes(`-${process.pid}`)) rmSync(b.dir, { recursive: true, force: true });
}
