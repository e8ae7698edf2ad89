/**
 * Early delivery (src/consumer/delivery/early/, on by default; `earlyDelivery: false` is off) through the
 * real queue and poller on the emulator stack, wired as createWorld wires them. SendMessage is
 * held in SDK middleware, so a delivery seen while it is held was started early, before SQS could
 * have returned the copy. The early delivery carries its own id, which no SQS message carries.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { makeWorld, receiveAll, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_early' as ValidQueueName;
const FAST = { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2' };

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

interface Held {
  w: World;
  outcomes: { outcome: DeliveryOutcome; at: number }[];
  /** SendMessage calls that reached SQS (after the gate). */
  sent: number;
  /** The message id (`eve.id`) of every SendMessage. */
  sentIds: string[];
  hold(): void;
  release(): void;
}

/** A World whose SendMessage calls wait while the gate is held. */
async function heldWorld(
  queueOptions: NonNullable<Parameters<typeof makeWorld>[0]>['queueOptions'] = {},
): Promise<Held> {
  const outcomes: Held['outcomes'] = [];
  const w = await makeWorld({
    env: FAST,
    queueOptions: {
      earlyDelivery: true,
      ...queueOptions,
      onDeliveryOutcome: (outcome) => outcomes.push({ outcome, at: Date.now() }),
    },
  });
  worlds.push(w);
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  const held: Held = {
    w,
    outcomes,
    sent: 0,
    sentIds: [],
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      open?.();
      gate = undefined;
    },
  };
  w.fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'SendMessageCommand') {
        const attrs = (args as { input: { MessageAttributes?: Record<string, { StringValue?: string }> } }).input
          .MessageAttributes;
        held.sentIds.push(attrs?.['eve.id']?.StringValue ?? '?');
        if (gate) await gate;
        const out = await next(args);
        held.sent++;
        return out;
      }
      return next(args);
    },
    { step: 'initialize', name: 'testHoldSendMessage' },
  );
  return held;
}

describe.concurrent('early delivery', () => {
  test('a flow message is delivered while its SendMessage is held; its copy is then deleted, not dispatched again', async () => {
    const h = await heldWorld();
    h.hold();
    const pending = h.w.queue.queue(Q, { runId: 'wrun_early' } as any);
    await waitFor(() => h.w.deliveries.length === 1, 10_000, 'the early delivery');
    expect(h.sent).toBe(0);
    expect(h.w.deliveries[0].meta.attempt).toBe(1);
    h.release();
    const { messageId } = await pending;
    // Its own id, which no SQS message carries, minted from M (src/queue/delivery-id.ts); the copy is M.
    const earlyId = h.w.deliveries[0].meta.messageId;
    expect(earlyId).toMatch(/^msg_[0-9A-Z]{26}\.early\.[0-9A-Z]{26}$/);
    expect(earlyId.startsWith(`${messageId}.early.`)).toBe(true);
    expect(h.sentIds).toEqual([messageId]);
    // The copy arrives, takes the early verdict (ack) and is deleted.
    await waitFor(
      () => h.outcomes.find((o) => o.outcome.messageId === messageId),
      10_000,
      'the copy settled by the early verdict',
    );
    expect(h.outcomes.map((o) => o.outcome)).toEqual([{ action: 'delete', reason: 'ack', messageId }]);
    // Nothing comes back after the visibility timeout, and the handler ran once.
    await sleep(2500);
    expect(h.w.deliveries).toHaveLength(1);
    await h.w.queue.close();
    expect(await receiveAll(h.w, await h.w.queue.transport.queueUrl())).toHaveLength(0);
  });

  test('a failed early delivery is the copy first attempt: the copy is redelivered at once as it, attempt 2', async () => {
    const h = await heldWorld();
    h.w.respond = (d) => {
      if (d.meta.attempt === 1) throw new Error('transient');
      return undefined;
    };
    h.hold();
    const pending = h.w.queue.queue(Q, { runId: 'wrun_fail' } as any);
    await waitFor(() => h.w.deliveries.length === 1, 10_000, 'the early delivery');
    expect(h.sent).toBe(0);
    h.release();
    const { messageId } = await pending;
    await waitFor(() => h.w.deliveries.length >= 2, 15_000, 'the retry');
    await sleep(300);
    // The copy M, received here after the early delivery E ended without an ack, is dispatched as
    // E (its redelivery: core recovers what E owns under E's id), as attempt 2.
    const earlyId = h.w.deliveries[0].meta.messageId;
    expect(earlyId).not.toBe(messageId);
    expect(h.w.deliveries.map((d) => [d.meta.messageId, d.meta.attempt])).toEqual([
      [earlyId, 1],
      [earlyId, 2],
    ]);
    expect(h.outcomes.map((o) => [o.outcome.action, o.outcome.reason, o.outcome.messageId])).toEqual([
      ['delete', 'ack', messageId],
    ]);
    expect(h.sentIds).toEqual([messageId]);
  });

  test('{timeoutSeconds} from an early delivery defers the copy by that long', async () => {
    const h = await heldWorld();
    h.w.respond = (d) => (d.meta.attempt === 1 ? { timeoutSeconds: 1 } : undefined);
    const { messageId } = await h.w.queue.queue(Q, { runId: 'wrun_later' } as any);
    await waitFor(() => h.w.deliveries.length >= 2, 15_000, 'the deferred delivery');
    // The early delivery E asked for later: the copy M is replaced by one delayed that long, and
    // that one is delivered as M (E has ended), attempt 2.
    const earlyId = h.w.deliveries[0].meta.messageId;
    expect(h.w.deliveries.map((d) => [d.meta.messageId, d.meta.attempt])).toEqual([
      [earlyId, 1],
      [messageId, 2],
    ]);
    expect(h.sentIds.every((id) => id === messageId)).toBe(true);
    expect(h.w.deliveries[1].at - h.w.deliveries[0].at).toBeGreaterThanOrEqual(900);
    expect(h.outcomes[0].outcome).toMatchObject({ action: 'delete', reason: 'rescheduled', messageId });
  });

  test('step messages, delayed messages and a key this process used wait for (or never get) a copy', async () => {
    const h = await heldWorld();
    const { messageId: first } = await h.w.queue.queue(Q, { runId: 'wrun_key' } as any, { idempotencyKey: 'k-early' });
    await waitFor(() => h.w.deliveries.length === 1, 10_000, 'the keyed delivery');
    h.hold();
    // A step execution: core writes its step_created at the same time.
    const step = h.w.queue.queue(Q, { runId: 'wrun_step', stepId: 'step_1', stepName: 's' } as any);
    const delayed = h.w.queue.queue(Q, { runId: 'wrun_delayed' } as any, { delaySeconds: 1 });
    // A duplicate key sends nothing, so the gate does not hold it.
    expect((await h.w.queue.queue(Q, { runId: 'wrun_key' } as any, { idempotencyKey: 'k-early' })).messageId).toBe(
      first,
    );
    await sleep(700);
    expect(h.w.deliveries.map((d) => d.body.runId)).toEqual(['wrun_key']);
    h.release();
    await Promise.all([step, delayed]);
    await waitFor(() => h.w.deliveries.length === 3, 15_000, 'the copies');
    expect(h.w.deliveries.map((d) => d.body.runId).sort()).toEqual(['wrun_delayed', 'wrun_key', 'wrun_step']);
  });

  test("a key's first send from this process is delivered beside its claim, a retry only once claimed", async () => {
    const h = await heldWorld();
    // Hold the claim's PutItem on QKEY#… in DynamoDB middleware.
    let claimGate: Promise<void> | undefined;
    let openClaim: (() => void) | undefined;
    h.w.fixture.clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input?: { Item?: { PK?: { S?: string } } } }).input;
        const name = (context as { commandName?: string }).commandName;
        if (name === 'PutItemCommand' && input?.Item?.PK?.S?.startsWith('QKEY#') && claimGate) await claimGate;
        return next(args);
      },
      { step: 'initialize', name: 'testHoldClaim' },
    );
    claimGate = new Promise((r) => (openClaim = r));
    const first = h.w.queue.queue(Q, { runId: 'wrun_first_key' } as any, { idempotencyKey: 'k-first' });
    await waitFor(() => h.w.deliveries.length === 1, 10_000, 'the delivery beside the held claim');
    openClaim?.();
    const { messageId } = await first;
    expect(h.w.deliveries[0].meta.messageId).not.toBe(messageId);
    expect(h.sentIds).toEqual([messageId]);
    await waitFor(() => h.outcomes.some((o) => o.outcome.messageId === messageId), 10_000, 'its copy settled');
    // The same key again from this process (as core republishes after an error): its claim
    // answers first (a duplicate here), so nothing is delivered or sent.
    claimGate = new Promise((r) => (openClaim = r));
    const again = h.w.queue.queue(Q, { runId: 'wrun_first_key' } as any, { idempotencyKey: 'k-first' });
    await sleep(500);
    expect(h.w.deliveries).toHaveLength(1);
    openClaim?.();
    expect((await again).messageId).toBe(messageId);
    await sleep(500);
    expect(h.w.deliveries).toHaveLength(1);
  });

  test('a key another World sent first costs one extra delivery here and sends nothing', async () => {
    const h = await heldWorld();
    const other = await makeWorld({ sameAs: h.w, register: false, start: false });
    worlds.push(other);
    const { messageId: theirs } = await other.queue.queue(Q, { runId: 'wrun_shared' } as any, {
      idempotencyKey: 'k-shared',
    });
    const sentBefore = h.sent;
    const { messageId } = await h.w.queue.queue(Q, { runId: 'wrun_shared' } as any, { idempotencyKey: 'k-shared' });
    expect(messageId).toBe(theirs);
    expect(h.sent).toBe(sentBefore);
    // This World delivers its offer early (a replay of the run), and then the other World's copy,
    // which it receives from the shared queue: two deliveries, one message sent.
    await waitFor(() => h.w.deliveries.length === 2, 15_000, 'the early delivery and the copy');
    expect(h.w.deliveries.map((d) => d.meta.messageId)).toContain(theirs);
    await sleep(2500);
    expect(h.w.deliveries).toHaveLength(2);
  });

  test("an early delivery runs in the consumer's async context, not the sender's", async () => {
    const h = await heldWorld();
    const sender = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    h.w.respond = () => void seen.push(sender.getStore());
    h.hold();
    const pending = sender.run('the sender', () => h.w.queue.queue(Q, { runId: 'wrun_ctx' } as any));
    await waitFor(() => seen.length === 1, 10_000, 'the early delivery');
    expect(h.sent).toBe(0);
    expect(seen).toEqual([undefined]);
    h.release();
    await pending;
  });

  test('on by default (earlyDelivery unset); earlyDelivery: false makes a message wait for its copy', async () => {
    const on = await heldWorld({ earlyDelivery: undefined });
    on.hold();
    const sent = on.w.queue.queue(Q, { runId: 'wrun_default' } as any);
    await waitFor(() => on.w.deliveries.length === 1, 10_000, 'the early delivery by default');
    expect(on.sent).toBe(0);
    on.release();
    await sent;
    const h = await heldWorld({ earlyDelivery: false });
    h.hold();
    const pending = h.w.queue.queue(Q, { runId: 'wrun_off' } as any);
    await sleep(700);
    expect(h.w.deliveries).toHaveLength(0);
    h.release();
    await pending;
    await waitFor(() => h.w.deliveries.length === 1, 10_000, 'the copy');
  });
});
