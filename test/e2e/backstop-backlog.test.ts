/**
 * The backstop never amplifies a backlog (src/backstop/backlog.ts; docs/operations.md, "Liveness
 * backstop", Backlog), with the real core at the default B = 60 s and T = 30 s. The consumers are
 * stopped while messages wait in the queue far longer than B + T (30 minutes of backstop ticks,
 * driven with an injected clock), then started:
 *
 * - runs whose first message waits (a backlog of run starts), and runs whose step's retry message
 *   waits (their first turn ran; the step is pending, its message queued);
 * - each run is woken at most once however long the backlog lasts (repeat wakes are held while the
 *   queue shows messages), where the ungated backstop woke each one again at every backoff;
 * - once the consumers run, every run completes, no step body runs twice, and the sends beyond the
 *   workload's own are within the stated bound: one wake per run and one re-queue per stranded step.
 */
import { ChangeMessageVisibilityBatchCommand, DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { start } from 'workflow/api';
import { runBackstopTick } from '../../src/backstop/index.js';
import { createSqsHandler, type SQSRecord } from '../../src/consumer/delivery/sqs-event-handler.js';
import { createContext, type WorldContext } from '../../src/context/world-context.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createTransport } from '../../src/queue/transport.js';
import { type E2e, startE2e } from '../helpers/e2e.js';
import { toRecord } from '../lambda/esm-simulator.js';

const B = 60_000;
const T = 30_000;
/** How long the backlog lasts, in backstop time. */
const BACKLOG_MS = 30 * 60_000;
const STARTS = 8;
const RETRIES = 4;

let e2e: E2e;
let ctx: WorldContext;
let consumer: AwsWorld | undefined;
/** Every SendMessage body, in order. */
const sends: string[] = [];
const quiet = { info: () => {}, warn: () => {}, error: () => {} };
const lines: string[] = [];

beforeAll(async () => {
  // No poller, no in-process ticker: the consumers are stopped; only this test's ticks run.
  e2e = await startE2e({ consumer: 'none', earlyDelivery: false });
  ctx = createContext(e2e.fixture.config, e2e.fixture.clients);
  e2e.fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'SendMessageCommand')
        sends.push((args.input as { MessageBody?: string }).MessageBody ?? '');
      return next(args);
    },
    { step: 'initialize', name: 'backlogCountSends' },
  );
});
afterAll(async () => {
  await consumer?.close();
  await e2e?.close();
});

const runOf = (body: string) => /"runId":"([^"]+)"/.exec(body)?.[1];
const stepOf = (body: string) => /"stepId":"([^"]+)"/.exec(body)?.[1];

/** Delivers the queued first message of each of `runIds`, and nothing else, as a consumer would. */
async function firstTurns(runIds: Set<string>): Promise<void> {
  const url = await createTransport(ctx).queueUrl();
  const handler = createSqsHandler({ flow: e2e.flow, context: ctx, logger: quiet });
  const { sqs } = e2e.fixture.clients;
  const left = new Set(runIds);
  const end = Date.now() + 60_000;
  while (left.size > 0 && Date.now() < end) {
    const msgs =
      (
        await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            VisibilityTimeout: 60,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
          }),
        )
      ).Messages ?? [];
    const others = [];
    for (const m of msgs) {
      const runId = runOf(m.Body ?? '');
      if (!runId || !left.has(runId) || stepOf(m.Body ?? '')) {
        others.push(m);
        continue;
      }
      const res = await handler({
        Records: [toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:q', 'us-east-1') as SQSRecord],
      });
      if (res.batchItemFailures.length === 0) {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
        left.delete(runId);
      }
    }
    if (others.length > 0)
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: url,
          Entries: others.map((m, i) => ({
            Id: String(i),
            ReceiptHandle: m.ReceiptHandle as string,
            VisibilityTimeout: 0,
          })),
        }),
      );
  }
  expect([...left]).toEqual([]);
}

async function untilTerminal(runIds: string[], timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const runs = await Promise.all(runIds.map((id) => e2e.world.runs.get(id)));
    if (runs.every((r) => ['completed', 'failed', 'cancelled'].includes(r.status))) return;
    if (Date.now() > end) throw new Error(`runs not terminal after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

test('a backlog older than B + T: one wake per run at most, every run completes, no step body twice, extra sends within the bound', async () => {
  // The defaults: no tuning.
  expect([e2e.fixture.config.backstopSeconds * 1000, e2e.fixture.config.backstopTickSeconds * 1000]).toEqual([B, T]);
  // Runs whose step's retry message waits: the first turn ran (the step failed once and asked
  // for a retry), then the consumers stopped.
  const retrying = await Promise.all(
    Array.from({ length: RETRIES }, () => start(e2e.workflows.retriableAndFatal as never, [])),
  );
  await firstTurns(new Set(retrying.map((r) => r.runId)));
  // Runs whose first message waits.
  const starting = await Promise.all(
    Array.from({ length: STARTS }, (_, i) => start(e2e.workflows.countedSteps as never, [`backlog-${i}`, 1])),
  );
  const all = [...retrying, ...starting].map((r) => r.runId);
  const baseline = sends.length;
  // The retry messages the first turns sent: each waits in the queue.
  const retrySteps = new Set(
    sends.filter((b) => retrying.some((r) => r.runId === runOf(b))).flatMap((b) => stepOf(b) ?? []),
  );
  expect(retrySteps.size).toBe(RETRIES);

  // 30 minutes of ticks every T, from the latest commit on: the backlog is older than B + T from
  // the second minute on.
  const t0 = Date.now();
  const logger = { ...quiet, info: (m: string) => void lines.push(m) };
  let woken = 0;
  let held = 0;
  for (let now = t0; now <= t0 + BACKLOG_MS; now += T) {
    const report = await runBackstopTick(ctx, { now: () => now, logger });
    woken += report.woken;
    held += report.held;
    expect(report.failed).toBe(0);
  }
  const wakeLines = lines.filter((l) => l.includes('backstop: waking run'));
  const wokenRuns = wakeLines.map((l) => /waking run (\S+)/.exec(l)?.[1]);
  // Every run owed work behind the backlog and was woken, once: the repeats were held.
  expect(new Set(wokenRuns)).toEqual(new Set(all));
  expect(wokenRuns).toHaveLength(all.length);
  expect(woken).toBe(all.length);
  // Without the gate each would have been woken again at B, 2B, 4B, ... (15 min at most).
  expect(held).toBeGreaterThanOrEqual(all.length * 2);
  expect(lines.some((l) => l.includes('not woken again until the queue shows none'))).toBe(true);
  const wakeSends = sends.slice(baseline).filter((b) => !stepOf(b));
  expect(wakeSends).toHaveLength(all.length);

  // The consumers start: a poller on the same queue, delivering to the same flow route.
  consumer = createWorld({
    config: e2e.fixture.config,
    clients: e2e.fixture.clients,
    consumer: { earlyDelivery: false },
  });
  consumer.registerHandler('__wkf_workflow_', e2e.flow);
  await consumer.start();
  await untilTerminal(all, 240_000);
  for (const r of retrying) expect(await r.returnValue).toEqual({ attempts: 2, fatal: 'fatal on purpose' });
  for (const r of starting) expect(await r.returnValue).toBe(1 + (0 + 1 + 2 + 3));
  // Let what is still queued (the wakes' replays, duplicate step messages) drain.
  await new Promise((r) => setTimeout(r, 5000));

  // No step body ran twice: the counted ones once each, and every step started as often as its attempts.
  const tally = e2e.stepTally();
  for (let i = 0; i < STARTS; i++) {
    for (const key of [`backlog-${i}:seq:0`, ...[0, 1, 2, 3].map((k) => `backlog-${i}:fan:${k}`)])
      expect(tally.get(key), key).toBe(1);
  }
  for (const runId of all) {
    const events = (await e2e.world.events.list({ runId, pagination: { limit: 1000 } })).data;
    const steps = (await e2e.world.steps.list({ runId, pagination: { limit: 100 } })).data;
    for (const s of steps) {
      const starts = events.filter((e) => e.eventType === 'step_started' && e.correlationId === s.stepId).length;
      expect(starts, `${runId} ${s.stepName}`).toBe(s.attempt);
    }
  }

  // The sends beyond the workload's own: the wakes, and at most one re-queue of each step stranded
  // behind the backlog (a retrying run's step; a starting run had none yet).
  const stepSends = new Map<string, number>();
  for (const b of sends.slice(baseline)) {
    const step = stepOf(b);
    if (step && retrySteps.has(step)) stepSends.set(step, (stepSends.get(step) ?? 0) + 1);
  }
  // Each retrying run's step: its retry message was queued before the backlog; re-sent at most once.
  expect([...stepSends.values()].every((n) => n <= 1)).toBe(true);
  expect(wakeSends.length + [...stepSends.values()].reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(
    all.length + RETRIES,
  );
}, 600_000);
