/**
 * This checkout's dist/, which the child processes of the e2e tests load (and the CLI tests run).
 * The global setup (test/setup/global.ts) builds it once per run, before any test, when the run
 * includes a test that needs it; {@link ensureDist} is the check each such test makes, and builds
 * (incrementally, as the setup does) only when a source is newer than every output, e.g. a test
 * file run by path right after an edit. Building in the setup keeps the cost out of the first
 * test that spawns a child (on a busy machine a full build took minutes of its timeout) and keeps
 * two files running in parallel from building the same dist/ at once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The tsc command line of the dist/ build, incremental: its build info lives outside dist/ (which
 * is published) and is forgotten when dist/ is gone, or tsc would take the deleted outputs for
 * up to date.
 */
export function distBuildArgs(): string[] {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const info = path.join(root, 'node_modules', '.cache', 'eve-world-aws', 'tsbuildinfo');
  if (!existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js'))) rmSync(info, { force: true });
  return [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', info];
}

/** The newest modification time of the files under `dir` whose name matches `re`. */
function newestMtime(dir: string, re: RegExp): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    // The demo's workflow ships as source (tsconfig.build.json excludes it).
    if (e.isDirectory())
      newest = p.endsWith(path.join('demo', 'workflows')) ? newest : Math.max(newest, newestMtime(p, re));
    else if (re.test(e.name)) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

const SOURCE = /\.tsx?$/;
const OUTPUT = /\.js$/;

/**
 * Whether dist/ is as new as src/ and emulator/: tsc's newest output is newer than the newest
 * source (an incremental build rewrites only the outputs of changed sources, so dist/src/index.js
 * alone says nothing).
 */
export function distIsFresh(): boolean {
  // Only tsc's outputs: dist/lambda-worker/ is bundled separately (and by the CDK tests on their own).
  const dist = path.join(root, 'dist');
  if (!existsSync(path.join(dist, 'src', 'index.js')) || !existsSync(path.join(dist, 'emulator'))) return false;
  const outputs = Math.max(
    newestMtime(path.join(dist, 'src'), OUTPUT),
    newestMtime(path.join(dist, 'emulator'), OUTPUT),
  );
  const sources = Math.max(
    newestMtime(path.join(root, 'src'), SOURCE),
    newestMtime(path.join(root, 'emulator'), SOURCE),
  );
  return outputs >= sources;
}

/** dist/src/index.js as a `file:` URL, built first when it is missing or older than a source. */
export function ensureDist(): string {
  const index = path.join(root, 'dist', 'src', 'index.js');
  if (!distIsFresh()) {
    const r = spawnSync(process.execPath, distBuildArgs(), { cwd: root, encoding: 'utf8' });
    if (!existsSync(index)) throw new Error(`building dist/ for the child processes failed:\n${r.stdout}${r.stderr}`);
  }
  return pathToFileURL(index).href;
}
