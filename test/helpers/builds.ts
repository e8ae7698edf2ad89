/**
 * Other builds of this package, for the format tests (test/e2e/upgrade.test.ts,
 * test/integration/formats.test.ts): the previous release built from a pinned git ref, this
 * checkout's build, and a "bumped" build (this checkout with every format constant of
 * src/schema/formats.ts raised by one, as the next format would).
 *
 * Each build is `src/` (and `emulator/`, where the ref has it at the root) transpiled file by file with esbuild (the package's own devDependency; a
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
  /** `file:` URL of its World entry (dist/src/index.js; dist/index.js in a build from before dist/ mirrored the root). */
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

/**
 * Transpile `<dir>/src` (and `<dir>/emulator`) as `npm run build` lays them out, and link
 * node_modules; returns the build. A tree with a root `emulator/` builds to `dist/src/` and
 * `dist/emulator/`; an older tree (its emulator under src/) to a flat `dist/`.
 */
async function transpile(dir: string): Promise<Build> {
  const rootEmulator = existsSync(path.join(dir, 'emulator'));
  await build({
    entryPoints: [...walk(path.join(dir, 'src')), ...(rootEmulator ? walk(path.join(dir, 'emulator')) : [])],
    outdir: path.join(dir, 'dist'),
    outbase: rootEmulator ? dir : path.join(dir, 'src'),
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

/** The folder of a build's compiled src/: `dist/src/`, or `dist/` in a build from before dist/ mirrored the root. */
function srcOut(dir: string): string {
  return existsSync(path.join(dir, 'dist', 'src', 'index.js')) ? path.join(dir, 'dist', 'src') : path.join(dir, 'dist');
}

function asBuild(dir: string): Build {
  const index = path.join(srcOut(dir), 'index.js');
  if (!existsSync(index)) throw new Error(`the build in ${dir} has no dist/src/index.js (nor dist/index.js)`);
  const cli = path.join(dir, 'cli.mjs');
  const main = `./${path
    .relative(dir, path.join(srcOut(dir), 'cli', 'main.js'))
    .split(path.sep)
    .join('/')}`;
  if (!existsSync(cli)) writeFileSync(cli, `const { run } = await import('${main}');\nawait run();\n`);
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
  if (existsSync(path.join(dir, 'dist', 'index.js')) || existsSync(path.join(dir, 'dist', 'src', 'index.js')))
    return asBuild(dir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync('git', ['archive', '--format=tar', commit, 'src', 'package.json', ...emulatorAt(commit)], {
    cwd: root,
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return transpile(dir);
}

/** `['emulator']` when `commit` has the emulator's code at the root (git archive fails on a missing path). */
function emulatorAt(commit: string): string[] {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}:emulator/stack.ts`], { cwd: root, stdio: 'ignore' });
    return ['emulator'];
  } catch {
    return [];
  }
}

/** This checkout's src/ (and emulator/) as a build of its own (rebuilt every call: seconds). */
export async function buildCurrent(name = 'current'): Promise<Build> {
  const dir = path.join(cache, `${name}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('cp', ['-R', path.join(root, 'src'), path.join(dir, 'src')]);
  execFileSync('cp', ['-R', path.join(root, 'emulator'), path.join(dir, 'emulator')]);
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
  const file = path.join(srcOut(b.dir), 'schema', 'formats.js');
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
