/**
 * The Lambda worker's delivery by version (src/consumer/delivery/invoke.ts): a message whose `eve.dep` is
 * `lambda:<host function>:<version>` goes to that version by Lambda Invoke on the wire (the
 * stack's Lambda emulator, AWS_ENDPOINT_URL_LAMBDA), signed for `lambda:<fn>:<ver>` and verified
 * by the host against its own AWS_LAMBDA_FUNCTION_NAME/_VERSION; any other message goes to the
 * flow URL as before; a version Lambda no longer has is retired in the registry and its message
 * goes to the live URL once (where core's guard fails the run), never back to the queue.
 */
import { randomBytes } from 'node:crypto';
import { DeleteMessageCommand, type Message, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { registerLambdaTarget } from '../../../emulator/lambda-service.js';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { createSqsHandler, type SQSEvent, type SQSRecord } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { readDeployment, registerDeployment } from '../../../src/deployment/registry.js';
import { encodePayload, envelopeAttributes } from '../../../src/queue/encoding.js';
import { stackEndpoint } from '../../helpers/aws.js';
import { MemoryLogger, makeWorld, receiveAll, serve, type World } from '../../helpers/queue.js';

const Q = '__wkf_workflow_invoke' as ValidQueueName;
const SECRET = '3c9e1f7a5b2d8c4e0a6f1b9d3e7c5a2f8b0d4e6a1c9f3b7d5e2a8c0f6b4d1e9a';
const endpoint = stackEndpoint('AWS_ENDPOINT_URL_LAMBDA');
const fn = `host-${randomBytes(4).toString('hex')}`;

type Host = { world: World; server: Awaited<ReturnType<typeof serve>> };
const worlds: World[] = [];
const servers: Array<Awaited<ReturnType<typeof serve>>> = [];
let worker: World;
let live: Host;
let v1: Host;
let v2: Host;

/** A host: the flow route of a World whose environment is `env` (a Lambda version's, or none). */
async function host(env: Record<string, string>): Promise<Host> {
  const world = await makeWorld({ sameAs: worker, start: false, register: false, env });
  worlds.push(world);
  const server = await serve(
    world.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
      world.deliveries.push({ body, meta, at: Date.now() });
      return undefined;
    }),
  );
  servers.push(server);
  return { world, server };
}

/** The base URL a Lambda target is (the Web Adapter adds the event's path). */
const origin = (h: Host) => new URL(h.server.url).origin;

beforeAll(async () => {
  worker = await makeWorld({
    start: false,
    register: false,
    env: { EVE_WORLD_AWS_SIGNING_SECRET: SECRET, EVE_WORLD_AWS_HOST_FUNCTION: fn },
  });
  worlds.push(worker);
  live = await host({});
  v1 = await host({ AWS_LAMBDA_FUNCTION_NAME: fn, AWS_LAMBDA_FUNCTION_VERSION: '1' });
  v2 = await host({ AWS_LAMBDA_FUNCTION_NAME: fn, AWS_LAMBDA_FUNCTION_VERSION: '2' });
  await registerLambdaTarget(endpoint, fn, '1', origin(v1));
  await registerLambdaTarget(endpoint, fn, '2', origin(v2));
  // Version 3 is served by version 2's code: a delivery signed for 3 must not pass there.
  await registerLambdaTarget(endpoint, fn, '3', origin(v2));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

async function send(runId: string, deploymentId?: string): Promise<void> {
  await worker.fixture.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: await worker.queue.transport.queueUrl(),
      MessageBody: encodePayload({ runId }),
      MessageAttributes: envelopeAttributes({
        queueName: Q,
        messageId: `msg_${runId.toUpperCase()}`,
        attemptOffset: 0,
        ...(deploymentId ? { deploymentId } : {}),
      }),
    }),
  );
}

/** The records Lambda's event source mapping would hand the worker for `count` messages. */
async function event(count: number): Promise<{ event: SQSEvent; byRun: Map<string, string> }> {
  const url = await worker.queue.transport.queueUrl();
  const msgs: Message[] = [];
  const end = Date.now() + 10_000;
  while (msgs.length < count && Date.now() < end) msgs.push(...(await receiveAll(worker, url)));
  const byRun = new Map<string, string>();
  const Records: SQSRecord[] = msgs.map((m) => {
    byRun.set(/"runId":"([^"]+)"/.exec(m.Body ?? '')?.[1] ?? '', m.MessageId!);
    const messageAttributes: SQSRecord['messageAttributes'] = {};
    for (const [k, v] of Object.entries(m.MessageAttributes ?? {}))
      messageAttributes[k] = { stringValue: v.StringValue, dataType: v.DataType ?? 'String' };
    return {
      messageId: m.MessageId!,
      receiptHandle: m.ReceiptHandle!,
      body: m.Body!,
      attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1' },
      messageAttributes,
    };
  });
  return { event: { Records }, byRun };
}

const runsOf = (h: Host) => h.world.deliveries.map((d) => d.body.runId as string).sort();

describe('Lambda worker: delivery by version', () => {
  test("each message reaches its run's version by Invoke; one with no version or another function's goes to the flow URL", async () => {
    await send('to-v1', `lambda:${fn}:1`);
    await send('to-v2', `lambda:${fn}:2`);
    await send('unstamped');
    await send('other-fn', 'lambda:someone-else:1');
    const { event: e } = await event(4);
    expect(e.Records).toHaveLength(4);
    const outcomes: DeliveryOutcome[] = [];
    const handler = createSqsHandler({
      context: worker.ctx,
      flowUrl: live.server.url,
      logger: new MemoryLogger(),
      onOutcome: (o) => outcomes.push(o),
    });
    expect(await handler(e)).toEqual({ batchItemFailures: [] });
    expect(runsOf(v1)).toEqual(['to-v1']);
    expect(runsOf(v2)).toEqual(['to-v2']);
    expect(runsOf(live)).toEqual(['other-fn', 'unstamped']);
    expect(outcomes.map((o) => o.reason)).toEqual(['ack', 'ack', 'ack', 'ack']);
  });

  test('the signature binds the version: a delivery signed for version 3 is refused (401) by version 2', async () => {
    const before = runsOf(v2);
    await send('to-v3', `lambda:${fn}:3`);
    const { event: e, byRun } = await event(1);
    const logger = new MemoryLogger();
    const outcomes: DeliveryOutcome[] = [];
    const handler = createSqsHandler({
      context: worker.ctx,
      flowUrl: live.server.url,
      logger,
      onOutcome: (o) => outcomes.push(o),
    });
    // A failed dispatch: the copy is replaced by one counting the failure (src/consumer/delivery/failures.ts),
    // so the batch reports none; the refusal is named.
    expect(byRun.get('to-v3')).toBeDefined();
    expect(await handler(e)).toEqual({ batchItemFailures: [] });
    expect(outcomes).toMatchObject([{ action: 'delete', reason: 'retried', failure: 'unauthorized' }]);
    expect(logger.lines.join('\n')).toMatch(/refused .* as unauthorized/);
    expect(runsOf(v2)).toEqual(before);
    // The replacement comes back after the failure backoff with one failed dispatch counted; it is
    // taken off the queue here so that no later test receives it.
    const again = await event(1);
    const [copy] = again.event.Records;
    expect(again.byRun.has('to-v3')).toBe(true);
    expect(copy?.messageAttributes['eve.failures']?.stringValue).toBe('1');
    expect(copy?.messageAttributes['eve.id']?.stringValue).toBe('msg_TO-V3');
    await worker.fixture.clients.sqs.send(
      new DeleteMessageCommand({
        QueueUrl: await worker.queue.transport.queueUrl(),
        ReceiptHandle: copy!.receiptHandle,
      }),
    );
  });

  test('a version Lambda no longer has: its deployment is retired and the message goes to the live URL once', async () => {
    const gone = `lambda:${fn}:9`;
    await registerDeployment(worker.ctx, gone, 'lambda');
    await send('to-gone', gone);
    const { event: e } = await event(1);
    const logger = new MemoryLogger();
    const handler = createSqsHandler({ context: worker.ctx, flowUrl: live.server.url, logger });
    expect(await handler(e)).toEqual({ batchItemFailures: [] });
    expect((await readDeployment(worker.ctx, gone, true))?.status).toBe('retired');
    expect(live.world.deliveries.filter((d) => d.body.runId === 'to-gone')).toHaveLength(1);
    expect(runsOf(v1)).not.toContain('to-gone');
    // No copy went back to the queue (Lambda deletes the record this handler reported done).
    const again = await receiveAll(worker, await worker.queue.transport.queueUrl());
    expect(again.filter((m) => m.Body?.includes('to-gone'))).toEqual([]);
    expect(logger.lines.join('\n')).toMatch(
      /deployment lambda:host-[0-9a-f]+:9 no longer exists in Lambda: marked retired/,
    );
  });
});
