/**
 * Where the pre-bundled SQS worker lives (`npm run build` writes it, see bundle-worker.ts).
 * Resolved from the package root, so it works from `dist/src/cdk/` (the published package) and from
 * `src/cdk/` (tests run from source against a built `dist/`).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../util/package-root.js';

/** `<file>.<export>` as Lambda's `Handler` setting expects it. */
export const WORKER_HANDLER = 'index.handler';

/** The scheduled orphan sweep in the same bundle (src/sweep/sweep-handler.ts, re-exported by `/lambda`). */
export const SWEEP_HANDLER = 'index.sweepHandler';

export function workerAssetDir(): string {
  return path.join(packageRoot(), 'dist', 'lambda-worker');
}

/** The bundle directory, or a clear error saying how to produce it. */
export function requireWorkerAsset(): string {
  const dir = workerAssetDir();
  if (!existsSync(path.join(dir, `${WORKER_HANDLER.split('.')[0]}.mjs`))) {
    throw new Error(
      `eve-world-aws: the worker bundle ${dir}/index.mjs is missing. In a checkout of the package run \`npm run build\`; ` +
        'an installed package ships it. Or pass `workerCode` to EveWorldAws.',
    );
  }
  return dir;
}
