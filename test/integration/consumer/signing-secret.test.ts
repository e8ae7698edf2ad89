/**
 * The signing secret read from Secrets Manager (EVE_WORLD_AWS_SIGNING_SECRET_ARN), with the real
 * `@aws-sdk/client-secrets-manager` against the emulator's endpoint (emulator/secrets-manager.ts)
 * over the wire: deliveries through the in-process poller and the Lambda handler are signed with
 * AWSCURRENT and verified over HTTP; a rotation (PutSecretValue) is picked up by both sides without
 * a restart; a secret that cannot be read keeps the copy (no DLQ); the client is never loaded
 * without the ARN.
 */
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import type { Message } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type SecretsManagerServer, startSecretsManagerServer } from '../../../emulator/secrets-manager.js';
import { loadConfig } from '../../../src/config/index.js';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { createSqsHandler, type SQSRecord } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { sourceFiles } from '../../helpers/imports.js';
import { makeWorld, receiveAll, serve, type World, waitFor } from '../../helpers/queue.js';
import { toRecord } from '../../lambda/esm-simulator.js';

const Q = '__wkf_workflow_sm' as ValidQueueName;
const A = 'first-secret-value-0123456789abcdef';
const B = 'second-secret-value-0123456789abcdef';

let sm: SecretsManagerServer;
let admin: SecretsManagerClient;
const worlds: World[] = [];

beforeAll(async () => {
  sm = await startSecretsManagerServer();
  admin = new SecretsManagerClient({
    endpoint: sm.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  });
});
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
  admin?.destroy();
  await sm?.close();
});

let n = 0;
async function newSecret(value: string): Promise<string> {
  const out = await admin.send(
    new CreateSecretCommand({ Name: `eve-signing-${n++}-${Date.now()}`, SecretString: value }),
  );
  return out.ARN as string;
}

const envFor = (arn: string) => ({
  EVE_WORLD_AWS_SIGNING_SECRET_ARN: arn,
  AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.endpoint,
  EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2',
});

const records = (msgs: Message[]) =>
  msgs.map((m) => toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:q', 'us-east-1')) as SQSRecord[];

describe('the emulator endpoint', () => {
  test('CreateSecret / GetSecretValue / PutSecretValue with stages, by name or ARN, through the real client', async () => {
    const arn = await newSecret(A);
    expect(arn).toMatch(/^arn:aws:secretsmanager:us-east-1:000000000000:secret:eve-signing-.*-[0-9a-f]{6}$/);
    expect((await admin.send(new GetSecretValueCommand({ SecretId: arn }))).SecretString).toBe(A);
    await expect(admin.send(new GetSecretValueCommand({ SecretId: arn, VersionStage: 'AWSPREVIOUS' }))).rejects.toThrow(
      expect.objectContaining({ name: 'ResourceNotFoundException' }),
    );
    await admin.send(new PutSecretValueCommand({ SecretId: arn, SecretString: B }));
    const cur = await admin.send(new GetSecretValueCommand({ SecretId: arn }));
    expect(cur.SecretString).toBe(B);
    expect(cur.VersionStages).toEqual(['AWSCURRENT']);
    expect(
      (await admin.send(new GetSecretValueCommand({ SecretId: arn, VersionStage: 'AWSPREVIOUS' }))).SecretString,
    ).toBe(A);
    await expect(admin.send(new GetSecretValueCommand({ SecretId: 'nope' }))).rejects.toThrow(
      expect.objectContaining({ name: 'ResourceNotFoundException' }),
    );
  });
});

describe('deliveries signed with a secret read from Secrets Manager', () => {
  test('the poller signs and the flow route verifies; after a rotation both pick up the new value without a restart', async () => {
    const arn = await newSecret(A);
    let route: (req: Request) => Promise<Response> = async () => new Response('not ready', { status: 503 });
    const server = await serve((req) => route(req));
    try {
      const env = { ...envFor(arn), EVE_WORLD_AWS_FLOW_URL: server.url };
      // The host: the flow route only (its own World, its own cached read of the secret).
      const host = await makeWorld({ register: false, start: false, env });
      worlds.push(host);
      route = host.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
        host.deliveries.push({ body, meta, at: Date.now() });
      });
      // Nothing in the function's config: the World holds only the ARN.
      expect(host.ctx.config.signingSecrets).toEqual([]);
      expect(host.ctx.config.signingSecretArn).toBe(arn);
      const sender = await makeWorld({ sameAs: host, register: false, start: true, env });
      worlds.push(sender);
      await sender.queue.queue(Q, { runId: 'before' });
      await waitFor(() => host.deliveries.length === 1, 15_000, 'delivery signed with AWSCURRENT');
      await sender.queue.close();
      // An outsider is refused.
      expect((await fetch(server.url, { method: 'POST', body: '{}' })).status).toBe(401);

      // Rotation: a new AWSCURRENT. A fresh sender (a new container) signs with it at once; the
      // host still has the old value cached, refuses, and re-reads (rate-limited) after the failure.
      await admin.send(new PutSecretValueCommand({ SecretId: arn, SecretString: B }));
      const fresh = await makeWorld({ sameAs: host, register: false, start: true, env });
      worlds.push(fresh);
      await fresh.queue.queue(Q, { runId: 'after' });
      await waitFor(() => host.deliveries.length === 2, 45_000, 'delivery signed with the rotated value');
      expect(host.deliveries.map((d) => d.body.runId)).toEqual(['before', 'after']);
      expect(host.logger.lines.some((l) => l.includes('401, bad signature'))).toBe(true);
      // A copy signed with the previous value (a sender with a stale cache) is still accepted.
      const stale = await makeWorld({
        sameAs: host,
        register: false,
        start: false,
        env: {
          EVE_WORLD_AWS_SIGNING_SECRET: A,
          EVE_WORLD_AWS_SIGNING_SECRET_ARN: '',
          EVE_WORLD_AWS_FLOW_URL: server.url,
        },
      });
      worlds.push(stale);
      await stale.queue.start();
      await stale.queue.queue(Q, { runId: 'stale' });
      await waitFor(() => host.deliveries.length === 3, 15_000, 'delivery signed with AWSPREVIOUS');
    } finally {
      await server.close();
    }
  });

  test('the Lambda handler signs with AWSCURRENT; a secret it cannot read keeps the copies (no DLQ, no handler)', async () => {
    const arn = await newSecret(A);
    const w = await makeWorld({ register: false, start: false, env: envFor(arn) });
    worlds.push(w);
    const server = await serve(
      w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
        w.deliveries.push({ body, meta, at: Date.now() });
      }),
    );
    try {
      const url = await w.queue.transport.queueUrl();
      await w.queue.queue(Q, { runId: 'lambda' });
      const msgs = await receiveAll(w, url);
      const handler = createSqsHandler({ flowUrl: server.url, context: w.ctx });
      expect(await handler({ Records: records(msgs) })).toEqual({ batchItemFailures: [] });
      expect(w.deliveries.map((d) => d.body.runId)).toEqual(['lambda']);

      // A worker whose secret does not exist (or that may not read it): an infrastructure fault.
      const broken = await makeWorld({
        sameAs: w,
        register: false,
        start: false,
        env: envFor(arn.replace(/-[0-9a-f]{6}$/, '-ffffff')),
      });
      worlds.push(broken);
      await w.queue.queue(Q, { runId: 'unreadable' });
      const outcomes: DeliveryOutcome[] = [];
      const bad = createSqsHandler({ flowUrl: server.url, context: broken.ctx, onOutcome: (o) => outcomes.push(o) });
      await bad({ Records: records(await receiveAll(w, url)) });
      // Parked: the copy is replaced (the route was never reached, so the attempt is not raised).
      expect(outcomes.map((o) => `${o.action}:${o.reason}`)).toEqual(['delete:parked']);
      expect(w.deliveries).toHaveLength(1);
      expect(await receiveAll(w, await w.queue.transport.dlqUrl())).toEqual([]);
    } finally {
      await server.close();
    }
  });

  test('without the ARN the Secrets Manager client is never created; no source file imports it eagerly', async () => {
    const w = await makeWorld({
      register: false,
      start: false,
      env: { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2' },
    });
    worlds.push(w);
    let created = 0;
    const clients = w.ctx.clients as { secretsManager: () => Promise<unknown> };
    const real = clients.secretsManager;
    clients.secretsManager = () => {
      created++;
      return real();
    };
    const server = await serve(
      w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
        w.deliveries.push({ body, meta, at: Date.now() });
      }),
    );
    try {
      await w.queue.queue(Q, { runId: 'plain' });
      const url = await w.queue.transport.queueUrl();
      const handler = createSqsHandler({
        flow: w.queue.createQueueHandler('__wkf_workflow_', async () => undefined),
        context: w.ctx,
      });
      expect(await handler({ Records: records(await receiveAll(w, url)) })).toEqual({ batchItemFailures: [] });
      expect(created).toBe(0);
    } finally {
      await server.close();
    }
    // The package's code loads the SDK only through `import()` (or `import type`).
    const eager = sourceFiles()
      .filter((f) => /^import\s+(?!type\b)[^;]*from\s+'@aws-sdk\/client-secrets-manager'/m.test(f.text))
      .map((f) => f.rel);
    expect(eager).toEqual([]);
  });
});

describe('configuration', () => {
  test('the ARN is validated, and refused together with a plain secret', () => {
    expect(() => loadConfig({ EVE_WORLD_AWS_SIGNING_SECRET_ARN: 'my-secret' })).toThrow(
      /EVE_WORLD_AWS_SIGNING_SECRET_ARN is not a Secrets Manager secret ARN/,
    );
    expect(() =>
      loadConfig({
        EVE_WORLD_AWS_SIGNING_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:s-AbCdEf',
        EVE_WORLD_AWS_SIGNING_SECRET: A,
      }),
    ).toThrow(/cannot be set together with EVE_WORLD_AWS_SIGNING_SECRET/);
  });
});
