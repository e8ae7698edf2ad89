/**
 * Build step (run by `npm run build` after `tsc`): bundles the package's `/lambda` export (the SQS
 * worker handler) with esbuild into one file, `dist/lambda-worker/index.mjs`, exported as
 * `handler`. The CDK construct deploys exactly this directory (`Code.fromAsset`), so `cdk synth`
 * needs neither esbuild nor Docker at the user's site, and the Lambda-mode end-to-end test invokes
 * the same artifact.
 *
 * Usage: `node dist/src/cdk/bundle-worker.js [outDir]`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../util/package-root.js';
import { WORKER_HANDLER, workerAssetDir } from './worker-asset.js';

/**
 * Bundle the worker into `<outDir>/index.mjs`. `entry` defaults to the package's `/lambda` export
 * (the compiled `dist/` file); tests pass the TypeScript source instead.
 */
export async function bundleWorker(packageRoot: string, outDir: string, entry?: string): Promise<string> {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as {
    exports: Record<string, { import: string }>;
  };
  entry ??= path.join(packageRoot, pkg.exports['./lambda'].import);
  const { build } = await import('esbuild');
  const outfile = path.join(outDir, `${WORKER_HANDLER.split('.')[0]}.mjs`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    // The AWS SDK and a few dependencies are CommonJS and `require()` Node built-ins.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    legalComments: 'none',
    logLevel: 'warning',
  });
  return outfile;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const out = process.argv[2] ? path.resolve(process.argv[2]) : workerAssetDir();
  bundleWorker(packageRoot(), out).then(
    (file) => process.stdout.write(`worker bundle: ${path.relative(process.cwd(), file)}\n`),
    (err) => {
      process.stderr.write(`worker bundle failed: ${String(err)}\n`);
      process.exit(1);
    },
  );
}
