/**
 * Helpers for the construct tests: a throwaway eve app directory holding the generated
 * Dockerfile, the worker bundle at the place the construct deploys it from, and a stack factory.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll } from 'vitest';
import { bundleWorker } from '../../src/cdk/bundle-worker.js';
import { hostDockerfile } from '../../src/cdk/dockerfile.js';
import { EveWorldAws, type EveWorldAwsProps } from '../../src/cdk/eve-world-aws.js';
import { workerAssetDir } from '../../src/cdk/worker-asset.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const made: string[] = [];
/** A temporary directory, removed when the test file ends (pass or fail). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Produce the worker bundle where the construct takes it from (what `npm run build` does). */
export async function ensureWorkerBundle(): Promise<string> {
  const file = path.join(workerAssetDir(), 'index.mjs');
  if (!existsSync(file)) await bundleWorker(repoRoot, workerAssetDir(), path.join(repoRoot, 'src/lambda/index.ts'));
  return file;
}

/** An eve app directory with only the generated Dockerfile (no `eve build` output). */
export function fakeEveApp(): string {
  const dir = tempDir('eve-app-');
  writeFileSync(path.join(dir, 'Dockerfile'), hostDockerfile());
  return dir;
}

export function makeStack(props: Partial<EveWorldAwsProps> = {}, app = new App({ outdir: tempDir('cdk-out-') })) {
  const stack = new Stack(app, 'EveStack', { env: { account: '123456789012', region: 'eu-west-1' } });
  const construct = new EveWorldAws(stack, 'Eve', { app: fakeEveApp(), ...props });
  return { app, stack, construct };
}
