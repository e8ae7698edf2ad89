/**
 * The host as its own SQS consumer (src/consumer/delivery/pass-through.ts), through the World createWorld
 * builds: the flow route of a World in Lambda mode takes the SQS batch the Lambda Web Adapter
 * passes through (a POST whose `x-amzn-request-context` is `null`), with records built from real
 * messages on the emulated queue, delivers each record to itself in process, deletes what is done
 * and answers the rest as `batchItemFailures`.
 *
 * Against the adapter's documented contract: the adapter overwrites `x-amzn-request-context` on
 * every request it forwards (a Function URL request's is its request context, a JSON object), so a
 * client that forges `null` reaches the route with an object there: a signed delivery is required
 * and nothing runs. Outside Lambda (no adapter in front) the header means nothing. An event that
 * is not an SQS batch of this World's queue runs nothing.
 */
import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import { registerLambdaTarget } from '../../../emulator/lambda-service.js';
import { queueNameOf } from '../../../src/aws/arn.js';
import { loadConfig } from '../../../src/config/index.js';
import { LAMBDA_CONTEXT_HEADER, REQUEST_CONTEXT_HEADER } from '../../../src/consumer/delivery/pass-through.js';
import type { SQSRecord } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { type AwsWorld, createWorld } from '../../../src/index.js';
import { reconcile } from '../../../src/provision/index.js';
import { encodePayload, envelopeAttributes } from '../../../src/queue/encoding.js';
import { AFFINITY_MIN_READER } from '../../../src/schema/formats.js';
import { createFixture, stackEndpoint } from '../../helpers/aws.js';
import { MemoryLogger, serve } from '../../helpers/queue.js';

const PREFIX = '__wkf_workflow_';
const Q = `${PREFIX}pass` as ValidQueueName;
const SECRET = '5d2a8f0c6e4b1a9d3f7c5e2b8a0d6f4c1e9b3a7d5f2c8e0a6b4d1f9c3e7a5b2d';
const IN_LAMBDA = { AWS_LAMBDA_FUNCTION_NAME: 'eve-host', AWS_LAMBDA_FUNCTION_VERSION: '7' };

const worlds: AwsWorld[] = [];
const servers: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

interface Stack {
  /** The host: a World in Lambda mode (or not) on this case's resources, and its flow route. */
  host(env: Record<string, string>, handle?: (runId: string) => unknown): Host;
  /** What the event source mapping receives, as Lambda's SQS records, hidden for `visibility` s. */
  receive(count: number, visibility?: number): Promise<SQSRecord[]>;
  /** The runs whose messages are still on the queue (visible now, or within `waitS` s). */
  remaining(waitS?: number): Promise<string[]>;
  /** A message pinned to no deployment (as an older build or a table before affinity sent it). */
  sendUnpinned(runId: string): Promise<void>;
  queueArn: string;
}

interface Host {
  world: AwsWorld;
  route: (req: Request) => Promise<Response>;
  ran: string[];
  logger: MemoryLogger;
  send(runId: string): Promise<void>;
}

/** One case's own table, queue and bucket (at the affinity format with `affinity`). */
async function stack(affinity = false, env: Record<string, string> = {}): Promise<Stack> {
  const fixture = await createFixture(
    { EVE_WORLD_AWS_SIGNING_SECRET: SECRET, EVE_WORLD_AWS_METRICS: '0', ...env },
    'pt',
  );
  if (affinity)
    await reconcile(fixture.clients, fixture.config, 'apply', { minReader: AFFINITY_MIN_READER, affinity: true });
  const { sqs } = fixture.clients;
  const queueUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: queueNameOf(fixture.config.queue) }))).QueueUrl!;
  expect(queueUrl).toMatch(/\/\d{12}\/[^/]+$/);
  const queueArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] })))
    .Attributes!.QueueArn!;
  return {
    queueArn,
    async sendUnpinned(runId) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: encodePayload({ runId }),
          MessageAttributes: envelopeAttributes({
            queueName: Q,
            messageId: `msg_${runId.toUpperCase()}`,
            attemptOffset: 0,
          }),
        }),
      );
    },
    host(env, handle = () => undefined) {
      const logger = new MemoryLogger();
      // The queue by its URL, as the CDK construct names it (EVE_WORLD_AWS_QUEUE): account and name.
      const config = loadConfig({ ...fixture.env, EVE_WORLD_AWS_QUEUE: queueUrl, ...env });
      const world = createWorld({ config, consumer: { logger } });
      worlds.push(world);
      const ran: string[] = [];
      const route = world.createQueueHandler(PREFIX, async (body) => {
        const runId = (body as { runId: string }).runId;
        ran.push(runId);
        return handle(runId);
      });
      // Through the World's own `queue()`: the envelope core's messages have.
      const send = async (runId: string) => void (await world.queue(Q, { runId } as never));
      return { world, route, ran, logger, send };
    },
    async receive(count, visibility = 30) {
      const msgs: Message[] = [];
      const end = Date.now() + 10_000;
      while (msgs.length < count && Date.now() < end) {
        const r = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            VisibilityTimeout: visibility,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
          }),
        );
        msgs.push(...(r.Messages ?? []));
      }
      return msgs.map((m) => ({
        messageId: m.MessageId!,
        receiptHandle: m.ReceiptHandle!,
        body: m.Body!,
        attributes: {
          ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
          SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
        },
        messageAttributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
            k,
            {
              stringValue: v.StringValue,
              dataType: v.DataType ?? 'String',
              stringListValues: [],
              binaryListValues: [],
            },
          ]),
        ),
        md5OfBody: m.MD5OfBody,
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: 'us-east-1',
      }));
    },
    async remaining(waitS = 3) {
      const ids = new Set<string>();
      const end = Date.now() + waitS * 1000;
      do {
        const r = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            VisibilityTimeout: 1,
          }),
        );
        for (const m of r.Messages ?? []) ids.add(/"runId":"([^"]+)"/.exec(m.Body ?? '')?.[1] ?? '?');
      } while (Date.now() < end);
      return [...ids].sort();
    },
  };
}

/** What the Web Adapter sends the app for a non-HTTP event: POST, the raw event, `null` context. */
function passThrough(event: unknown, deadlineMs = 60_000, requestContext = 'null'): Request {
  return new Request('http://127.0.0.1:8080/.well-known/workflow/v1/flow', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [REQUEST_CONTEXT_HEADER]: requestContext,
      [LAMBDA_CONTEXT_HEADER]: JSON.stringify({
        request_id: 'r-1',
        deadline: Date.now() + deadlineMs,
        invoked_function_arn: 'arn:aws:lambda:us-east-1:000000000000:function:eve-host:live',
        xray_trace_id: '',
        client_context: null,
        identity: null,
        env_config: { function_name: 'eve-host', memory: 1024, version: '7', log_stream: '', log_group: '' },
      }),
    },
    body: JSON.stringify(event),
  });
}

/** A Function URL request's context, as the adapter writes it over whatever the client sent. */
const URL_CONTEXT = JSON.stringify({
  accountId: 'anonymous',
  apiId: 'abc123',
  domainName: 'abc123.lambda-url.us-east-1.on.aws',
  domainPrefix: 'abc123',
  http: {
    method: 'POST',
    path: '/.well-known/workflow/v1/flow',
    protocol: 'HTTP/1.1',
    sourceIp: '203.0.113.9',
    userAgent: 'curl',
  },
  requestId: 'u-1',
  routeKey: '$default',
  stage: '$default',
  time: '01/Jan/2027:00:00:00 +0000',
  timeEpoch: 1798761600000,
});

describe.concurrent('the host consumes its own queue through the Web Adapter pass-through', () => {
  test('each record runs in process; settled ones are deleted by the host, a failure comes back as a copy counting it', async () => {
    const s = await stack();
    const h = s.host(IN_LAMBDA, (runId) => {
      if (runId === 'fails') throw new Error('step blew up');
      return undefined;
    });
    for (const run of ['ok-1', 'ok-2', 'fails']) await h.send(run);
    const records = await s.receive(3);
    expect(records).toHaveLength(3);
    const res = await h.route(passThrough({ Records: records }));
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { batchItemFailures: { itemIdentifier: string }[] };
    // The failed dispatch is settled too: its copy is replaced by one counting the failure
    // (src/consumer/delivery/failures.ts), so no record is left for the event source to keep.
    expect(answer.batchItemFailures).toEqual([]);
    expect(h.ran.sort()).toEqual(['fails', 'ok-1', 'ok-2']);
    // Every received copy is gone already (the host deleted them): whatever the event source
    // mapping makes of a streamed answer, none is delivered again. The failed run comes back as
    // its fresh copy after the failure backoff, not after the receive's 30 s.
    expect(await s.remaining(4)).toEqual(['fails']);
    const again = await s.receive(1);
    expect(again[0]?.messageId).not.toBe(records.find((r) => r.body.includes('"fails"'))!.messageId);
    expect(again[0]?.messageAttributes['eve.failures']?.stringValue).toBe('1');
  });

  test('a Function URL request with a forged `null` context reaches the route with its own context: 401, nothing runs', async () => {
    const s = await stack();
    const h = s.host(IN_LAMBDA);
    await h.send('forged-url');
    const records = await s.receive(1, 2);
    const res = await h.route(passThrough({ Records: records }, 60_000, URL_CONTEXT));
    expect(res.status).toBe(401);
    expect(h.ran).toEqual([]);
    expect(await s.remaining(4)).toEqual(['forged-url']);
  });

  test('outside Lambda (no adapter in front) a `null` context is no pass-through: 401, nothing runs', async () => {
    const s = await stack();
    const h = s.host({});
    await h.send('not-lambda');
    const records = await s.receive(1, 2);
    const res = await h.route(passThrough({ Records: records }));
    expect(res.status).toBe(401);
    expect(h.ran).toEqual([]);
    expect(await s.remaining(4)).toEqual(['not-lambda']);
  });

  test('an event that is not an SQS batch of this queue runs nothing (400) and keeps every record', async () => {
    const s = await stack();
    const h = s.host(IN_LAMBDA);
    await h.send('foreign');
    const records = await s.receive(1, 2);
    const [r] = records;
    const cases: Array<[string, unknown]> = [
      ['an EventBridge event', { 'detail-type': 'x', source: 'aws.events', detail: {} }],
      ['no records', { Records: [] }],
      ['another queue', { Records: [{ ...r, eventSourceARN: `${s.queueArn}-other` }] }],
      ['another account', { Records: [{ ...r, eventSourceARN: s.queueArn.replace(/:\d{12}:/, ':999999999999:') }] }],
      [
        'one foreign record among ours',
        { Records: [r, { ...r, messageId: 'x', eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:other' }] },
      ],
      ['not from SQS', { Records: [{ ...r, eventSource: 'aws:kinesis' }] }],
    ];
    for (const [what, event] of cases) {
      const res = await h.route(passThrough(event));
      expect(res.status, what).toBe(400);
      const body = (await res.json()) as { batchItemFailures?: { itemIdentifier: string }[] };
      const ids = ((event as { Records?: SQSRecord[] }).Records ?? []).map((x) => x.messageId);
      expect(
        (body.batchItemFailures ?? []).map((f) => f.itemIdentifier),
        what,
      ).toEqual(ids);
    }
    const notJson = new Request('http://127.0.0.1:8080/.well-known/workflow/v1/flow', {
      method: 'POST',
      headers: { [REQUEST_CONTEXT_HEADER]: 'null' },
      body: 'not json',
    });
    expect((await h.route(notJson)).status).toBe(400);
    expect(h.ran).toEqual([]);
    expect(h.logger.lines.join('\n')).toMatch(/pass-through event refused, nothing ran/);
    expect(await s.remaining(4)).toEqual(['foreign']);
  });

  test('a record still running at the invocation deadline is kept, never deleted', async () => {
    // The queue's own visibility is what a proven record is hidden for (3 s here).
    const s = await stack(false, { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '3' });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const h = s.host(IN_LAMBDA, async (runId) => {
      if (runId === 'slow') await gate;
      return undefined;
    });
    await h.send('slow');
    await h.send('quick');
    const records = await s.receive(2, 3);
    expect(records).toHaveLength(2);
    // 5 s left: the handler stops waiting 2 s before the deadline.
    const res = await h.route(passThrough({ Records: records }, 5000));
    const answer = (await res.json()) as { batchItemFailures: { itemIdentifier: string }[] };
    release();
    const slow = records.find((x) => x.body.includes('"slow"'))!.messageId;
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: slow }]);
    expect(h.logger.lines.join('\n')).toMatch(/deadline reached/);
    expect(await s.remaining(5)).toEqual(['slow']);
  });

  test('affinity: a record pinned to another published version is invoked on that version; its own and unpinned ones run here', async () => {
    const s = await stack(true);
    const fn = `eve-host-${Math.random().toString(36).slice(2, 8)}`;
    const affinity = { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on', AWS_LAMBDA_FUNCTION_NAME: fn };
    // Version 1 (the previous deploy): reached only by Lambda Invoke, through the stack's emulator.
    const v1 = s.host({ ...affinity, AWS_LAMBDA_FUNCTION_VERSION: '1' });
    const v1Server = await serve(v1.route);
    servers.push(v1Server);
    await registerLambdaTarget(stackEndpoint('AWS_ENDPOINT_URL_LAMBDA'), fn, '1', new URL(v1Server.url).origin);
    // Version 2 (live): the event source mapping's target, consuming through the pass-through.
    const v2 = s.host({ ...affinity, AWS_LAMBDA_FUNCTION_VERSION: '2' });
    // Each World stamps its own version on what it sends (core pins a run to the version that
    // started it); on a table with affinity every World of this build does, so the unpinned one is
    // an older build's.
    await v1.send('pinned-v1');
    await v2.send('pinned-v2');
    await s.sendUnpinned('unpinned');
    const records = await s.receive(3);
    expect(records).toHaveLength(3);
    expect(records.find((r) => r.body.includes('"pinned-v1"'))?.messageAttributes['eve.dep']?.stringValue).toBe(
      `lambda:${fn}:1`,
    );
    const res = await v2.route(passThrough({ Records: records }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ batchItemFailures: [] });
    expect(v1.ran).toEqual(['pinned-v1']);
    expect(v2.ran.sort()).toEqual(['pinned-v2', 'unpinned']);
    expect(await s.remaining(2)).toEqual([]);
  });

  test('an adapter that left a forged `null` in place: records whose receipt handles SQS never issued run nothing', async () => {
    const s = await stack();
    const h = s.host(IN_LAMBDA);
    await h.send('real');
    await h.send('copied');
    const records = await s.receive(2, 2);
    expect(records).toHaveLength(2);
    const real = records.find((r) => r.body.includes('"real"'))!;
    const copied = records.find((r) => r.body.includes('"copied"'))!;
    // A forger who knows the queue's ARN and a message's body, but holds no receipt handle.
    const forged = (r: SQSRecord, n: number): SQSRecord => ({
      ...r,
      messageId: `forged-${n}`,
      receiptHandle: `AQEB${'x'.repeat(40)}${n}`,
    });
    const all = await h.route(passThrough({ Records: [forged(copied, 1), forged(real, 2)] }));
    expect(all.status).toBe(400);
    expect(h.ran).toEqual([]);
    // Beside a real record: the real one runs, the forged one is refused and listed as failed.
    const mixed = await h.route(passThrough({ Records: [real, forged(copied, 3)] }));
    expect(mixed.status).toBe(200);
    expect(await mixed.json()).toEqual({ batchItemFailures: [{ itemIdentifier: 'forged-3' }] });
    expect(h.ran).toEqual(['real']);
    expect(h.logger.lines.join('\n')).toMatch(/no live receive of this queue/);
    // The copied message itself was never touched: it comes back after its receive's 2 s.
    expect(await s.remaining(5)).toEqual(['copied']);
  });
});
