// Compiles test/e2e/app/workflows with the Workflow DevKit builder (pinned 5.0.0-beta.55) into
// test/e2e/app/.well-known/workflow/v1/{flow.mjs,webhook.mjs,manifest.json}.
// Skips the build when the output is newer than every workflow source.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StandaloneBuilder } from '@workflow/builders';

const appDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'app');

export async function buildE2eApp({ force = false } = {}) {
  const flow = path.join(appDir, '.well-known/workflow/v1/flow.mjs');
  const manifest = path.join(appDir, '.well-known/workflow/v1/manifest.json');
  const sources = readdirSync(path.join(appDir, 'workflows')).map((f) => path.join(appDir, 'workflows', f));
  const newest = Math.max(...sources.map((f) => statSync(f).mtimeMs));
  if (!force && existsSync(flow) && existsSync(manifest) && statSync(flow).mtimeMs > newest) return appDir;
  const builder = new StandaloneBuilder({
    dirs: ['./workflows'],
    workingDir: appDir,
    buildTarget: 'standalone',
    stepsBundlePath: './.well-known/workflow/v1/__step_registrations.mjs',
    workflowsBundlePath: './.well-known/workflow/v1/flow.mjs',
    webhookBundlePath: './.well-known/workflow/v1/webhook.mjs',
    // Absolute: the builder resolves this one against process.cwd(), not workingDir, and wrote its
    // interim manifest into the repository root. Here it is the file the final manifest replaces.
    workflowManifestPath: manifest,
  });
  await builder.build();
  return appDir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const t = Date.now();
  await buildE2eApp({ force: process.argv.includes('--force') });
  console.log(`built ${appDir} in ${Date.now() - t} ms`);
}
