/**
 * Early delivery with two consumers on one queue (src/consumer/early-records.ts): the SQS copy of
 * a message one World delivered early is received by the other, which must not dispatch it while
 * that delivery may run, and then settles it by the owner's record or dispatches it.
 *
 * The owner's ReceiveMessage calls return nothing (SDK middleware), so its copy always reaches
 * the other consumer, as it does whenever another process polls first.
 */
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/pipeline.js';
import { makeWorld, receiveAll, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_early_two' as ValidQueueName;
/** Consumer visibility 2 s: the hold is 2 s, the record is first written at 1 s, its lease is 4 s. */
const FAST = { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2' };

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

interface Pair {
  owner: World;
  other: World;
  otherOutcomes: { outcome: DeliveryOutcome; at: number }[];
  /** Early-delivery record writes (PutItem on EARLY#…) the owner made. */
  recordWrites: string[];
  /** While true the owner's record writes fail, as a dead process's would never happen. */
  dead: { value: boolean };
}

async function pair(env: Record<string, string> = {}): Promise<Pair> {
  const owner = await makeWorld({ env: { ...FAST, ...env }, queueOptions: { earlyDelivery: true } });
  worlds.push(owner);
  const otherOutcomes: Pair['otherOutcomes'] = [];
  const other = await makeWorld({
    sameAs: owner,
    queueOptions: {
      earlyDelivery: true,
      onDeliveryOutcome: (outcome) => otherOutcomes.push({ outcome, at: Date.now() }),
    },
  });
  worlds.push(other);
  // The owner never receives: every copy goes to the other consumer.
  owner.fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'ReceiveMessageCommand') {
        await sleep(200);
        return { output: { Messages: [], $metadata: {} }, response: {} } as any;
      }
      return next(args);
    },
    { step: 'initialize', name: 'testBlindReceive' },
  );
  const recordWrites: string[] = [];
  const dead = { value: false };
  owner.fixture.clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input?: { Item?: { PK?: { S?: string }; state?: { S?: string } } } }).input;
      if (
        (context as { commandName?: string }).commandName === 'PutItemCommand' &&
        input?.Item?.PK?.S?.startsWith('EARLY#')
      ) {
        if (dead.value) throw new Error('test: the owner is dead');
        recordWrites.push(input.Item.state?.S ?? '?');
      }
      return next(args);
    },
    { step: 'initialize', name: 'testRecordWrites' },
  );
  return { owner, other, otherOutcomes, recordWrites, dead };
}

const reasons = (p: Pair, messageId: string | null) =>
  p.otherOutcomes
    .filter((o) => o.outcome.messageId === messageId)
    .map((o) => `${o.outcome.action}:${o.outcome.reason}`);

describe.concurrent('early delivery across two consumers', () => {
  test('the other consumer holds the copy while the early delivery may run, then deletes it by the done record', async () => {
    const p = await pair();
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_ack' } as any);
    expect(p.owner.deliveries.map((d) => d.meta.messageId)).toEqual([messageId]);
    // The copy reaches the other consumer, which does not dispatch it: held while the mark's hold
    // lasts (2 s), then settled by the record (on a loaded machine it may arrive after the hold).
    await waitFor(() => reasons(p, messageId).length >= 1, 10_000, 'the copy received by the other consumer');
    // The early delivery acked before the copy reached its owner: `done ack` is recorded, and the
    // other consumer deletes the copy without dispatching it.
    await waitFor(() => reasons(p, messageId).includes('delete:ack'), 15_000, 'the copy settled by the record');
    expect(p.recordWrites.at(-1)).toBe('done');
    expect(p.other.deliveries).toHaveLength(0);
    expect(p.owner.deliveries).toHaveLength(1);
    await sleep(2500);
    expect(p.other.deliveries).toHaveLength(0);
    expect(await receiveAll(p.other, await p.other.queue.transport.queueUrl())).toHaveLength(0);
  });

  test('a long early delivery is vouched for while it runs; the copy is never dispatched beside it', async () => {
    const p = await pair();
    let finish: (() => void) | undefined;
    let running = false;
    p.owner.respond = () =>
      new Promise<void>((r) => {
        running = true;
        finish = () => {
          running = false;
          r();
        };
      });
    let beside = 0;
    p.other.respond = () => {
      if (running) beside++;
      return undefined;
    };
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_long' } as any);
    // Well past the hold (2 s) and one lease (4 s): the record is renewed, the copy held.
    await sleep(7000);
    expect(p.other.deliveries).toHaveLength(0);
    expect(p.recordWrites.filter((s) => s === 'running').length).toBeGreaterThanOrEqual(2);
    // Each hold replaced the copy (never a receive that raises the attempt).
    expect(reasons(p, messageId).every((r) => r === 'delete:held')).toBe(true);
    finish?.();
    await waitFor(() => reasons(p, messageId).includes('delete:ack'), 15_000, 'the copy settled by the record');
    expect(p.recordWrites.at(-1)).toBe('done');
    expect(p.other.deliveries).toHaveLength(0);
    expect(beside).toBe(0);
  });

  test('holds never raise the attempt core sees: a long early delivery, then its copy is delivered at attempt 2', async () => {
    // The queue redrives after 2 receives: holds that counted would raise the attempt by one each
    // (and would have to be re-sent to stay out of the DLQ).
    const p = await pair({ EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' });
    let finish: (() => void) | undefined;
    p.owner.respond = () =>
      new Promise<unknown>((r) => {
        finish = () => r({ timeoutSeconds: 1 });
      });
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_attempts' } as any);
    // Held again and again while the early delivery runs (2 s holds, renewed 4 s leases).
    await waitFor(() => reasons(p, messageId).length >= 4, 30_000, 'four holds');
    expect(p.other.deliveries).toHaveLength(0);
    finish?.();
    await waitFor(() => reasons(p, messageId).includes('delete:ack'), 20_000, 'the copy delivered and acked');
    expect(p.owner.deliveries.map((d) => d.meta.attempt)).toEqual([1]);
    expect(p.other.deliveries).toHaveLength(1);
    expect(p.other.deliveries[0].meta).toMatchObject({ messageId, attempt: 2 });
    const all = reasons(p, messageId);
    // Every hold replaced the copy (and a `later` record not yet due replaced it once more, unmarked).
    expect(all.slice(0, -1).every((r) => r === 'delete:held' || r === 'delete:rescheduled')).toBe(true);
    expect(all.at(-1)).toBe('delete:ack');
    expect(await receiveAll(p.other, await p.other.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test('a DynamoDB outage longer than the hold budget: the record unreadable for 5 holds, the copy then delivered at attempt 2', async () => {
    const p = await pair({ EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' });
    let failures = 0;
    p.other.fixture.clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input?: { Key?: { PK?: { S?: string } } } }).input;
        if (
          (context as { commandName?: string }).commandName === 'GetItemCommand' &&
          input?.Key?.PK?.S?.startsWith('EARLY#') &&
          failures < 5
        ) {
          failures++;
          throw Object.assign(new Error('test: DynamoDB unavailable'), { name: 'InternalServerError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'testRecordReadOutage' },
    );
    // The early delivery asks to be delivered again: its copy must be dispatched, as the 2nd attempt.
    p.owner.respond = () => ({ timeoutSeconds: 1 });
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_ddb_down' } as any);
    await waitFor(() => p.other.deliveries.length === 1, 90_000, 'the copy delivered after the outage');
    expect(failures).toBe(5);
    expect(p.other.deliveries[0].meta).toMatchObject({ messageId, attempt: 2 });
    const held = p.otherOutcomes.filter((o) => o.outcome.messageId === messageId).map((o) => o.outcome);
    expect(held.filter((o) => o.hold === 'early-record-unreadable')).toHaveLength(5);
    expect(held.every((o) => o.action === 'delete')).toBe(true);
    expect(await receiveAll(p.other, await p.other.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test("an owner that dies mid-delivery: its copy is dispatched by the other consumer once the owner's lease ends", async () => {
    const p = await pair();
    p.owner.respond = () => new Promise<void>(() => {});
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_dead' } as any);
    // The first `running` record (at half the hold), then the owner stops writing, as a dead one.
    await waitFor(() => p.recordWrites.includes('running'), 10_000, 'the first record');
    const diedAt = Date.now();
    p.dead.value = true;
    await waitFor(() => p.other.deliveries.length === 1, 20_000, 'the copy dispatched by the other consumer');
    const d = p.other.deliveries[0];
    expect(d.meta.messageId).toBe(messageId);
    // Not before the lease (2 holds = 4 s from the record) ended.
    expect(d.at - diedAt).toBeGreaterThanOrEqual(2500);
    await waitFor(() => reasons(p, messageId).includes('delete:ack'), 10_000, 'the copy acked');
  });

  test('an owner that died before writing anything: the copy is dispatched once its mark hold ends', async () => {
    const p = await pair();
    p.dead.value = true;
    p.owner.respond = () => new Promise<void>(() => {});
    const sentAt = Date.now();
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_early_death' } as any);
    await waitFor(() => p.other.deliveries.length === 1, 20_000, 'the copy dispatched by the other consumer');
    expect(p.other.deliveries[0].meta.messageId).toBe(messageId);
    expect(p.other.deliveries[0].at - sentAt).toBeGreaterThanOrEqual(1500);
  });

  test('a record that cannot be read holds the copy (never dispatched, never toward the DLQ) until it can', async () => {
    const p = await pair();
    let failures = 0;
    p.other.fixture.clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input?: { Key?: { PK?: { S?: string } } } }).input;
        if (
          (context as { commandName?: string }).commandName === 'GetItemCommand' &&
          input?.Key?.PK?.S?.startsWith('EARLY#')
        ) {
          if (failures++ === 0)
            throw Object.assign(new Error('test: DynamoDB unavailable'), { name: 'InternalServerError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'testFailRecordRead' },
    );
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_unreadable' } as any);
    await waitFor(() => reasons(p, messageId).includes('delete:ack'), 20_000, 'the copy settled once the record reads');
    const held = p.otherOutcomes.filter((o) => o.outcome.messageId === messageId).map((o) => o.outcome);
    // Held (by the mark, unless it arrived after the hold, then for the failed read), then settled.
    expect(held.map((o) => `${o.action}:${o.reason}`).slice(-2)).toEqual(['delete:held', 'delete:ack']);
    expect(held.slice(0, -1).every((o) => o.action === 'delete' && o.reason === 'held')).toBe(true);
    expect(held.at(-2)?.hold).toBe('early-record-unreadable');
    expect((held.at(-2) as { detail?: string }).detail).toMatch(/could not read the early-delivery record/);
    expect(p.other.deliveries).toHaveLength(0);
  });

  test('{timeoutSeconds} from the early delivery: the other consumer delivers the copy when it asked, not before', async () => {
    const p = await pair();
    p.owner.respond = () => ({ timeoutSeconds: 4 });
    const sentAt = Date.now();
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_later' } as any);
    await waitFor(() => p.other.deliveries.length === 1, 20_000, 'the deferred copy');
    expect(p.recordWrites.at(-1)).toBe('done');
    expect(p.other.deliveries[0].meta.messageId).toBe(messageId);
    expect(p.other.deliveries[0].at - sentAt).toBeGreaterThanOrEqual(3500);
  });
});
