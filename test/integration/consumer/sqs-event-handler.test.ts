/**
 * The SQS-event Lambda handler (`@portfolio/eve-world-aws/lambda`) with synthetic events built from
 * real messages on the emulated queue: `batchItemFailures` lists exactly the records to retry, in
 * process and over signed HTTP.
 */
import type { Message, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { createSqsHandler, type SQSEvent, type SQSRecord } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { MSG_ATTR } from '../../../src/queue/encoding.js';
import { MemoryLogger, makeWorld, receiveAll, serve, sleep, type World } from '../../helpers/queue.js';

const Q = '__wkf_workflow_lambda' as ValidQueueName;

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

/** The record shape Lambda's SQS event source mapping produces. */
function toRecord(m: Message, arn: string): SQSRecord {
  const messageAttributes: SQSRecord['messageAttributes'] = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
    messageAttributes[k] = {
      stringValue: v.StringValue,
      dataType: v.DataType ?? 'String',
      stringListValues: [],
      binaryListValues: [],
    };
  }
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body!,
    attributes: {
      ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
      SentTimestamp: String(Date.now()),
    },
    messageAttributes,
    md5OfBody: m.MD5OfBody,
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: 'us-east-1',
  };
}

async function eventOf(w: World, count: number): Promise<{ event: SQSEvent; byRun: Map<string, string> }> {
  const url = await w.queue.transport.queueUrl();
  const msgs: Message[] = [];
  const end = Date.now() + 10_000;
  while (msgs.length < count && Date.now() < end) msgs.push(...(await receiveAll(w, url)));
  const byRun = new Map<string, string>();
  for (const m of msgs) {
    const runId = /"runId":"([^"]+)"/.exec(m.Body ?? '')?.[1] ?? m.Body ?? '';
    byRun.set(runId, m.MessageId!);
  }
  return { event: { Records: msgs.map((m) => toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:q')) }, byRun };
}

describe.concurrent('Lambda SQS handler', () => {
  test('returns batchItemFailures for exactly the records that must be retried (in process)', async ({ expect }) => {
    const w = await makeWorld({ start: false, register: false, tuning: { maxDelayHopSeconds: 1 } });
    worlds.push(w);
    const flow = w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
      w.deliveries.push({ body, meta, at: Date.now() });
      if (body.runId === 'fail') throw new Error('step blew up');
      if (body.runId === 'later') return { timeoutSeconds: 1 };
      return undefined;
    });
    await w.queue.queue(Q, { runId: 'ok' });
    await w.queue.queue(Q, { runId: 'fail' });
    await w.queue.queue(Q, { runId: 'later' });
    await w.queue.queue(Q, { runId: 'not-due' }, { delaySeconds: 30 }); // hop of 1 s, due in 30 s
    const url = await w.queue.transport.queueUrl();
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    await w.fixture.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: 'garbage',
        MessageAttributes: {
          [MSG_ATTR.queue]: { DataType: 'String', StringValue: Q },
          [MSG_ATTR.id]: { DataType: 'String', StringValue: 'msg_GARBAGE' },
        },
      }),
    );
    await sleep(1100); // let the first hop of 'not-due' become visible
    const { event, byRun } = await eventOf(w, 5);
    expect(event.Records).toHaveLength(5);

    const outcomes: DeliveryOutcome[] = [];
    const logger = new MemoryLogger();
    const handler = createSqsHandler({ flow, context: w.ctx, logger, onOutcome: (o) => outcomes.push(o) });
    const res = await handler(event);
    // A failed dispatch ('fail'; 'garbage', refused by the route) is replaced by a copy counting
    // it (src/consumer/delivery/failures.ts): done for Lambda.
    expect(res.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([byRun.get('later')]);
    expect(w.deliveries.map((d) => d.body.runId).sort()).toEqual(['fail', 'later', 'ok']);
    expect(
      outcomes.map((o) => `${o.reason}${o.action === 'delete' && o.failure ? `:${o.failure}` : ''}`).sort(),
    ).toEqual(['ack', 'deferred', 'redelayed', 'retried:failed', 'retried:malformed']);

    // 'later' had its visibility set to 1 s: it is back soon, as the same SQS message. The
    // redelayed 'not-due' has a fresh copy in the queue (the original is Lambda's to delete).
    await sleep(1200);
    const again = await receiveAll(w, url);
    const ids = again.map((m) => m.MessageId);
    expect(ids).toContain(byRun.get('later'));
    const copies = again.filter((m) => m.Body?.includes('not-due'));
    expect(copies.length).toBeGreaterThanOrEqual(1);
    expect(copies.some((m) => m.MessageId !== byRun.get('not-due'))).toBe(true);
  });

  test('a copy an older build marked as delivered early (`eve.early`) is delivered as any other: the mark is ignored', async ({
    expect,
  }) => {
    const w = await makeWorld({ start: false, register: false });
    worlds.push(w);
    const flow = w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
      w.deliveries.push({ body, meta, at: Date.now() });
      return undefined;
    });
    const url = await w.queue.transport.queueUrl();
    // As a host of the previous build (same message format 2) sends them: a mark still within its
    // hold, one past it, and an unreadable one. That build held such copies; this one never does.
    const { envelopeAttributes, encodePayload } = await import('../../../src/queue/encoding.js');
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    const send = (runId: string, messageId: string, mark: string) =>
      w.fixture.clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: encodePayload({ runId }),
          MessageAttributes: {
            ...envelopeAttributes({ queueName: Q, messageId, attemptOffset: 0 }),
            'eve.early': { DataType: 'String', StringValue: mark },
          },
        }),
      );
    await send('within', 'msg_MARK_WITHIN', `host-1 ${Date.now() + 20_000}`);
    await send('past', 'msg_MARK_PAST', `host-1 ${Date.now() - 1}`);
    await send('garbage', 'msg_MARK_GARBAGE', 'not a mark');
    const { event } = await eventOf(w, 3);
    expect(event.Records).toHaveLength(3);
    const sent: SendMessageCommandInput[] = [];
    w.fixture.clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName === 'SendMessageCommand') {
          sent.push((args as { input: SendMessageCommandInput }).input);
        }
        return next(args);
      },
      { step: 'initialize', name: 'testRecordSends' },
    );
    const outcomes: DeliveryOutcome[] = [];
    const handler = createSqsHandler({
      flow,
      context: w.ctx,
      logger: new MemoryLogger(),
      onOutcome: (o) => outcomes.push(o),
    });
    const res = await handler(event);
    expect(res.batchItemFailures).toEqual([]);
    expect(w.deliveries.map((d) => d.body.runId).sort()).toEqual(['garbage', 'past', 'within']);
    expect(w.deliveries.map((d) => d.meta.attempt)).toEqual([1, 1, 1]);
    expect(outcomes.map((o) => `${o.messageId} ${o.reason}`).sort()).toEqual([
      'msg_MARK_GARBAGE ack',
      'msg_MARK_PAST ack',
      'msg_MARK_WITHIN ack',
    ]);
    expect(sent).toHaveLength(0);
  });

  test('over HTTP: signed deliveries succeed; a wrong secret is refused (401) and counted as a failure of the message', async ({
    expect,
  }) => {
    const secret = '8d3f1a6c0e9b2d7f4a5c1e8b0d6f3a9c2e7b4d1f8a0c5e3b9d6f2a7c4e1b0d8f';
    const w = await makeWorld({ start: false, register: false, env: { EVE_WORLD_AWS_SIGNING_SECRET: secret } });
    worlds.push(w);
    const server = await serve(
      w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
        w.deliveries.push({ body, meta, at: Date.now() });
        return undefined;
      }),
    );
    try {
      await w.queue.queue(Q, { runId: 'http-ok' });
      const first = await eventOf(w, 1);
      const good = createSqsHandler({ flowUrl: server.url, context: w.ctx, logger: new MemoryLogger() });
      expect(await good(first.event)).toEqual({ batchItemFailures: [] });
      expect(w.deliveries.map((d) => d.body.runId)).toEqual(['http-ok']);

      await w.queue.queue(Q, { runId: 'http-bad' });
      const second = await eventOf(w, 1);
      const wrong = await makeWorld({
        sameAs: w,
        start: false,
        register: false,
        env: { EVE_WORLD_AWS_SIGNING_SECRET: 'a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9' },
      });
      worlds.push(wrong);
      const logger = new MemoryLogger();
      const outcomes: DeliveryOutcome[] = [];
      const bad = createSqsHandler({
        flowUrl: server.url,
        context: wrong.ctx,
        logger,
        onOutcome: (o) => outcomes.push(o),
      });
      const res = await bad(second.event);
      // Refused, and counted as a failure of the message in a fresh copy: done for Lambda.
      expect(res.batchItemFailures).toEqual([]);
      expect(outcomes).toMatchObject([{ action: 'delete', reason: 'retried', failure: 'unauthorized' }]);
      expect(w.deliveries).toHaveLength(1);
      expect(logger.lines.some((l) => l.includes('unauthorized'))).toBe(true);
    } finally {
      await server.close();
    }
  });

  test('records still running at the Lambda deadline are reported as failures', async ({ expect }) => {
    const w = await makeWorld({ start: false, register: false });
    worlds.push(w);
    await w.queue.queue(Q, { runId: 'slow' });
    const { event, byRun } = await eventOf(w, 1);
    const handler = createSqsHandler({
      flow: () => new Promise(() => {}),
      context: w.ctx,
      deadlineMarginMs: 2000,
      logger: new MemoryLogger(),
    });
    const res = await handler(event, { getRemainingTimeInMillis: () => 2300 });
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: byRun.get('slow') }]);
  });
});

test('without a flow route configured, the handler fails the whole batch loudly', async () => {
  const w = await makeWorld({ start: false, register: false });
  worlds.push(w);
  const handler = createSqsHandler({ context: w.ctx });
  await expect(handler({ Records: [] })).rejects.toThrow(/EVE_WORLD_AWS_FLOW_URL/);
});

describe('Lambda SQS handler heartbeat', () => {
  test('the heartbeat uses the visibility in force on the queue, not the configured one', async ({ expect }) => {
    // Config says 900 s (the default); the queue really has 2 s (drift). A delivery that runs 6 s
    // must stay hidden: the heartbeat reads the queue's value and extends every ~0.7 s.
    const w = await makeWorld({ start: false, register: false });
    worlds.push(w);
    const { ReceiveMessageCommand, SetQueueAttributesCommand } = await import('@aws-sdk/client-sqs');
    const url = await w.queue.transport.queueUrl();
    await w.fixture.clients.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: '2' } }),
    );
    await w.queue.queue(Q, { runId: 'slow' });
    const receive = (visibility?: number) =>
      w.fixture.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 1,
          WaitTimeSeconds: 1,
          VisibilityTimeout: visibility,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
    // As the event source mapping does: received with the queue's own visibility.
    const first = (await receive()).Messages ?? [];
    expect(first).toHaveLength(1);
    const flow = w.queue.createQueueHandler('__wkf_workflow_', async () => {
      await sleep(6000);
    });
    const handler = createSqsHandler({ flow, context: w.ctx, logger: new MemoryLogger() });
    let stolen = 0;
    let running = true;
    const thief = (async () => {
      while (running) stolen += ((await receive(1)).Messages ?? []).length;
    })();
    const res = await handler({ Records: first.map((m) => toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:q')) });
    running = false;
    await thief;
    expect(res.batchItemFailures).toEqual([]);
    expect(stolen).toBe(0);
  });

  test('a flow-route outage opens the circuit: later records are parked without calling the route, none is dead-lettered', async ({
    expect,
  }) => {
    const w = await makeWorld({ start: false, register: false, env: { EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' } });
    worlds.push(w);
    for (let i = 0; i < 6; i++) await w.queue.queue(Q, { runId: `down_${i}` });
    const { event } = await eventOf(w, 6);
    expect(event.Records).toHaveLength(6);
    let calls = 0;
    const logger = new MemoryLogger();
    const handler = createSqsHandler({
      flow: async () => {
        calls++;
        return new Response('bad gateway', { status: 502 });
      },
      context: w.ctx,
      concurrency: 1,
      logger,
    });
    const res = await handler(event);
    expect(calls).toBe(3); // the breaker's threshold; the other three never reached the route
    expect(logger.lines.filter((l) => l.includes('circuit open'))).toHaveLength(1);
    // MAX_RECEIVE_COUNT 2: each copy is on its last allowed receive, so instead of keeping it (the
    // next receive would dead-letter it) it is replaced by a fresh copy and reported as done.
    expect(res.batchItemFailures).toEqual([]);
    expect(logger.lines.some((l) => l.includes('DLQ:'))).toBe(false);
    await sleep(1500);
    expect(await receiveAll(w, await w.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test('a copy that cannot even be built is poison: it never takes the probe slot of an open circuit', async ({
    expect,
  }) => {
    const w = await makeWorld({ start: false, register: false });
    worlds.push(w);
    for (let i = 0; i < 3; i++) await w.queue.queue(Q, { runId: `down_${i}` });
    const down = await eventOf(w, 3);
    let flow: (req: Request) => Promise<Response> = async () => new Response('bad gateway', { status: 502 });
    const logger = new MemoryLogger();
    const outcomes: DeliveryOutcome[] = [];
    const handler = createSqsHandler({
      flow: (req) => flow(req),
      context: w.ctx,
      concurrency: 1,
      logger,
      onOutcome: (o) => outcomes.push(o),
    });
    await handler(down.event);
    expect(logger.lines.filter((l) => l.includes('circuit open'))).toHaveLength(1);
    await sleep(5100); // the cool-down: the next delivery is the probe

    // First in the batch: a copy whose pass-through header name no request can carry.
    const url = await w.queue.transport.queueUrl();
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    await w.fixture.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: '{"runId":"poison"}',
        MessageAttributes: {
          [MSG_ATTR.queue]: { DataType: 'String', StringValue: Q },
          [MSG_ATTR.id]: { DataType: 'String', StringValue: 'msg_POISON' },
          [MSG_ATTR.headers]: { DataType: 'String', StringValue: JSON.stringify({ 注文: 'x' }) },
        },
      }),
    );
    const poison = await eventOf(w, 1);
    await w.queue.queue(Q, { runId: 'ok' });
    const ok = await eventOf(w, 1);
    flow = w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
      w.deliveries.push({ body, meta, at: Date.now() });
    });
    outcomes.length = 0;
    const res = await handler({ Records: [...poison.event.Records, ...ok.event.Records] });
    // The parked copies of the outage are back by now too: all of them acked, the poison failed
    // (counted in a fresh copy).
    expect(outcomes.find((o) => o.messageId === 'msg_POISON')).toMatchObject({
      action: 'delete',
      reason: 'retried',
      failure: 'malformed',
    });
    expect(outcomes.filter((o) => o.messageId !== 'msg_POISON').map((o) => o.reason)).toEqual(
      outcomes.filter((o) => o.messageId !== 'msg_POISON').map(() => 'ack'),
    );
    expect(res.batchItemFailures).toEqual([]);
    expect(w.deliveries.map((d) => d.body.runId)).toContain('ok');
    expect(logger.lines.filter((l) => l.includes('circuit closed'))).toHaveLength(1);
  });

  test('an in-process flow route that throws is the message failing, not an outage', async ({ expect }) => {
    const w = await makeWorld({ start: false, register: false });
    worlds.push(w);
    for (let i = 0; i < 4; i++) await w.queue.queue(Q, { runId: `throws_${i}` });
    const { event } = await eventOf(w, 4);
    const logger = new MemoryLogger();
    const outcomes: DeliveryOutcome[] = [];
    const handler = createSqsHandler({
      flow: async () => {
        throw new TypeError('Cannot convert argument to a ByteString');
      },
      context: w.ctx,
      concurrency: 1,
      logger,
      onOutcome: (o) => outcomes.push(o),
    });
    const res = await handler(event);
    expect(outcomes.map((o) => (o.action === 'delete' ? o.failure : undefined))).toEqual([
      'malformed',
      'malformed',
      'malformed',
      'malformed',
    ]);
    expect(outcomes.map((o) => o.reason)).toEqual(['retried', 'retried', 'retried', 'retried']);
    expect(res.batchItemFailures).toHaveLength(0);
    expect(logger.lines.filter((l) => l.includes('circuit open'))).toEqual([]);
  });
});
