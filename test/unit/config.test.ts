/** Unit tests for src/config/: defaults, derived names, validation messages, immutability. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  applyCoreDefaults,
  assertDeliveriesSafe,
  ConfigError,
  closestVariable,
  ENV_DOCS,
  isLoopbackUrl,
  loadConfig,
  nameChosenBy,
  secretWeakness,
  TUNING,
  TUNING_DOCS,
  unsignedWarning,
  VARIABLES,
  variableWarnings,
  variableWarningsOnce,
  type WorldTuning,
  withTuning,
} from '../../src/config/index.js';
import { SRC, sourceFiles, stripComments } from '../helpers/imports.js';

/** A secret that meets the strength rule (64 hex characters, like `openssl rand -hex 32`). */
const STRONG = 'f3a1c9e04b7d2e68a5c1f09b3d7e4a2c6b8d0e1f2a3b4c5d6e7f8091a2b3c4d5';
const STRONG_OLD = '9c0e5d1b7a3f2c4e6d8b0a1c3e5f7d9b2a4c6e8f0d1b3a5c7e9f2d4b6a8c0e1f';

function configError(env: Record<string, string>, tuning: Partial<WorldTuning> = {}): ConfigError {
  try {
    loadConfig(env, tuning);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('has sensible defaults for an empty environment', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      region: undefined,
      prefix: 'eve-world',
      tableName: 'eve-world',
      queue: 'eve-world-queue',
      deadLetterQueue: 'eve-world-dlq',
      bucket: 'eve-world-payloads',
      payloadThresholdBytes: 300_000,
      storageInlineBytes: 16_384,
      streamPollMs: 50,
      streamIdlePollMs: 1000,
      streamFlushMs: 0,
      streamBurstMs: 60,
      signingSecrets: [],
      allowUnsigned: false,
      allowInsecureFlowUrl: false,
      flowUrl: undefined,
      port: 3000,
      inLambda: false,
      emulatorCredentials: undefined,
      retentionDays: undefined,
      consumerConcurrency: 8,
      maxDelayHopSeconds: 900,
      idempotencyTtlSeconds: 604_800,
      visibilityTimeoutSeconds: 900,
      consumerVisibilitySeconds: 30,
      connectTimeoutMs: 3000,
      requestTimeoutMs: 15_000,
      maxReceiveCount: 10,
      schedulerRoleArn: undefined,
      // This World's own group, named from the prefix like the table: not the account's shared `default`.
      schedulerGroup: 'eve-world',
      deploymentId: undefined,
      deploymentAffinity: 'auto',
      lambdaFunction: undefined,
    });
    expect(c.endpoints).toEqual({ dynamodb: undefined, sqs: undefined, s3: undefined, scheduler: undefined });
  });

  it('derives every resource name from EVE_WORLD_AWS_PREFIX; explicit names win', () => {
    expect(loadConfig({ EVE_WORLD_AWS_PREFIX: 'my-agent' })).toMatchObject({
      tableName: 'my-agent',
      queue: 'my-agent-queue',
      deadLetterQueue: 'my-agent-dlq',
      bucket: 'my-agent-payloads',
      schedulerGroup: 'my-agent',
    });
    // The shared `default` group only when chosen explicitly.
    expect(
      loadConfig({ EVE_WORLD_AWS_PREFIX: 'my-agent', EVE_WORLD_AWS_SCHEDULER_GROUP: 'default' }).schedulerGroup,
    ).toBe('default');
    expect(
      loadConfig({ EVE_WORLD_AWS_PREFIX: 'my-agent', EVE_WORLD_AWS_SCHEDULER_GROUP: 'Team.waits_1' }).schedulerGroup,
    ).toBe('Team.waits_1');
    expect(
      loadConfig({
        EVE_WORLD_AWS_PREFIX: 'my-agent',
        EVE_WORLD_AWS_TABLE: 'Runs_2024.v1',
        EVE_WORLD_AWS_BUCKET: 'org.payloads',
      }),
    ).toMatchObject({ tableName: 'Runs_2024.v1', queue: 'my-agent-queue', bucket: 'org.payloads' });
  });

  it('accepts a queue as a name or as a URL (trailing slash trimmed)', () => {
    const url = 'https://sqs.eu-west-1.amazonaws.com/123456789012/agent-queue';
    const c = loadConfig({ EVE_WORLD_AWS_QUEUE: 'agent_q-1', EVE_WORLD_AWS_DLQ: `${url}/` });
    expect(c.queue).toBe('agent_q-1');
    expect(c.deadLetterQueue).toBe(url);
  });

  it('reads region (AWS_DEFAULT_REGION as fallback) and endpoints (per-service over AWS_ENDPOINT_URL)', () => {
    expect(loadConfig({ AWS_DEFAULT_REGION: 'eu-central-1' }).region).toBe('eu-central-1');
    expect(loadConfig({ AWS_REGION: 'us-west-2', AWS_DEFAULT_REGION: 'eu-central-1' }).region).toBe('us-west-2');
    const c = loadConfig({
      AWS_ENDPOINT_URL: 'http://127.0.0.1:4566/',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000',
    });
    expect(c.endpoints).toEqual({
      dynamodb: 'http://127.0.0.1:8000',
      sqs: 'http://127.0.0.1:4566',
      s3: 'http://127.0.0.1:4566',
      scheduler: 'http://127.0.0.1:4566',
      kms: 'http://127.0.0.1:4566',
      secretsManager: 'http://127.0.0.1:4566',
      lambda: 'http://127.0.0.1:4566',
    });
  });

  it('accepts a KMS key as id, ARN, alias or alias ARN, and names the variable otherwise', () => {
    expect(loadConfig({}).kmsKeyId).toBeUndefined();
    for (const id of [
      '1234abcd-12ab-34cd-56ef-1234567890ab',
      'mrk-1234abcd12ab34cd56ef1234567890ab',
      'alias/eve-world',
      'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
      'arn:aws-us-gov:kms:us-gov-west-1:123456789012:alias/eve-world',
    ]) {
      expect(loadConfig({ EVE_WORLD_AWS_KMS_KEY_ID: id }).kmsKeyId).toBe(id);
    }
    for (const bad of ['my-key', 'alias/', 'arn:aws:kms:us-east-1:123:key/x', 'aws/dynamodb']) {
      expect(() => loadConfig({ EVE_WORLD_AWS_KMS_KEY_ID: bad })).toThrow(
        /EVE_WORLD_AWS_KMS_KEY_ID is not a KMS key id.*Example: EVE_WORLD_AWS_KMS_KEY_ID=alias\//,
      );
    }
  });

  it('treats blank values as unset', () => {
    expect(loadConfig({ EVE_WORLD_AWS_PREFIX: '  ', EVE_WORLD_AWS_CONCURRENCY: '' })).toMatchObject({
      prefix: 'eve-world',
      consumerConcurrency: 8,
    });
  });

  it('parses numbers within their bounds', () => {
    const c = loadConfig(
      { EVE_WORLD_AWS_CONCURRENCY: '32', EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '3', EVE_WORLD_AWS_RETENTION_DAYS: '1' },
      { streamPollMs: 20, streamBurstMs: 0 },
    );
    expect(c).toMatchObject({
      consumerConcurrency: 32,
      maxReceiveCount: 3,
      retentionDays: 1,
      streamPollMs: 20,
      streamBurstMs: 0,
    });
  });

  it('reads PORT, AWS_LAMBDA_FUNCTION_NAME and static credentials (for emulators), so no component reads the environment', () => {
    const c = loadConfig({
      PORT: '8080',
      AWS_LAMBDA_FUNCTION_NAME: 'worker',
      AWS_ACCESS_KEY_ID: 'a',
      AWS_SECRET_ACCESS_KEY: 'b',
    });
    expect(c).toMatchObject({
      port: 8080,
      inLambda: true,
      emulatorCredentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    expect(loadConfig({ AWS_ACCESS_KEY_ID: 'a' }).emulatorCredentials).toBeUndefined();
  });

  it('takes test and bench knobs as tuning options, never from the environment', () => {
    // A former variable is ignored: knobs are options now.
    expect(
      loadConfig({ EVE_WORLD_AWS_STREAM_POLL_MS: '20', EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES: '64' }),
    ).toMatchObject({
      streamPollMs: 50,
      payloadThresholdBytes: 300_000,
    });
    const base = loadConfig({ EVE_WORLD_AWS_PREFIX: 'my-agent' });
    const tuned = withTuning(base, { maxDelayHopSeconds: 1, deploymentId: 'dpl_test' });
    expect(tuned).toMatchObject({
      prefix: 'my-agent',
      maxDelayHopSeconds: 1,
      deploymentId: 'dpl_test',
      streamPollMs: 50,
    });
    expect(Object.isFrozen(tuned)).toBe(true);
    expect(withTuning(base, undefined)).toBe(base);
    // Applied over a tuned config, the earlier options stay.
    expect(withTuning(tuned, { streamPollMs: 10 })).toMatchObject({ maxDelayHopSeconds: 1, streamPollMs: 10 });
    expect(() => withTuning(base, { streamBurstMs: 5000 })).toThrow(
      /^tuning\.streamBurstMs must be between 0 and 1000, got 5000\. Example: \{ tuning: \{ streamBurstMs: 60 \} \}$/,
    );
  });

  it.each([
    [{ EVE_WORLD_AWS_PREFIX: 'My_Agent' }, 'EVE_WORLD_AWS_PREFIX', /must be 1-40 lowercase letters/, 'my-agent'],
    [{ EVE_WORLD_AWS_TABLE: 'ab' }, 'EVE_WORLD_AWS_TABLE', /not a valid DynamoDB table name/, 'eve-world'],
    [
      { EVE_WORLD_AWS_QUEUE: 'has space' },
      'EVE_WORLD_AWS_QUEUE',
      /not a valid SQS queue name or URL/,
      'eve-world-queue',
    ],
    [
      { EVE_WORLD_AWS_DLQ: 'x'.repeat(81) },
      'EVE_WORLD_AWS_DLQ',
      /not a valid SQS queue name or URL/,
      'eve-world-queue',
    ],
    [{ EVE_WORLD_AWS_BUCKET: 'a..b' }, 'EVE_WORLD_AWS_BUCKET', /not a valid S3 bucket name/, 'my-agent-payloads'],
    [{ EVE_WORLD_AWS_BUCKET: 'UPPER' }, 'EVE_WORLD_AWS_BUCKET', /not a valid S3 bucket name/, 'my-agent-payloads'],
    [{ AWS_REGION: 'mars' }, 'AWS_REGION', /is not a region name, got "mars"/, 'us-east-1'],
    [
      { AWS_ENDPOINT_URL_SQS: 'localhost:4566' },
      'AWS_ENDPOINT_URL_SQS',
      /must be an http\(s\) URL/,
      'http://127.0.0.1:4566',
    ],
    [{ AWS_ENDPOINT_URL: 'ftp://x' }, 'AWS_ENDPOINT_URL', /must be an http\(s\) URL/, 'http://127.0.0.1:4566'],
    [{ EVE_WORLD_AWS_CONCURRENCY: 'eight' }, 'EVE_WORLD_AWS_CONCURRENCY', /must be a whole number, got "eight"/, '8'],
    [{ EVE_WORLD_AWS_CONCURRENCY: '0' }, 'EVE_WORLD_AWS_CONCURRENCY', /must be between 1 and 1000, got 0/, '8'],
    [
      { EVE_WORLD_AWS_SIGNING_SECRET: 'short' },
      'EVE_WORLD_AWS_SIGNING_SECRET',
      /too weak \(the secret is 5 characters\).*at least 32 characters/,
      '$(openssl rand -hex 32)',
    ],
    [
      { EVE_WORLD_AWS_SIGNING_SECRET: `${STRONG},new-secret-0123456789` },
      'EVE_WORLD_AWS_SIGNING_SECRET',
      /too weak \(secret 2 of the rotation list is 21 characters\)/,
      '$(openssl rand -hex 32)',
    ],
    [{ EVE_WORLD_AWS_ALLOW_UNSIGNED: 'maybe' }, 'EVE_WORLD_AWS_ALLOW_UNSIGNED', /must be 1 or 0, got "maybe"/, '1'],
    [
      { EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL: 'sure' },
      'EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL',
      /must be 1 or 0, got "sure"/,
      '1',
    ],
    [{ EVE_WORLD_AWS_RETENTION_DAYS: '0' }, 'EVE_WORLD_AWS_RETENTION_DAYS', /must be between 1 and 36500, got 0/, '30'],
    [{ PORT: '70000' }, 'PORT', /must be between 1 and 65535/, '3000'],
    [
      { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: 'my-role' },
      'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN',
      /not an IAM role ARN/,
      'arn:aws:iam::123456789012:role/eve-world-scheduler',
    ],
    [
      { EVE_WORLD_AWS_SCHEDULER_GROUP: 'my group/1' },
      'EVE_WORLD_AWS_SCHEDULER_GROUP',
      /is not a schedule group name \("my group\/1": 1-64 letters, digits, - _ \.\)/,
      'eve-world',
    ],
  ])('%o -> ConfigError naming %s, the problem and an example', (env, variable, problem, example) => {
    const err = configError(env as Record<string, string>);
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable} `)).toBe(true);
    expect(err.message).toMatch(problem);
    expect(err.message.endsWith(`Example: ${variable}=${example}`)).toBe(true);
    expect(err.message).not.toMatch(/\n/);
  });

  it.each([
    [{ streamBurstMs: 1001 }, 'tuning.streamBurstMs', /must be between 0 and 1000, got 1001/, '60'],
    [{ streamBurstMs: 1.5 }, 'tuning.streamBurstMs', /must be a whole number, got "1.5"/, '60'],
    [{ maxDelayHopSeconds: 901 }, 'tuning.maxDelayHopSeconds', /between 1 and 900/, '900'],
    [{ payloadThresholdBytes: -1 }, 'tuning.payloadThresholdBytes', /whole number/, '300000'],
    [
      { streamPollMs: 500, streamIdlePollMs: 100 },
      'tuning.streamIdlePollMs',
      /must be >= streamPollMs \(500\)/,
      '1000',
    ],
  ])('tuning %o -> ConfigError naming %s, the problem and an example', (tuning, option, problem, example) => {
    const err = configError({}, tuning as Partial<WorldTuning>);
    expect(err.variable).toBe(option);
    expect(err.message).toMatch(problem);
    expect(err.message.endsWith(`Example: { tuning: { ${option.slice('tuning.'.length)}: ${example} } }`)).toBe(true);
  });

  it('refuses EVE_WORLD_AWS_RETENTION_DAYS=0 (finished runs would vanish at once); 1 is the least', () => {
    expect(() => loadConfig({ EVE_WORLD_AWS_RETENTION_DAYS: '0' })).toThrow(ConfigError);
    expect(loadConfig({ EVE_WORLD_AWS_RETENTION_DAYS: '1' }).retentionDays).toBe(1);
  });

  it('refuses weak signing secrets: short, few distinct characters, or a repeated pattern', () => {
    for (const [weak, why] of [
      ['0123456789abcdef', /is 16 characters/],
      ['a'.repeat(40), /has only 1 distinct characters/],
      ['abcabcabcabcabcabcabcabcabcabcabcabc', /has only 3 distinct characters/],
      ['0123456789abcdef0123456789abcdef', /repeats "0123456789abcdef"/],
    ] as const) {
      expect(secretWeakness(weak)).toMatch(why);
      expect(() => loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: weak })).toThrow(
        /EVE_WORLD_AWS_SIGNING_SECRET is too weak/,
      );
    }
    // What `openssl rand -hex 16` and `-base64 24` print passes.
    for (const ok of [STRONG, STRONG.slice(0, 32), 'q2V9x+Lr0d8Zk3Tn7Wb1Hs4Yc6Fj5Mp2'])
      expect(secretWeakness(ok)).toBeUndefined();
  });

  it('refuses an http:// flow URL to a host that is not loopback, unless EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1', () => {
    const cleartext = 'http://flow.internal.example:3000/.well-known/workflow/v1/flow';
    let err: ConfigError | undefined;
    try {
      loadConfig({ EVE_WORLD_AWS_FLOW_URL: cleartext, EVE_WORLD_AWS_SIGNING_SECRET: STRONG });
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.variable).toBe('EVE_WORLD_AWS_FLOW_URL');
    expect(err?.message).toMatch(
      /cleartext http to a host that is not loopback.*EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1/,
    );
    expect(loadConfig({ EVE_WORLD_AWS_FLOW_URL: cleartext, EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL: '1' }).flowUrl).toBe(
      cleartext,
    );
    for (const fine of [
      'https://flow.example.com/f',
      'http://127.0.0.1:3000/f',
      'http://localhost/f',
      'http://[::1]:8/f',
    ])
      expect(loadConfig({ EVE_WORLD_AWS_FLOW_URL: fine }).flowUrl).toBe(fine);
    // A URL given in code (the Lambda handler's flowUrl option) gets the same check.
    expect(() => assertDeliveriesSafe(loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: STRONG }), cleartext)).toThrow(
      /^EVE_WORLD_AWS_FLOW_URL is cleartext/,
    );
  });

  it('names every EVE_WORLD_AWS_ variable it does not read, once, with what to do instead', () => {
    // Misspelt names are built, not spelled out: the docs test scans this file for unknown names.
    const misspelt = ['EVE', 'WORLD', 'AWS', 'SIGNING', 'SECRT'].join('_');
    const c = loadConfig({
      EVE_WORLD_AWS_STREAM_POLL_MS: '20',
      [misspelt]: STRONG,
      EVE_WORLD_AWS_PREFIX: 'agent',
      EVE_WORLD_AWS_DEBUG: '1',
      EVE_WORLD_AWS_JAVA: '/usr/bin/java',
      [['EVE', 'WORLD', 'AWS', 'BLANK'].join('_')]: ' ',
    });
    expect(c.ignoredVariables).toEqual([misspelt, 'EVE_WORLD_AWS_STREAM_POLL_MS']);
    const lines = variableWarnings(c);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      new RegExp(
        `^\\[eve-world-aws\\] ${misspelt} is set but is not a variable of this World \\(a typo\\?\\); it is ignored\\. Did you mean EVE_WORLD_AWS_SIGNING_SECRET\\?`,
      ),
    );
    expect(lines[1]).toMatch(/EVE_WORLD_AWS_STREAM_POLL_MS is set but no longer read: .*tuning: \{ streamPollMs \}/);
    expect(variableWarnings(loadConfig({ EVE_WORLD_AWS_PREFIX: 'agent' }))).toEqual([]);
  });

  it('has a loud warning for start() exactly when unsigned deliveries are allowed', () => {
    expect(unsignedWarning(loadConfig({}))).toBeUndefined();
    expect(unsignedWarning(loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: STRONG }))).toBeUndefined();
    expect(unsignedWarning(loadConfig({ EVE_WORLD_AWS_ALLOW_UNSIGNED: '1' }))).toMatch(
      /^\[eve-world-aws\] WARNING: EVE_WORLD_AWS_ALLOW_UNSIGNED=1: .*anyone who can reach the flow route can run steps/,
    );
  });

  it('sets WORKFLOW_OPTIMISTIC_INLINE_START=0 for core only when the operator set nothing', () => {
    const env: Record<string, string | undefined> = {};
    applyCoreDefaults(env);
    expect(env.WORKFLOW_OPTIMISTIC_INLINE_START).toBe('0');
    const explicit: Record<string, string | undefined> = { WORKFLOW_OPTIMISTIC_INLINE_START: '1' };
    applyCoreDefaults(explicit);
    expect(explicit.WORKFLOW_OPTIMISTIC_INLINE_START).toBe('1');
  });

  it("shortens core's inline-ownership lease to 20 s unless the operator set it", () => {
    const env: Record<string, string | undefined> = {};
    applyCoreDefaults(env);
    expect(env.WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS).toBe('20');
    const explicit: Record<string, string | undefined> = { WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS: '860' };
    applyCoreDefaults(explicit);
    expect(explicit.WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS).toBe('860');
  });

  it('reads a comma-separated secret list for rotation: sign with the first, accept any', () => {
    const c = loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: ` ${STRONG} , ${STRONG_OLD} ,` });
    expect(c.signingSecrets).toEqual([STRONG, STRONG_OLD]);
    expect(Object.isFrozen(c.signingSecrets)).toBe(true);
    expect(loadConfig({}).signingSecrets).toEqual([]);
    expect(loadConfig({}).allowUnsigned).toBe(false);
    expect(loadConfig({ EVE_WORLD_AWS_ALLOW_UNSIGNED: '1' }).allowUnsigned).toBe(true);
  });

  it('refuses unsigned deliveries to a flow route that is not loopback, unless opted out', () => {
    expect(
      ['http://127.0.0.1:3000/f', 'http://localhost/f', 'http://[::1]:8080/f', 'http://127.9.9.9/f'].every(
        isLoopbackUrl,
      ),
    ).toBe(true);
    expect(
      ['https://flow.example.com/f', 'http://10.0.0.5/f', 'http://127.0.0.1.example.com/f', 'http://0.0.0.0/f'].some(
        isLoopbackUrl,
      ),
    ).toBe(false);
    const remote = 'https://flow.example.com/.well-known/workflow/v1/flow';
    expect(() => assertDeliveriesSafe(loadConfig({}), remote)).toThrow(ConfigError);
    expect(() => assertDeliveriesSafe(loadConfig({}), remote)).toThrow(/^EVE_WORLD_AWS_SIGNING_SECRET is required/);
    expect(() => assertDeliveriesSafe(loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: STRONG }), remote)).not.toThrow();
    expect(() => assertDeliveriesSafe(loadConfig({ EVE_WORLD_AWS_ALLOW_UNSIGNED: '1' }), remote)).not.toThrow();
    expect(() =>
      assertDeliveriesSafe(loadConfig({}), 'http://127.0.0.1:3000/.well-known/workflow/v1/flow'),
    ).not.toThrow();
  });

  it('returns a deeply frozen object', () => {
    const c = loadConfig({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.endpoints)).toBe(true);
    expect(() => {
      (c as { prefix: string }).prefix = 'x';
    }).toThrow(TypeError);
  });

  it('documents every variable and option it reads exactly once, from the one table the parser reads', () => {
    const names = ENV_DOCS.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    for (const d of [...ENV_DOCS, ...TUNING_DOCS]) {
      expect(d.description.length).toBeGreaterThan(10);
      expect(d.default).toBeTruthy();
      expect(d.values).toBeTruthy();
    }
    // About a dozen of the World's own variables, the two observability ones (METRICS,
    // LOG_LEVEL), the two of deployments and the worker's host function; docs/configuration.md
    // argues the set.
    const own = names.filter((n) => n.startsWith('EVE_WORLD_AWS_'));
    expect(own.length).toBeLessThanOrEqual(23);
    // The documented defaults are the parser's: an empty environment yields exactly them.
    const empty = loadConfig({}) as unknown as Record<string, unknown>;
    for (const [key, s] of Object.entries(TUNING)) expect(String(empty[key]), key).toBe(String(s.default));
    for (const key of ['consumerConcurrency', 'visibilityTimeoutSeconds', 'maxReceiveCount', 'port'] as const)
      expect(empty[key]).toBe(VARIABLES[key].default);
    expect(empty.prefix).toBe(VARIABLES.prefix.default);
    expect(empty.queue).toBe(VARIABLES.queue.default.replace('<prefix>', 'eve-world'));
    for (const name of [
      'AWS_REGION',
      'EVE_WORLD_AWS_PREFIX',
      'EVE_WORLD_AWS_TABLE',
      'EVE_WORLD_AWS_QUEUE',
      'EVE_WORLD_AWS_DLQ',
      'EVE_WORLD_AWS_BUCKET',
      'EVE_WORLD_AWS_SIGNING_SECRET',
      'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN',
    ]) {
      expect(names).toContain(name);
    }
  });
});

describe('the environment has one reader and one runtime writer', () => {
  /** Tooling (above the runtime) may read its own variables. */
  const TOOLING = ['cli/', 'cdk/', 'emulator/', 'demo/', 'config/docs.ts'];
  /** The reader (the parser's default source, `getConfig`) and the writer (`applyCoreDefaults`). */
  const ALLOWED = ['config/load.ts', 'config/core-defaults.ts'];
  /** Runtime modules other than {@link ALLOWED} that touch `process.env` (comments aside). */
  function readers(files: { rel: string; text: string }[]): string[] {
    return files
      .filter((f) => !ALLOWED.includes(f.rel) && !TOOLING.some((t) => f.rel.startsWith(t)))
      .filter((f) => /\bprocess\.env\b/.test(stripComments(f.text)))
      .map((f) => f.rel);
  }

  it('no runtime module but src/config/load.ts and src/config/core-defaults.ts reads or writes process.env', () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(20);
    expect(readers(files)).toEqual([]);
  });

  it('finds a planted reader (the check can fail)', () => {
    expect(
      readers([
        { rel: 'consumer/index.ts', text: "const mode = process.env.AWS_LAMBDA_FUNCTION_NAME ? 'none' : 'poll';" },
        { rel: 'aws/clients.ts', text: '// process.env is read by config/load.ts only' },
        { rel: 'cli/main.ts', text: 'process.env.EVE_WORLD_AWS_DEBUG' },
        { rel: 'config/load.ts', text: 'process.env' },
        { rel: 'config/safety.ts', text: 'process.env.PORT' },
      ]),
    ).toEqual(['consumer/index.ts', 'config/safety.ts']);
  });

  /**
   * The writes to `process.env` anywhere in src/ (runtime and tooling), each allowed by file with
   * the page that says why: the World's one (applyCoreDefaults, through its `env` parameter, whose
   * default is `process.env`) and the CLI's `emulate --docker` (MinIO's credentials).
   */
  const ALLOWED_WRITES: Record<string, { doc: string; says: RegExp }> = {
    'config/core-defaults.ts': {
      doc: 'docs/configuration.md',
      says: /`applyCoreDefaults` in `src\/config\/core-defaults.ts`/,
    },
    'cli/emulate.ts': {
      doc: 'docs/cli.md',
      says: /emulate sets `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` in its own\s+process environment/,
    },
  };
  const PROCESS_ENV = String.raw`\bprocess\s*\.\s*env\b`;
  const ENV = String.raw`(?:${PROCESS_ENV}|\benv(?=\s*\[))`;
  const MEMBER = String.raw`(?:\s*\.\s*[A-Za-z_$][\w$]*|\s*\[[^\]]+\])`;
  /** Assignment (plain or compound: `=`, `??=`, `||=`, `&&=`, `+=`...), never a comparison. */
  const ASSIGN = String.raw`\s*(?:\?\?|\|\||&&|\*\*|<<|>>>?|[-+*/%&|^])?=(?![=>])`;
  const WRITE_PATTERNS = [
    new RegExp(`${ENV}${MEMBER}?${ASSIGN}`, 'g'), // process.env.X = …, process.env[k] ??= …, env[k] = …, process.env = …
    new RegExp(String.raw`\bdelete\s+${ENV}${MEMBER}`, 'g'), // delete process.env.X, delete env[k]
    // Object.assign(process.env, …), Object.defineProperty(process.env, …), Reflect.set/deleteProperty(process.env, …)
    new RegExp(
      String.raw`\b(?:Object\s*\.\s*(?:assign|defineProperty|defineProperties)|Reflect\s*\.\s*(?:set|deleteProperty|defineProperty))\s*\(\s*${PROCESS_ENV}`,
      'g',
    ),
  ];
  /** The writes to the environment in `text` (comments aside). */
  const envWrites = (text: string): string[] => {
    const code = stripComments(text);
    return WRITE_PATTERNS.flatMap((re) => [...code.matchAll(re)].map((m) => m[0].trim()));
  };
  /** Files of `files` that write the environment, allowed or not. */
  const writers = (files: { rel: string; text: string }[]): string[] =>
    files.filter((f) => envWrites(f.text).length > 0).map((f) => f.rel);

  it('the writes to process.env in src/ are exactly the documented ones, by file: applyCoreDefaults and emulate --docker', () => {
    const files = sourceFiles();
    // Every allowed file still writes (no stale entry), and no other file does.
    expect(writers(files).sort()).toEqual(Object.keys(ALLOWED_WRITES).sort());
    // The one write of the runtime is applyCoreDefaults; the other is tooling (the CLI), above it.
    expect(Object.keys(ALLOWED_WRITES).filter((rel) => !TOOLING.some((t) => rel.startsWith(t)))).toEqual([
      'config/core-defaults.ts',
    ]);
    // Each is documented: the page says why it writes.
    for (const [rel, { doc, says }] of Object.entries(ALLOWED_WRITES))
      expect(readFileSync(path.join(SRC, '..', doc), 'utf8'), `${rel}: ${doc}`).toMatch(says);
    // Its behaviour is tested above ('applyCoreDefaults'); its row says why it writes.
    expect(VARIABLES.optimisticInlineStart.description).toMatch(/Set to the default by `createWorld\(\)` when unset/);
  });

  it('finds every form of a planted write, and no read or comparison (the check can fail)', () => {
    const planted = [
      'process.env.AWS_REGION = region;',
      "process.env['AWS_REGION'] = region;",
      'process.env[name]=value;',
      'process.env.X ??= "1";',
      'process.env.X ||= "1";',
      'process.env.X &&= "1";',
      'process.env.PATH += ":/opt/bin";',
      'process . env . X = 1;',
      'delete process.env.AWS_PROFILE;',
      "delete process.env['AWS_PROFILE'];",
      'Object.assign(process.env, DOCKER_CREDENTIALS);',
      "Object.defineProperty(process.env, 'X', { value: '1' });",
      "Reflect.set(process.env, 'X', '1');",
      'process.env = { ...process.env, X: "1" };',
      'env[setting.name] = setting.default;',
      'delete env[k];',
    ];
    for (const line of planted) expect(envWrites(line), line).toHaveLength(1);
    const notWrites = [
      'const region = process.env.AWS_REGION;',
      "if (process.env.X === '1') run();",
      "if (process.env['X'] == '1') run();",
      'const x = process.env.X ?? "d";',
      "if (process.env.X !== '1' && process.env.Y <= '2') run();",
      'loadConfig({ ...process.env, ...env });',
      'const env = { ...stack.env };',
      '// process.env.X = 1 (a comment)',
      '/* delete process.env.X */',
      "const url = 'http://x'; const y = process.env.Y;",
    ];
    for (const line of notWrites) expect(envWrites(line), line).toEqual([]);
    expect(
      writers([
        { rel: 'consumer/index.ts', text: "process.env.AWS_REGION ??= 'us-east-1';" },
        { rel: 'aws/clients.ts', text: 'const r = process.env.AWS_REGION; // process.env.X = 1' },
        { rel: 'cli/init.ts', text: 'Object.assign(process.env, creds);' },
        { rel: 'config/core-defaults.ts', text: 'env[s.name] = s.default;' },
      ]),
    ).toEqual(['consumer/index.ts', 'cli/init.ts', 'config/core-defaults.ts']);
  });
});

describe('unknown variables', () => {
  // Misspelt names are built, not spelled out: the docs test scans this file for unknown names.
  const name = (...parts: string[]) => ['EVE', 'WORLD', 'AWS', ...parts].join('_');

  it('names the closest variable by edit distance: a letter left out, swapped, added or changed', () => {
    expect(closestVariable(name('PREFX'))).toBe('EVE_WORLD_AWS_PREFIX');
    expect(closestVariable(name('TABEL'))).toBe('EVE_WORLD_AWS_TABLE');
    expect(closestVariable(name('QUEUES'))).toBe('EVE_WORLD_AWS_QUEUE');
    expect(closestVariable(name('BUCKIT'))).toBe('EVE_WORLD_AWS_BUCKET');
    expect(closestVariable(name('DQL'))).toBe('EVE_WORLD_AWS_DLQ');
    expect(closestVariable(name('SIGNING', 'SECRET', 'ARM'))).toBe('EVE_WORLD_AWS_SIGNING_SECRET_ARN');
    expect(closestVariable(name('LOGLEVEL'))).toBe('EVE_WORLD_AWS_LOG_LEVEL');
    // Case is not a difference; the CLI's own variables count as known.
    expect(closestVariable(name('prefix').toLowerCase())).toBe('EVE_WORLD_AWS_PREFIX');
    expect(closestVariable(name('DEBUGG'))).toBe('EVE_WORLD_AWS_DEBUG');
  });

  it('the warning line carries the closest name; each variable is named once per process', () => {
    const typo = name('PREFX');
    const other = name('TABEL');
    const first = variableWarningsOnce(loadConfig({ [typo]: 'shop' }));
    expect(first).toEqual([expect.stringContaining(`${typo} is set but is not a variable of this World`)]);
    expect(first[0]).toContain('Did you mean EVE_WORLD_AWS_PREFIX?');
    // A second World of this process: nothing new to say about the same variable; a new one is named.
    expect(variableWarningsOnce(loadConfig({ [typo]: 'shop' }))).toEqual([]);
    const second = variableWarningsOnce(loadConfig({ [typo]: 'shop', [other]: 'x' }));
    expect(second).toHaveLength(1);
    expect(second[0]).toContain(`${other} is set but is not a variable`);
  });

  it('says which variable chose a resource name: its own, or the prefix', () => {
    expect(nameChosenBy(loadConfig({}), 'tableName')).toBe('EVE_WORLD_AWS_PREFIX=eve-world (the default)');
    expect(nameChosenBy(loadConfig({ EVE_WORLD_AWS_PREFIX: 'shop' }), 'queue')).toBe('EVE_WORLD_AWS_PREFIX=shop');
    expect(nameChosenBy(loadConfig({ EVE_WORLD_AWS_PREFIX: 'shop' }), 'bucket')).toBe('EVE_WORLD_AWS_PREFIX=shop');
    expect(nameChosenBy(loadConfig({ EVE_WORLD_AWS_TABLE: 'orders' }), 'tableName')).toBe('EVE_WORLD_AWS_TABLE=orders');
    const url = 'https://sqs.us-east-1.amazonaws.com/123456789012/jobs';
    expect(nameChosenBy(loadConfig({ EVE_WORLD_AWS_DLQ: url }), 'deadLetterQueue')).toBe(`EVE_WORLD_AWS_DLQ=${url}`);
  });
});
