/**
 * Outages park, never dead-letter, and never raise the attempt core sees (src/consumer/delivery/pipeline.ts):
 * S3 failing to return an offloaded body, and a flow route that cannot be connected to. A body
 * whose object is gone is the message's own fault and does count toward the DLQ.
 *
 * The queue redrives after 2 receives, so a park that counted as a receive would dead-letter the
 * message within the test; its visibility timeout is 2 s, which bounds the park.
 */
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { DeleteMessageCommand, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { createSqsHandler } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { MSG_ATTR } from '../../../src/queue/encoding.js';
import { drainQueue, makeWorld, receiveAll, serve, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_outages' as ValidQueueName;
const ENV = { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2', EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' };

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

/** Polls an async condition until it yields a value (waitFor takes synchronous ones). */
async function until<T>(fn: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** A body over the threshold: it travels through S3. */
const big = (runId: string) => ({ runId, pad: 'x'.repeat(2000) });

describe.concurrent('outages', () => {
  test('S3 failing to return an offloaded body parks the copy: not dead-lettered, delivered at attempt 1 once S3 is back', async () => {
    const outcomes: DeliveryOutcome[] = [];
    const w = await makeWorld({
      env: ENV,
      tuning: { payloadThresholdBytes: 1000 },
      queueOptions: { earlyDelivery: false, onDeliveryOutcome: (o) => outcomes.push(o) },
    });
    worlds.push(w);
    let failures = 0;
    (await w.fixture.clients.s3()).middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName === 'GetObjectCommand' && failures < 4) {
          failures++;
          throw Object.assign(new Error('test: S3 unavailable'), {
            name: 'InternalError',
            $metadata: { httpStatusCode: 500 },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'testFailGetObject' },
    );
    const { messageId } = await w.queue.queue(Q, big('wrun_s3_down') as any);
    await waitFor(() => outcomes.length === 5, 60_000, 'the delivery once S3 is back');
    expect(failures).toBe(4);
    // Four parks (twice the receives the queue allows), each a fresh copy, then one dispatch.
    expect(outcomes.map((o) => `${o.action}:${o.reason}`)).toEqual([
      'delete:parked',
      'delete:parked',
      'delete:parked',
      'delete:parked',
      'delete:ack',
    ]);
    expect(w.deliveries[0].meta).toMatchObject({ messageId, attempt: 1 });
    expect(w.deliveries[0].body.runId).toBe('wrun_s3_down');
    expect(await receiveAll(w, await w.queue.transport.dlqUrl())).toEqual([]);
  });

  test('an offloaded body whose object is gone is the message fault: it counts toward the DLQ', async () => {
    const w = await makeWorld({
      env: ENV,
      tuning: { payloadThresholdBytes: 1000 },
      start: false,
      queueOptions: { earlyDelivery: false },
    });
    worlds.push(w);
    const keys: string[] = [];
    w.fixture.clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input: SendMessageCommandInput }).input;
        const key = input.MessageAttributes?.[MSG_ATTR.s3]?.StringValue;
        if ((context as { commandName?: string }).commandName === 'SendMessageCommand' && key) keys.push(key);
        return next(args);
      },
      { step: 'initialize', name: 'testRecordBodyKeys' },
    );
    await w.queue.queue(Q, big('wrun_s3_gone') as any);
    // Delete the body's object before any consumer reads it.
    expect(keys).toHaveLength(1);
    await (await w.fixture.clients.s3()).send(
      new DeleteObjectCommand({ Bucket: w.fixture.config.bucket, Key: keys[0] }),
    );
    await w.queue.start();
    const dlq = await w.queue.transport.dlqUrl();
    await until(
      async () => (await drainQueue(w.fixture.clients.sqs, dlq, 60)).length > 0,
      40_000,
      'the message in the DLQ',
    );
    expect(w.deliveries).toHaveLength(0);
    // The body is what is missing, so the run is not known here; the reason names the object.
    expect(
      w.logger.lines.filter((l) => /^ERROR \[eve-world-aws\] DLQ: .*cannot read offloaded body/.test(l)),
    ).toHaveLength(1);
  });

  test('a flow route no connection reaches: parked on fresh copies (attempt not raised), delivered at attempt 1 once it is up', async () => {
    const w = await makeWorld({ env: ENV, start: false, register: false });
    worlds.push(w);
    const route = w.queue.createQueueHandler('__wkf_workflow_', async (body: any, meta) => {
      w.deliveries.push({ body, meta, at: Date.now() });
    });
    // A port nothing listens on, then the route served on it.
    const probe = await serve(route);
    const flowUrl = probe.url;
    await probe.close();
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_refused' } as any);
    const url = await w.queue.transport.queueUrl();
    const outcomes: DeliveryOutcome[] = [];
    const handler = createSqsHandler({ flowUrl, context: w.ctx, onOutcome: (o) => outcomes.push(o) });
    const invoke = async () => {
      const msgs = await until(
        async () => {
          const got = await receiveAll(w, url);
          return got.length > 0 ? got : undefined;
        },
        30_000,
        'a copy',
      );
      expect(msgs).toHaveLength(1);
      const m = msgs[0];
      const res = await handler({
        Records: [
          {
            messageId: m.MessageId as string,
            receiptHandle: m.ReceiptHandle as string,
            body: m.Body as string,
            attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount },
            messageAttributes: Object.fromEntries(
              Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
                k,
                { stringValue: v.StringValue, dataType: 'String' },
              ]),
            ),
          },
        ],
      });
      // As the event source mapping does: a record reported as a success is deleted.
      if (res.batchItemFailures.length === 0) {
        await w.fixture.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
      }
      return res;
    };
    // Three receives while nothing listens (more than the queue allows): each replaced, none failed.
    for (let i = 0; i < 3; i++) expect(await invoke()).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => `${o.action}:${o.reason}`)).toEqual(['delete:parked', 'delete:parked', 'delete:parked']);
    const server = await serve(route, Number(new URL(flowUrl).port));
    try {
      // The breaker may still be open from the refusals: the copy is parked again until it lets one through.
      await until(
        async () => {
          await invoke();
          return w.deliveries.length === 1;
        },
        60_000,
        'the delivery once the route is up',
      );
    } finally {
      await server.close();
    }
    expect(w.deliveries[0].meta).toMatchObject({ messageId, attempt: 1 });
    expect(await receiveAll(w, await w.queue.transport.dlqUrl())).toEqual([]);
  });
});
