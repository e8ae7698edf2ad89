/**
 * The step lease with the real core (src/storage/write/step-lease.ts): while a delivery runs a long step,
 * a second copy of that delivery (same message id, as SQS hands out at-least-once, or a second
 * Lambda container) is handed to the flow route. Core takes it for the owner's crash-redelivery and
 * starts the running step again; the lease refuses that start (`TooEarlyError`), so the copy never
 * runs the body: core acks it after queueing a delayed step message for the step (runtime.js, the
 * inline `retry` path), and that message is deferred while the lease lives, then finds the step done. The owner's route extends the lease while the body runs (the
 * consumer visibility is 5 s here, so the lease ttl is 2.5 s and the body outlives it twice over),
 * and the run completes with the body run once.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { start } from 'workflow/api';
import {
  LOG_TAIL_HEADER,
  MESSAGE_ID_HEADER,
  processSigningKey,
  signatureHeaders,
} from '../../src/consumer/shared/signing.js';
import { keys } from '../../src/schema/keys.js';
import { type E2e, startE2e } from '../helpers/e2e.js';
import { scaled } from '../helpers/pace.js';

const taps: { runId?: string; stepId?: string; req: Request }[] = [];
let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e({
    tuning: { consumerVisibilitySeconds: 5 },
    tap: (req) => {
      const entry: { runId?: string; stepId?: string; req: Request } = { req };
      taps.push(entry);
      req
        .clone()
        .json()
        .then(
          (b) => {
            entry.runId = (b as { runId?: string })?.runId;
            entry.stepId = (b as { stepId?: string })?.stepId;
          },
          () => undefined,
        );
    },
  });
});
afterAll(async () => {
  await e2e?.close();
});

/** The same delivery again, freshly signed (the route refuses a replayed signature). */
async function copyOf(req: Request): Promise<Request> {
  const body = await req.clone().text();
  const h = new Headers(req.headers);
  const tail = h.get(LOG_TAIL_HEADER);
  const queuedId = h.get(MESSAGE_ID_HEADER);
  const traceparent = h.get('traceparent');
  const parts = {
    queueName: h.get('x-vqs-queue-name') ?? '',
    messageId: h.get('x-vqs-message-id') ?? '',
    attempt: h.get('x-vqs-message-attempt') ?? '1',
    body,
    destination: req.url,
    ...(tail ? { logTail: tail } : {}),
    ...(queuedId ? { queuedId } : {}),
    ...(traceparent ? { traceparent } : {}),
  };
  for (const [k, v] of Object.entries(signatureHeaders(processSigningKey(), parts))) h.set(k, v);
  return new Request(req.url, { method: 'POST', headers: h, body });
}

async function lease(runId: string, stepId: string) {
  const out = await e2e.fixture.clients.ddb.send(
    new GetItemCommand({
      TableName: e2e.fixture.config.tableName,
      Key: { PK: { S: keys.step(runId, stepId).PK }, SK: { S: keys.step(runId, stepId).SK } },
      ConsistentRead: true,
    }),
  );
  return { token: out.Item?.leaseToken?.S, until: Number(out.Item?.leaseUntil?.N ?? 0) };
}

test('a copy of a delivery whose long step is running is deferred, not run; the lease is extended; the run completes with one body', {
  tags: ['timing'],
  timeout: scaled(90_000),
}, async () => {
  const key = `lease-${Date.now()}`;
  const g = globalThis as Record<string, unknown>;
  g.__e2eGates ??= new Map<string, Promise<void>>();
  let open!: () => void;
  (g.__e2eGates as Map<string, Promise<void>>).set(
    key,
    new Promise<void>((r) => {
      open = r;
    }),
  );
  const run = await start(e2e.workflows.gated as never, [key]);
  await vi.waitFor(() => expect(e2e.stepTally().get(key)).toBe(1), { timeout: scaled(20_000), interval: 50 });
  const first = taps.find((t) => t.runId === run.runId);
  expect(first).toBeDefined();
  const steps = await e2e.world.steps.list({ runId: run.runId, pagination: {} });
  expect(steps.data).toHaveLength(1);
  const stepId = steps.data[0].stepId;
  const held = await lease(run.runId, stepId);
  expect(held.token).toBeTruthy();

  // A copy at once, and one after the lease's first expiry would have passed without a heartbeat.
  const responses: string[] = [];
  const statuses: number[] = [];
  const deliverCopy = async () => {
    const res = await e2e.flow(await copyOf(first!.req));
    statuses.push(res.status);
    responses.push(await res.text());
  };
  await deliverCopy();
  await new Promise((r) => setTimeout(r, 6000));
  await deliverCopy();
  console.log(`[step lease] copies answered: ${statuses.map((s, i) => `${s} ${responses[i]}`).join(' | ')}`);
  // Accepted by the route (a copy it refused would prove nothing about the lease).
  expect(statuses).toEqual([200, 200]);
  expect(e2e.stepTally().get(key)).toBe(1);
  const extended = await lease(run.runId, stepId);
  expect(extended.token).toBe(held.token);
  expect(extended.until).toBeGreaterThan(held.until + 3000);

  open();
  expect(await run.returnValue).toBe(key);
  expect(e2e.stepTally().get(key)).toBe(1);
  const evs = (await e2e.world.events.list({ runId: run.runId, pagination: {} })).data;
  expect(evs.filter((e) => e.eventType === 'step_started')).toHaveLength(1);
  expect(evs.filter((e) => e.eventType === 'step_completed')).toHaveLength(1);
  expect(await lease(run.runId, stepId)).toEqual({ token: undefined, until: 0 });
  // Core acked each copy after handing the step to a delayed step message (its 'retry' path):
  // that message came through the queue and found the step running (deferred) or done (skipped).
  await vi.waitFor(() => expect(taps.some((t) => t.runId === run.runId && t.stepId === stepId)).toBe(true), {
    timeout: scaled(20_000),
    interval: 100,
  });
  expect(e2e.stepTally().get(key)).toBe(1);
});
