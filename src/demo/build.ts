/**
 * Compiles the demo workflow with the Workflow DevKit builder (`@workflow/builders`) into
 * `<outDir>/.well-known/workflow/v1/`.
 *
 * The source ships in the package (`src/demo/workflows/demo.ts`, listed in package.json "files"),
 * so the demo works from an installed tarball. `workflow` and `@workflow/builders` are optional
 * peer dependencies (the CLI checks them first, see src/cli/peers.ts).
 *
 * Where: the bundle imports `workflow/internal/...`, so it must sit where `workflow` resolves and
 * resolve to the same copy the demo command uses (core keeps the World in a process global). The
 * default is `node_modules/.cache/eve-world-aws/demo-build/<hash>` in the node_modules that holds
 * `workflow`; the hash covers the source and the `workflow` version, so an upgrade rebuilds and an
 * unchanged demo reuses the bundle. Nothing is written into this package's own directory.
 *
 * The builder resolves `workflowManifestPath` against `process.cwd()` and SWC keeps its plugin
 * cache in `<cwd>/.swc`, whatever `workingDir` says: the build runs with the process inside the
 * build directory, so nothing lands in the folder the user ran the command from.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../util/package-root.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The demo workflow source: src/demo/workflows/demo.ts (shipped as source; the build runs from dist/src/demo/). */
function demoSource(): string {
  for (const candidate of [
    path.join(here, 'workflows/demo.ts'),
    path.join(packageRoot(), 'src/demo/workflows/demo.ts'),
  ]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(
    'The demo workflow source (src/demo/workflows/demo.ts) is missing from this install; reinstall @portfolio/eve-world-aws.',
  );
}

/**
 * The directory of the `workflow` package that `import('workflow/...')` from here loads: the first
 * `node_modules/workflow` walking up, as Node resolves a bare name (its "exports" hide
 * package.json).
 */
function workflowPackageDir(): string {
  for (let dir = here; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', 'workflow');
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir)
      throw new Error('The demo needs the `workflow` package: `npm i -D workflow@5.0.0-beta.55`.');
  }
}

/** The default build directory (see the module comment). */
function defaultDemoBuildDir(): string {
  const workflowDir = workflowPackageDir();
  const { version } = JSON.parse(readFileSync(path.join(workflowDir, 'package.json'), 'utf8')) as { version: string };
  const hash = createHash('sha256')
    .update(version)
    .update('\0')
    .update(readFileSync(demoSource()))
    .digest('hex')
    .slice(0, 12);
  return path.join(path.dirname(workflowDir), '.cache', 'eve-world-aws', 'demo-build', hash);
}

export async function buildDemo(
  buildDir: string = defaultDemoBuildDir(),
): Promise<{ flowPath: string; manifestPath: string; built: boolean }> {
  const outDir = path.resolve(buildDir);
  const v1 = path.join(outDir, '.well-known/workflow/v1');
  const flowPath = path.join(v1, 'flow.mjs');
  const manifestPath = path.join(v1, 'manifest.json');
  const source = demoSource();
  // Written after a successful build, so a build interrupted half-way is redone.
  const complete = path.join(outDir, '.complete');
  if (existsSync(complete) && existsSync(flowPath) && existsSync(manifestPath))
    return { flowPath, manifestPath, built: false };
  mkdirSync(path.join(outDir, 'workflows'), { recursive: true });
  cpSync(source, path.join(outDir, 'workflows/demo.ts'));
  let builders: typeof import('@workflow/builders');
  try {
    builders = await import('@workflow/builders');
  } catch {
    throw new Error(
      'The demo compiles a workflow with `@workflow/builders`, which is not installed: `npm i -D @workflow/builders@5.0.0-beta.55`.',
    );
  }
  const builder = new builders.StandaloneBuilder({
    dirs: ['./workflows'],
    workingDir: outDir,
    buildTarget: 'standalone',
    stepsBundlePath: './.well-known/workflow/v1/__step_registrations.mjs',
    workflowsBundlePath: './.well-known/workflow/v1/flow.mjs',
    webhookBundlePath: './.well-known/workflow/v1/webhook.mjs',
    workflowManifestPath: './.well-known/workflow/v1/manifest.json',
  } as never);
  // The builder reports progress with console.log: keep stdout for the command's own output
  // (e.g. `demo --json`), and send the builder's lines to stderr.
  const { log, info } = console;
  console.log = console.info = (...args: unknown[]) => console.error(...args);
  const cwd = process.cwd();
  process.chdir(outDir);
  try {
    await builder.build();
  } finally {
    process.chdir(cwd);
    console.log = log;
    console.info = info;
  }
  writeFileSync(complete, `${new Date().toISOString()}\n`);
  return { flowPath, manifestPath, built: true };
}
