/**
 * Compiles the demo workflow with the Workflow DevKit builder (`@workflow/builders`, which the
 * `workflow` package brings) into `<outDir>/.well-known/workflow/v1/`.
 */
import { cpSync, existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The demo workflow source ships as TypeScript next to this module (src/ or dist/). */
function demoSource(): string {
  for (const candidate of [path.join(here, 'workflows/demo.ts'), path.join(here, '../../src/demo/workflows/demo.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('The demo workflow source (src/demo/workflows/demo.ts) is missing from this install.');
}

export async function buildDemo(outDir: string): Promise<{ flowPath: string; manifestPath: string; built: boolean }> {
  const v1 = path.join(outDir, '.well-known/workflow/v1');
  const flowPath = path.join(v1, 'flow.mjs');
  const manifestPath = path.join(v1, 'manifest.json');
  const source = demoSource();
  if (existsSync(flowPath) && existsSync(manifestPath) && statSync(flowPath).mtimeMs > statSync(source).mtimeMs) {
    return { flowPath, manifestPath, built: false };
  }
  mkdirSync(path.join(outDir, 'workflows'), { recursive: true });
  cpSync(source, path.join(outDir, 'workflows/demo.ts'));
  let builders: typeof import('@workflow/builders');
  try {
    builders = await import('@workflow/builders');
  } catch {
    throw new Error('The demo compiles a workflow and needs the `workflow` package: run `npm install` in this repository.');
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
  try {
    await builder.build();
  } finally {
    console.log = log;
    console.info = info;
  }
  return { flowPath, manifestPath, built: true };
}
