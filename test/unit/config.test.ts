/** Unit tests for src/config.ts: defaults, derived names, validation messages, immutability. */
import { describe, expect, it } from 'vitest';
import { assertDeliveriesSigned, ConfigError, ENV_DOCS, isLoopbackUrl, loadConfig } from '../../src/config.js';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
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
      signingSecret: undefined,
      consumerConcurrency: 8,
      maxDelayHopSeconds: 900,
      idempotencyTtlSeconds: 604_800,
      visibilityTimeoutSeconds: 900,
      consumerVisibilitySeconds: 30,
      connectTimeoutMs: 3000,
      requestTimeoutMs: 15_000,
      maxReceiveCount: 10,
      schedulerRoleArn: undefined,
      schedulerGroup: 'default',
      deploymentId: 'eve-world-aws',
    });
    expect(c.endpoints).toEqual({ dynamodb: undefined, sqs: undefined, s3: undefined, scheduler: undefined });
  });

  it('derives every resource name from EVE_WORLD_AWS_PREFIX; explicit names win', () => {
    expect(loadConfig({ EVE_WORLD_AWS_PREFIX: 'my-agent' })).toMatchObject({
      tableName: 'my-agent',
      queue: 'my-agent-queue',
      deadLetterQueue: 'my-agent-dlq',
      bucket: 'my-agent-payloads',
    });
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
    const c = loadConfig({
      EVE_WORLD_AWS_CONCURRENCY: '32',
      EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '3',
      EVE_WORLD_AWS_STREAM_POLL_MS: '20',
      EVE_WORLD_AWS_STREAM_BURST_MS: '0',
    });
    expect(c).toMatchObject({ consumerConcurrency: 32, maxReceiveCount: 3, streamPollMs: 20, streamBurstMs: 0 });
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
    [{ EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS: '901' }, 'EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS', /between 1 and 900/, '900'],
    [
      { EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES: '-1' },
      'EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES',
      /whole number/,
      '300000',
    ],
    [
      { EVE_WORLD_AWS_SIGNING_SECRET: 'short' },
      'EVE_WORLD_AWS_SIGNING_SECRET',
      /at least 16 characters/,
      '$(openssl rand -hex 32)',
    ],
    [
      { EVE_WORLD_AWS_SIGNING_SECRET: 'new-secret-0123456789,short' },
      'EVE_WORLD_AWS_SIGNING_SECRET',
      /at least 16 characters \(each/,
      '$(openssl rand -hex 32)',
    ],
    [{ EVE_WORLD_AWS_ALLOW_UNSIGNED: 'maybe' }, 'EVE_WORLD_AWS_ALLOW_UNSIGNED', /must be 1 or 0, got "maybe"/, '1'],
    [
      { EVE_WORLD_AWS_STREAM_POLL_MS: '500', EVE_WORLD_AWS_STREAM_IDLE_POLL_MS: '100' },
      'EVE_WORLD_AWS_STREAM_IDLE_POLL_MS',
      /must be >= EVE_WORLD_AWS_STREAM_POLL_MS \(500\)/,
      '1000',
    ],
    [
      { EVE_WORLD_AWS_STREAM_BURST_MS: '1001' },
      'EVE_WORLD_AWS_STREAM_BURST_MS',
      /must be between 0 and 1000, got 1001/,
      '60',
    ],
    [{ EVE_WORLD_AWS_STREAM_BURST_MS: '60ms' }, 'EVE_WORLD_AWS_STREAM_BURST_MS', /must be a whole number/, '60'],
    [
      { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: 'my-role' },
      'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN',
      /not an IAM role ARN/,
      'arn:aws:iam::123456789012:role/eve-world-scheduler',
    ],
  ])('%o -> ConfigError naming %s, the problem and an example', (env, variable, problem, example) => {
    const err = configError(env as Record<string, string>);
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable} `)).toBe(true);
    expect(err.message).toMatch(problem);
    expect(err.message.endsWith(`Example: ${variable}=${example}`)).toBe(true);
    expect(err.message).not.toMatch(/\n/);
  });

  it('reads a comma-separated secret list for rotation: sign with the first, accept any', () => {
    const c = loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: ' new-secret-0123456789 , old-secret-0123456789 ,' });
    expect(c.signingSecret).toBe('new-secret-0123456789');
    expect(c.signingSecrets).toEqual(['new-secret-0123456789', 'old-secret-0123456789']);
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
    expect(() => assertDeliveriesSigned(loadConfig({}), remote)).toThrow(ConfigError);
    expect(() => assertDeliveriesSigned(loadConfig({}), remote)).toThrow(/^EVE_WORLD_AWS_SIGNING_SECRET is required/);
    expect(() =>
      assertDeliveriesSigned(loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET: 'a-secret-0123456789' }), remote),
    ).not.toThrow();
    expect(() => assertDeliveriesSigned(loadConfig({ EVE_WORLD_AWS_ALLOW_UNSIGNED: '1' }), remote)).not.toThrow();
    expect(() =>
      assertDeliveriesSigned(loadConfig({}), 'http://127.0.0.1:3000/.well-known/workflow/v1/flow'),
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

  it('documents every variable it reads exactly once in ENV_DOCS', () => {
    const names = ENV_DOCS.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    for (const d of ENV_DOCS) {
      expect(d.description.length).toBeGreaterThan(10);
      expect(d.default).toBeTruthy();
    }
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
