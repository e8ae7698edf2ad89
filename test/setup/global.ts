/**
 * Starts the embedded emulator stack once per test run (free loopback ports, so parallel runs do
 * not collide) and always stops it. Test files read the endpoints with `inject('stack')`.
 *
 * In parallel with the stack start it also
 * - compiles src/ to dist/, because the CLI tests spawn the real `bin/eve-world-aws`, which runs
 *   dist/, the package test packs dist/, and e2e tests spawn processes on it (test/helpers/dist.ts).
 *   Incremental (a no-op when nothing changed), only when the run includes a test under a cli/,
 *   package/, e2e/ or preflight/ folder, and skipped with EVE_WORLD_AWS_SKIP_BUILD=1 (e.g. right
 *   after `npm run build` in CI). Here, once, and not in the first test that needs it: on a busy
 *   machine a build took minutes of that test's timeout, and files in parallel built it at once;
 * - compiles the e2e workflows (test/e2e/app) with the Workflow DevKit builder, only when the run
 *   includes test/e2e/, and only when a workflow source is newer than the bundle. Doing it here,
 *   once, keeps e2e files that run in parallel from building the same bundle at the same time.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { type Stack, startStack } from '../../emulator/stack.js';
import { distBuildArgs } from '../helpers/dist.js';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: { env: Record<string, string>; dynamodbPid: number };
  }
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Every `*.test.ts(x)` under `dir`, never descending into node_modules: an installed app there
 * (test/eve/app after `npm run test:eve:setup`) is huge and may link back into the tree, so a
 * recursive readdir of it never ends.
 */
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules' || e.name.startsWith('.')) return [];
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return /\.test\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/**
 * Whether this run includes a test file whose path (relative to test/) matches `re`. Vitest keeps
 * the CLI filters on an internal field; when it is not there (or there are none), assume yes.
 */
function runsTestsMatching(project: TestProject, re: RegExp): boolean {
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  if (!Array.isArray(filters) || filters.length === 0) return true;
  const testDir = path.join(root, 'test');
  const files = testFiles(testDir);
  return files.some((abs) => {
    const rel = path.relative(root, abs);
    const selected = filters.some((f) => abs.includes(f) || rel.includes(f.replace(/^\.\//, '')));
    return selected && re.test(path.relative(testDir, abs).split(path.sep).join('/'));
  });
}

/**
 * Tests that run the real CLI (bin/eve-world-aws runs dist/), pack the package (ships dist/) or
 * spawn processes on dist/ (the e2e children, integration/preflight/'s scripts: test/helpers/dist.ts).
 */
const NEEDS_DIST = /(^|\/)(cli|package|e2e|preflight)\//;
/** Tests that load the e2e workflows compiled from test/e2e/app. */
const NEEDS_E2E_APP = /^e2e\//;

/** Build dist/ once per run. Type errors do not stop the tests (typecheck is its own CI step). */
async function build(project: TestProject): Promise<void> {
  if (process.env.EVE_WORLD_AWS_SKIP_BUILD === '1' || !runsTestsMatching(project, NEEDS_DIST)) return;
  const args = distBuildArgs();
  let out = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (!existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error(`Building dist/ failed (tsc exit ${code}):\n${out}`);
  }
  if (code !== 0) {
    const errors = out.split('\n').filter((l) => /error TS\d+/.test(l));
    console.warn(
      `[global setup] tsc: ${errors.length} type error(s), dist/ emitted anyway (npm run typecheck has the details):\n${errors
        .slice(0, 5)
        .map((l) => l.slice(0, 200))
        .join('\n')}`,
    );
  }
}

async function buildE2e(project: TestProject): Promise<void> {
  if (!runsTestsMatching(project, NEEDS_E2E_APP)) return;
  const { buildE2eApp } = (await import(path.join(root, 'test', 'e2e', 'build.mjs'))) as {
    buildE2eApp: () => Promise<string>;
  };
  await buildE2eApp();
}

let stack: Stack | undefined;

export async function setup(project: TestProject) {
  const built = Promise.all([build(project), buildE2e(project)]);
  built.catch(() => {}); // awaited below; do not let an early failure become unhandled
  stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 60 });
  try {
    await built;
  } catch (err) {
    await stack.stop();
    throw err;
  }
  project.provide('stack', { env: stack.env, dynamodbPid: stack.dynamodbPid });
  return async () => {
    await stack?.stop();
  };
}
