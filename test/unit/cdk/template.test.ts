/**
 * The synthesized template of `EveWorldAws`, pinned: for each prop set below, the CloudFormation
 * template (and the warnings synthesis reports) must equal the committed snapshot in
 * `fixtures/template-<case>.json`, compared as JSON with object keys sorted (array order counts).
 *
 * It guards refactors of src/cdk/: a changed logical ID makes CloudFormation replace the resource
 * on the next deploy (a new, empty table), and a changed property changes a user's stack. When a
 * change to the template is meant, rewrite the snapshots and review their diff:
 *
 *   UPDATE_TEMPLATE_SNAPSHOTS=1 npx vitest run test/unit/cdk/template.test.ts
 *
 * Normalised, and only these: asset hashes (64 hex digits; they hash the worker bundle and the
 * host image context, which change with any src/ change, not with the construct) become
 * `<asset-N>` in order of first appearance, so "the worker and the sweeper share one asset" is
 * still checked; the throwaway eve app directory becomes `<app>`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { EveWorldAws, type EveWorldAwsProps } from '../../../src/cdk/eve-world-aws.js';
import { ensureWorkerBundle, fakeEveApp, tempDir } from '../../helpers/cdk.js';

// Each case synthesizes a whole stack with asset staging: seconds on a loaded 2-core machine.
vi.setConfig({ testTimeout: 120_000 });

const ROOT = path.resolve(import.meta.dirname, '../../..');
const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const UPDATE = process.env.UPDATE_TEMPLATE_SNAPSHOTS === '1';

/** Props that need the stack (a topic, a bucket, a key of the same stack) are built from it. */
type Case = (stack: Stack) => Partial<EveWorldAwsProps>;

/** Every prop that adds, removes or changes a resource is set in at least one case. */
const CASES: Record<string, Case> = {
  defaults: () => ({}),
  // Customer-managed key created by the construct; what `cdk destroy` removes; alarm actions;
  // server access logs.
  'created-key': (stack) => ({
    kmsKey: 'create',
    removalPolicy: RemovalPolicy.DESTROY,
    deletionProtection: false,
    alarmTopic: new sns.Topic(stack, 'Alarms'),
    accessLogsBucket: new s3.Bucket(stack, 'AccessLogs'),
  }),
  // An existing key by ARN; tracing (X-Ray and ADOT with its wrapper); no dashboard; no sweeper.
  'imported-key-traced': (stack) => ({
    kmsKey: kms.Key.fromKeyArn(
      stack,
      'ExistingKey',
      'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555',
    ),
    tracing: {
      xray: true,
      adotLayerArn: 'arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-nodejs-arm64-ver-1-30-2:1',
      execWrapper: '/opt/otel-handler',
    },
    dashboard: false,
    sweepSchedule: false,
  }),
  // Every sizing and timing prop away from its default (the worker shorter than the host warns),
  // and deployment affinity off.
  tuned: () => ({
    deploymentAffinity: false,
    hostTimeout: Duration.minutes(10),
    workerTimeout: Duration.minutes(5),
    hostMemorySize: 2048,
    workerMemorySize: 512,
    visibilityTimeoutFactor: 2,
    maxReceiveCount: 4,
    batchSize: 3,
    maxBatchingWindow: Duration.seconds(2),
    maxConcurrency: 20,
    logRetention: logs.RetentionDays.ONE_WEEK,
    hostEnvironment: { MODEL_API_KEY_PARAM: '/eve/model-key' },
    oldestMessageAgeThreshold: Duration.minutes(10),
    sweepSchedule: events.Schedule.cron({ hour: '3', minute: '0' }),
    dockerfile: 'Dockerfile',
  }),
  // The host consumes its own queue (no worker), with deployment affinity (it invokes its versions).
  'host-consumer': () => ({ consumer: 'host', deploymentAffinity: true }),
  // Code supplied by the app instead of the eve directory and the package's bundle.
  'own-code': (stack) => ({
    hostCode: lambda.DockerImageCode.fromEcr(
      ecr.Repository.fromRepositoryAttributes(stack, 'Repo', {
        repositoryArn: 'arn:aws:ecr:eu-west-1:123456789012:repository/eve',
        repositoryName: 'eve',
      }),
      { tagOrDigest: 'v1' },
    ),
    workerCode: lambda.Code.fromInline('export const handler = async () => {}; export const sweepHandler = handler;'),
  }),
};

/** JSON with object keys sorted at every level: the same template always prints the same. */
function stableJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === 'object')
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    return v;
  };
  return `${JSON.stringify(sort(value), null, 2)}\n`;
}

/** Asset hashes to `<asset-N>` (first appearance order), the app directory to `<app>`. */
function normalise(text: string, appDir: string): string {
  const seen = new Map<string, string>();
  return text
    .split(appDir)
    .join('<app>')
    .replace(/[0-9a-f]{64}/g, (h) => {
      if (!seen.has(h)) seen.set(h, `<asset-${seen.size + 1}>`);
      return seen.get(h) as string;
    });
}

/** What a case synthesizes to: the template and the warnings, as the snapshot file holds them. */
function synthesize(make: Case): string {
  const app = new App({ outdir: tempDir('cdk-out-') });
  const stack = new Stack(app, 'EveStack', { env: { account: '123456789012', region: 'eu-west-1' } });
  const appDir = fakeEveApp();
  new EveWorldAws(stack, 'Eve', { app: appDir, ...make(stack) });
  const template = Template.fromStack(stack).toJSON();
  const warnings = Annotations.fromStack(stack)
    .findWarning('*', Match.anyValue())
    .map((w) => ({ path: w.id, message: String(w.entry.data) }));
  return normalise(stableJson({ warnings, template }), appDir);
}

beforeAll(async () => {
  await ensureWorkerBundle();
}, 120_000);

describe('EveWorldAws: the synthesized template is the committed snapshot', () => {
  for (const [name, make] of Object.entries(CASES)) {
    it(name, () => {
      const file = path.join(FIXTURES, `template-${name}.json`);
      const actual = synthesize(make);
      if (UPDATE) {
        writeFileSync(file, actual);
        // The committed file is in the repository's JSON format (`npm run check` reads it).
        execFileSync('npx', ['biome', 'format', '--write', file], { cwd: ROOT, stdio: 'ignore' });
      }
      expect(
        existsSync(file),
        `${file} is missing: write it with UPDATE_TEMPLATE_SNAPSHOTS=1 npx vitest run test/unit/cdk/template.test.ts`,
      ).toBe(true);
      const expected = stableJson(JSON.parse(readFileSync(file, 'utf8')));
      // Line by line: the report shows the differing lines, not two 2,000-line strings.
      expect(actual.split('\n')).toEqual(expected.split('\n'));
    });
  }

  it('normalise maps each asset hash to one placeholder and leaves other text alone', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    expect(normalise(`${a}.zip /tmp/x/app ${b} ${a} cafe`, '/tmp/x/app')).toBe(
      '<asset-1>.zip <app> <asset-2> <asset-1> cafe',
    );
  });
});
