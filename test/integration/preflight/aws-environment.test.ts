/**
 * The environment's three mistakes through the public API (src/preflight/aws-environment.ts):
 * an endpoint where nothing answers (a free port with nothing listening), no region and no
 * credentials each end `world.start()` (an app), and core's `start()` and `resumeHook()` in a
 * process that never calls `world.start()` (a script), with one AwsEnvironmentError naming what
 * is wrong and the fix, printed first by the dying process, never the SDK's raw error (which
 * stays its `cause`).
 *
 * The processes are real (test/helpers/script-child.mjs on dist/, configured from the
 * environment only), so the region and credentials the SDK finds are only the ones given: no
 * profile files (an empty HOME), no instance metadata (AWS_EC2_METADATA_DISABLED), and with no
 * region or no credentials the SDK fails before it opens a connection. Against the real emulator,
 * a World whose table answers and whose SQS and S3 do not names only the endpoint that is down.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../emulator/stack.js';
import { loadConfig } from '../../../src/config/index.js';
import { AwsEnvironmentError, createWorld, MissingResourceError } from '../../../src/index.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';
import { ensureDist } from '../../helpers/faults-suite.js';

const child = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'helpers', 'script-child.mjs');

let fx: Fixture;
let home: string;
let distUrl: string;
beforeAll(async () => {
  distUrl = ensureDist();
  fx = await createFixture({}, 'env');
  home = mkdtempSync(path.join(tmpdir(), 'eve-world-aws-env-'));
});
afterAll(() => {
  fx?.clients.ddb.destroy();
  fx?.clients.sqs.destroy();
  if (home) rmSync(home, { recursive: true, force: true });
});

/** A loopback URL where nothing listens. */
const closedEndpoint = async () => `http://127.0.0.1:${await freePort()}`;

interface Died {
  code: number | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

/**
 * Run the child in `mode` with exactly `env` (plus PATH), as a user's process with only that
 * environment would run.
 */
function runChild(mode: (typeof MODES)[number][0], env: Record<string, string>): Promise<Died> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, distUrl, mode], {
      cwd: home,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        AWS_CONFIG_FILE: path.join(home, 'no-config'),
        AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'no-credentials'),
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    p.once('error', reject);
    p.once('close', (code) =>
      resolve({ code, stdout, stderr, elapsedMs: Number(/elapsed (\d+)/.exec(stdout)?.[1] ?? Number.NaN) }),
    );
  });
}

/** What the dying process printed first is our error, not the SDK's. */
function expectDiedOf(r: Died, text: RegExp, raw: string): void {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).not.toMatch(/^started /m);
  const first = r.stderr.indexOf('AwsEnvironmentError: eve-world-aws: ');
  expect(first, r.stderr).toBeGreaterThanOrEqual(0);
  expect(r.stderr.slice(first).split('\n')[0]).toMatch(text);
  // The SDK's error is there only as the cause, after ours.
  expect(r.stderr.indexOf(raw)).toBeGreaterThan(first);
}

const MODES = [
  ['app', 'world.start()'],
  ['script', "core's start() in a process that never calls world.start()"],
  ['resume', "core's resumeHook() in such a process (its first call is a read)"],
] as const;

describe.each(MODES)('%s: %s', (mode) => {
  it('no region anywhere: "no AWS region configured" and how to set one', async () => {
    const r = await runChild(mode, {});
    expectDiedOf(
      r,
      /^AwsEnvironmentError: eve-world-aws: no AWS region configured\. Set AWS_REGION \(e\.g\. AWS_REGION=us-east-1\) or a profile region/,
      'Region is missing',
    );
  });

  it('no credentials: "no AWS credentials found" and where they come from', async () => {
    const r = await runChild(mode, { AWS_REGION: 'us-east-1' });
    expectDiedOf(
      r,
      /^AwsEnvironmentError: eve-world-aws: no AWS credentials found \(.+\)\. Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/,
      'CredentialsProviderError',
    );
  });

  it('nothing listening at the endpoints: the URL, the socket error and "Is the emulator running?"', async () => {
    const dead = await closedEndpoint();
    const r = await runChild(mode, { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL: dead });
    expectDiedOf(
      r,
      new RegExp(
        // The preflight knows which services it asked; a read (resumeHook's) knows the address it tried.
        `^AwsEnvironmentError: eve-world-aws: cannot reach the AWS endpoint ${dead}${mode === 'resume' ? '' : ' \\(DynamoDB, SQS, S3\\)'}: ECONNREFUSED after 8 attempts\\. Is the emulator running\\? Start it with \`eve-world-aws emulate\``,
      ),
      'connect ECONNREFUSED',
    );
    // How long the SDK's 8 attempts took (jittered backoff from 50 ms: about 3 s, at most 6.4 s).
    console.log(`${mode}: unreachable endpoint reported after ${r.elapsedMs} ms`);
  });
});

describe('world.start() in this process, against the real emulator', () => {
  it('the table answers but SQS and S3 do not: only their endpoint is named, the error is the exported class', async () => {
    const dead = await closedEndpoint();
    const world = createWorld({
      config: loadConfig({ ...fx.env, AWS_ENDPOINT_URL_SQS: dead, AWS_ENDPOINT_URL_S3: dead }),
      consumer: { consumer: 'none' },
    });
    try {
      const err = await world.start().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AwsEnvironmentError);
      const e = err as AwsEnvironmentError;
      expect(e.problem).toBe('unreachable');
      expect(e.details).toBe(`cannot reach the AWS endpoint ${dead} (SQS, S3): ECONNREFUSED after 8 attempts`);
      expect(e.message).toBe(`eve-world-aws: ${e.details}. ${e.fix}`);
      expect(e.message).not.toContain(fx.env.AWS_ENDPOINT_URL_DYNAMODB);
      expect((e.cause as { code?: string }).code).toBe('ECONNREFUSED');
    } finally {
      await world.close();
    }
  });

  it('a missing resource is still a MissingResourceError, and the same World with its endpoints right starts', async () => {
    // The checks above can fail: the preflight tells "down" from "does not exist" from "fine".
    const missing = createWorld({
      config: loadConfig({ ...fx.env, EVE_WORLD_AWS_TABLE: `${fx.config.tableName}-typo` }),
      consumer: { consumer: 'none' },
    });
    const fine = createWorld({ config: fx.config, consumer: { consumer: 'none' } });
    try {
      await expect(missing.start()).rejects.toThrow(MissingResourceError);
      await expect(fine.start()).resolves.toBeUndefined();
    } finally {
      await missing.close();
      await fine.close();
    }
  });
});
