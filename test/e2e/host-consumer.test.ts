/**
 * The host as its own SQS consumer, end to end (docs/deploy.md, "Who consumes the queue"): real
 * workflows compiled by the Workflow DevKit builder, run by the real `@workflow/core` on a World in
 * Lambda mode (AWS_LAMBDA_FUNCTION_NAME set, no poller, no early delivery), against the emulators.
 * The event source mapping is a receive loop on the real queue that invokes the host with each
 * batch; the Lambda Web Adapter's part is the POST of the raw batch to the compiled flow route
 * with `x-amzn-request-context: null` and the invocation's deadline in `x-amzn-lambda-context`
 * (src/consumer/delivery/pass-through.ts). The mapping deletes only what the answer does not list as
 * failed, as Lambda does with ReportBatchItemFailures; the host has already deleted what it
 * settled. Every delivery of every run goes that way: the runs complete with their results, each
 * step completes once, nothing is left on the queue.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { getRun, start } from 'workflow/api';
import { queueNameOf } from '../../src/aws/arn.js';
import { FLOW_PATH } from '../../src/config/limits.js';
import type { SQSRecord } from '../../src/consumer/delivery/sqs-event-handler.js';
import { type E2e, startE2e } from '../helpers/e2e.js';

const SECRET = '9f3b7d1e5a2c8f0b4d6e1a9c3f5b7d2e8a0c6f4b1d9e3a5c7f2b8d0e6a4c1f9b';
let e2e: E2e;
let stop: () => Promise<void>;
/** The invocations of the host by the event source mapping, and their answers. */
const invocations: Array<{ records: number; status: number; failures: number }> = [];

beforeAll(async () => {
  e2e = await startE2e({
    consumer: 'none',
    earlyDelivery: false,
    extraEnv: {
      AWS_LAMBDA_FUNCTION_NAME: 'eve-host',
      AWS_LAMBDA_FUNCTION_VERSION: '4',
      EVE_WORLD_AWS_SIGNING_SECRET: SECRET,
      EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '20',
      EVE_WORLD_AWS_METRICS: '0',
    },
  });
  const { sqs } = e2e.fixture.clients;
  const queueUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: queueNameOf(e2e.fixture.config.queue) })))
    .QueueUrl as string;
  const queueArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] })))
    .Attributes?.QueueArn as string;
  let polling = true;
  const batches = new Set<Promise<void>>();
  const invoke = async (msgs: Message[]) => {
    const Records: SQSRecord[] = msgs.map((m) => ({
      messageId: m.MessageId as string,
      receiptHandle: m.ReceiptHandle as string,
      body: m.Body ?? '',
      attributes: { ApproximateReceiveCount: '1', ...m.Attributes },
      messageAttributes: Object.fromEntries(
        Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
          k,
          { stringValue: v.StringValue, dataType: v.DataType ?? 'String' },
        ]),
      ),
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn,
      awsRegion: 'us-east-1',
    }));
    const res = await e2e.flow(
      new Request(`http://127.0.0.1:8080${FLOW_PATH}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-amzn-request-context': 'null',
          'x-amzn-lambda-context': JSON.stringify({ request_id: 'esm', deadline: Date.now() + 60_000 }),
        },
        body: JSON.stringify({ Records }),
      }),
    );
    const answer = (await res.json()) as { batchItemFailures?: { itemIdentifier: string }[] };
    const failed = new Set((answer.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    invocations.push({ records: Records.length, status: res.status, failures: failed.size });
    const done = msgs.filter((m) => !failed.has(m.MessageId as string));
    if (done.length > 0)
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
        }),
      );
  };
  const loop = (async () => {
    while (polling) {
      const got = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      if (!got.Messages?.length) continue;
      const p = invoke(got.Messages).catch((err) => console.error(`host-consumer e2e: a batch failed: ${err}`));
      batches.add(p);
      void p.finally(() => batches.delete(p));
    }
  })();
  stop = async () => {
    polling = false;
    await loop;
    await Promise.all(batches);
  };
}, 120_000);

afterAll(async () => {
  await stop?.();
  await e2e?.close();
});

test('every delivery through the pass-through: runs complete, each step once, nothing left on the queue', async () => {
  const runs = await Promise.all([
    start(e2e.workflows.manySteps as never, [6]),
    start(e2e.workflows.fanOut as never, [5]),
    start(e2e.workflows.sequentialSteps as never, [1]),
  ]);
  const results = await Promise.all(runs.map((r) => getRun(r.runId).returnValue));
  expect(results).toEqual([6, [0, 2, 4, 6, 8], 11]);
  // The mapping invoked the host, and every invocation was a batch the route took (200).
  expect(invocations.length).toBeGreaterThan(0);
  expect(invocations.every((i) => i.status === 200)).toBe(true);
  expect(invocations.reduce((n, i) => n + i.failures, 0)).toBe(0);
  // No in-process delivery: the registered handler never ran a delivery of its own.
  for (const r of runs) expect(e2e.invocations.get(r.runId) ?? 0).toBe(0);
  // Each step completed once in each run's log.
  const completed = async (runId: string) =>
    (await e2e.world.events.list({ runId, pagination: { limit: 1000 } } as never)).data.filter(
      (e) => e.eventType === 'step_completed',
    ).length;
  expect(await Promise.all(runs.map((r) => completed(r.runId)))).toEqual([6, 5, 3]);
  // Nothing left: every copy was settled and deleted.
  await stop();
  const { sqs } = e2e.fixture.clients;
  const queueUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: queueNameOf(e2e.fixture.config.queue) })))
    .QueueUrl as string;
  const left = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  expect(left.Attributes).toMatchObject({
    ApproximateNumberOfMessages: '0',
    ApproximateNumberOfMessagesNotVisible: '0',
  });
}, 180_000);
