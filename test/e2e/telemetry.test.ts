/**
 * Real workflows through real core with an in-memory OpenTelemetry SDK registered, three ways:
 * the World's in-process poller, and the Lambda SQS handler (`createSqsHandler`) fed by a small
 * event-source-mapping loop, both in process and over signed HTTP to a served flow route (where
 * no async context crosses: only the signed `traceparent` does).
 *
 * Checked: every core `workflow.execute` and `step.execute` span has the World's delivery span
 * (`process <queue>`) among its ancestors for >= 90% of them; every SQS send core makes is a
 * `send <queue>` span under core's `queue.publish`; the EMF lines validate against the spec and
 * their per-outcome counts equal the delivery spans' outcomes.
 */

import { DeleteMessageBatchCommand, GetQueueUrlCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { queueNameOf } from '../../src/aws/arn.js';
import { createSqsHandler, type SQSRecord } from '../../src/consumer/delivery/sqs-event-handler.js';
import { createContext } from '../../src/context/world-context.js';
import { disableMetrics, enableMetrics, flushMetrics } from '../../src/telemetry/metrics.js';
import { type E2e, startE2e } from '../helpers/e2e.js';
import { emfViolations } from '../helpers/emf.js';
import { type InMemoryTracing, parentOf, registerInMemoryTracing } from '../helpers/otel.js';
import { serve } from '../helpers/queue.js';
import { toRecord } from '../lambda/esm-simulator.js';

let otel: InMemoryTracing;
const emf: string[] = [];

beforeAll(() => {
  otel = registerInMemoryTracing();
});
afterAll(async () => {
  disableMetrics();
  await otel.shutdown();
});

const isDelivery = (s: ReadableSpan) => s.attributes['messaging.system'] === 'aws_sqs' && s.name.startsWith('process ');

/** The share of spans named `prefix…` that have a delivery span among their ancestors. */
function underDelivery(spans: ReadableSpan[], prefix: string): { total: number; share: number } {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const targets = spans.filter((s) => s.name.startsWith(prefix));
  const ok = targets.filter((s) => {
    for (let p = parentOf(s); p; p = parentOf(byId.get(p) as ReadableSpan)) {
      const parent = byId.get(p);
      if (!parent) return false;
      if (isDelivery(parent)) return parent.spanContext().traceId === s.spanContext().traceId;
    }
    return false;
  });
  return { total: targets.length, share: targets.length ? ok.length / targets.length : 0 };
}

/** Sums of the Count metrics in the EMF lines captured so far, each line validated. */
function emfSums(): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const line of emf) {
    const doc = JSON.parse(line);
    expect(emfViolations(doc)).toEqual([]);
    for (const m of doc._aws.CloudWatchMetrics[0].Metrics as { Name: string; Unit: string }[]) {
      if (m.Unit !== 'Count') continue;
      sums[m.Name] = (sums[m.Name] ?? 0) + (doc[m.Name] as number);
    }
  }
  return sums;
}

/** The per-outcome delivery counts of the EMF lines. */
function emfOutcomes(sums = emfSums()): Record<string, number> {
  return Object.fromEntries(Object.entries(sums).filter(([k]) => k.startsWith('Deliveries')));
}

const METRIC_BY_OUTCOME: Record<string, string> = {
  acked: 'DeliveriesAcked',
  retried: 'DeliveriesRetried',
  deferred: 'DeliveriesDeferred',
  'dead-lettered': 'DeliveriesDeadLettered',
  'refused-copy': 'DeliveriesRefusedCopy',
};

function spanOutcomes(spans: ReadableSpan[]): Record<string, number> {
  const out: Record<string, number> = {};
  // An early delivery's outcome is counted by the copy that takes its verdict (and its span).
  for (const s of spans.filter((d) => isDelivery(d) && d.attributes['eve_world_aws.delivery.early'] !== true)) {
    const m = METRIC_BY_OUTCOME[String(s.attributes['eve_world_aws.delivery.outcome'])];
    out[m] = (out[m] ?? 0) + 1;
  }
  return out;
}

async function runWorkflows(e2e: E2e): Promise<void> {
  const runs = await Promise.all([
    start(e2e.workflows.fanOut as never, [3]),
    start(e2e.workflows.sequentialSteps as never, [1]),
    start(e2e.workflows.addition as never, [2, 3]),
    start(e2e.workflows.sleepThenStep as never, ['1s']),
  ]);
  const results = await Promise.all(runs.map((r) => r.returnValue));
  expect(results[0]).toEqual([0, 2, 4]);
  expect(results[2]).toBe(5);
}

/** Waits until no delivery span ended for `quietMs`. */
async function settled(quietMs = 1500): Promise<void> {
  let last = -1;
  for (;;) {
    const n = otel.spans().filter(isDelivery).length;
    if (n === last) return;
    last = n;
    await new Promise((r) => setTimeout(r, quietMs));
  }
}

describe('in-process poller', () => {
  let e2e: E2e;
  beforeAll(async () => {
    e2e = await startE2e({ extraEnv: { EVE_WORLD_AWS_METRICS: '1' } });
    // Capture the documents instead of stdout (same registry the consumer enabled).
    enableMetrics({ dimensions: { Queue: queueNameOf(e2e.fixture.config.queue) }, write: (l) => emf.push(l) });
  });
  afterAll(async () => {
    await e2e?.close();
  });

  it('core runs inside the delivery span, its sends under queue.publish, and EMF counts the deliveries', async () => {
    otel.reset();
    emf.length = 0;
    await runWorkflows(e2e);
    await settled();
    const spans = otel.spans();
    const executes = underDelivery(spans, 'workflow.execute');
    const steps = underDelivery(spans, 'step.execute');
    expect(executes.total).toBeGreaterThanOrEqual(3);
    expect(executes.share).toBeGreaterThanOrEqual(0.9);
    expect(steps.total).toBeGreaterThanOrEqual(5);
    expect(steps.share).toBeGreaterThanOrEqual(0.9);

    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    // Every SQS send has core's span as its parent: `workflow.start`, or `queue.publish` inside an
    // invocation (the sleep's wake-up message); none is a root of its own.
    const sends = spans.filter((s) => s.name.startsWith('send ') && s.attributes['messaging.system'] === 'aws_sqs');
    const sendParents = sends.map((s) => byId.get(parentOf(s) ?? '')?.name ?? 'none');
    expect(sends.length).toBeGreaterThanOrEqual(4);
    expect(sendParents.filter((n) => !/^(workflow\.start|queue\.publish)/.test(n))).toEqual([]);
    expect(sendParents).toContain('queue.publish');
    const publishes = spans.filter((s) => s.name === 'queue.publish');
    expect(publishes.every((p) => sends.some((s) => parentOf(s) === p.spanContext().spanId))).toBe(true);

    // The World's event writes, with their type, inside core's spans.
    const writes = spans.filter((s) => s.name === 'eve_world_aws.events.create');
    const types = new Set(writes.map((s) => s.attributes['eve_world_aws.event.type']));
    for (const t of ['run_created', 'run_started', 'step_completed', 'run_completed']) expect(types).toContain(t);
    expect(writes.filter((s) => !parentOf(s))).toHaveLength(0);

    await e2e.close(); // flushes the poller's metrics
    const sums = emfSums();
    const counted = emfOutcomes(sums);
    expect(counted).toEqual(spanOutcomes(spans));
    expect(counted.DeliveriesAcked).toBeGreaterThanOrEqual(executes.total);
    expect(sums.RunsStarted).toBe(4);
    expect(sums.RunsCompleted).toBe(4);
    expect(sums.StepsCompleted).toBe(3 + 3 + 1 + 1);
  });
});

/**
 * A minimal event source mapping: receive a batch, invoke the handler with it, delete what it
 * did not report as failed (ReportBatchItemFailures). Runs until `stop()`.
 */
function eventSourceMapping(e2e: E2e, handler: ReturnType<typeof createSqsHandler>) {
  let running = true;
  const counts = { records: 0 };
  const loop = (async () => {
    const { sqs } = e2e.fixture.clients;
    const { QueueUrl: queueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: e2e.fixture.config.queue }));
    while (running) {
      const msgs = await sqs
        .send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
          }),
        )
        .then((o) => o.Messages ?? []);
      if (msgs.length === 0) continue;
      counts.records += msgs.length;
      const res = await handler({
        Records: msgs.map((m) => toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:q', 'us-east-1') as SQSRecord),
      });
      const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      const done = msgs.filter((m) => !failed.has(m.MessageId as string));
      if (done.length > 0) {
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle as string })),
          }),
        );
      }
    }
  })();
  return {
    counts,
    async stop() {
      running = false;
      await loop;
    },
  };
}

describe.each([
  ['in process', false],
  ['over signed HTTP', true],
])('Lambda SQS handler (%s)', (_name, overHttp) => {
  let e2e: E2e;
  let esm: ReturnType<typeof eventSourceMapping>;
  let server: Awaited<ReturnType<typeof serve>> | undefined;
  beforeAll(async () => {
    // No in-process poller: the mapping below is the only consumer.
    e2e = await startE2e({ extraEnv: { EVE_WORLD_AWS_METRICS: '1' }, consumer: 'none' });
    if (overHttp) server = await serve(e2e.flow);
    const handler = createSqsHandler({
      context: createContext(e2e.fixture.config, e2e.fixture.clients),
      ...(server ? { flowUrl: server.url } : { flow: e2e.flow }),
      concurrency: 8,
    });
    enableMetrics({ dimensions: { Queue: queueNameOf(e2e.fixture.config.queue) }, write: (l) => emf.push(l) });
    esm = eventSourceMapping(e2e, handler);
  });
  afterAll(async () => {
    await esm?.stop();
    await server?.close();
    await e2e?.close();
  });

  it('core runs inside the delivery span, and each invocation writes EMF that counts its deliveries', async () => {
    otel.reset();
    emf.length = 0;
    await runWorkflows(e2e);
    await settled();
    await esm.stop();
    flushMetrics();
    const spans = otel.spans();
    const executes = underDelivery(spans, 'workflow.execute');
    const steps = underDelivery(spans, 'step.execute');
    expect(executes.total).toBeGreaterThanOrEqual(3);
    expect(executes.share).toBeGreaterThanOrEqual(0.9);
    expect(steps.share).toBeGreaterThanOrEqual(0.9);
    if (overHttp) {
      // The flow route's spans are children of the remote (signed) delivery span, not of the fetch.
      expect(spans.some((s) => s.name === 'workflow.route.flow')).toBe(true);
    }
    const counted = emfOutcomes();
    expect(counted).toEqual(spanOutcomes(spans));
    // Independently: every record the mapping handed to the handler is counted once.
    expect(Object.values(counted).reduce((a, b) => a + b, 0)).toBe(esm.counts.records);
  });
});
