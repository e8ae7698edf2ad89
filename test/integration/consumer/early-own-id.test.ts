/**
 * Early delivery with two consumers on one queue (docs/design.md, "Early delivery"): the early
 * delivery runs under its own id E, and the SQS copy M, received by the other consumer, is an
 * ordinary message there: dispatched at once (attempt 2), never held, whatever the clocks say and
 * however long the early delivery runs. Nothing is written for it, and no SQS message carries E.
 *
 * The owner's ReceiveMessage calls return nothing (SDK middleware), so its copy always reaches
 * the other consumer, as it does whenever another process polls first.
 */
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { makeWorld, receiveAll, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_early_two' as ValidQueueName;
const FAST = { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2' };

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

interface Pair {
  owner: World;
  other: World;
  otherOutcomes: DeliveryOutcome[];
  /** `eve.id` of every SendMessage either World made. */
  sentIds: string[];
  /** DynamoDB writes to `EARLY#` keys by either World (the previous design's records). */
  earlyWrites: number;
}

async function pair(otherSkewMs = 0, env: Record<string, string> = {}): Promise<Pair> {
  const owner = await makeWorld({ env: { ...FAST, ...env }, queueOptions: { earlyDelivery: true } });
  worlds.push(owner);
  const otherOutcomes: DeliveryOutcome[] = [];
  const other = await makeWorld({
    sameAs: owner,
    queueOptions: {
      earlyDelivery: true,
      onDeliveryOutcome: (outcome) => otherOutcomes.push(outcome),
      ...(otherSkewMs ? { now: () => Date.now() + otherSkewMs } : {}),
    },
  });
  worlds.push(other);
  const p: Pair = { owner, other, otherOutcomes, sentIds: [], earlyWrites: 0 };
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
  for (const w of [owner, other]) {
    w.fixture.clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName === 'SendMessageCommand') {
          const attrs = (args as any).input.MessageAttributes as Record<string, { StringValue?: string }> | undefined;
          p.sentIds.push(attrs?.['eve.id']?.StringValue ?? '?');
        }
        return next(args);
      },
      { step: 'initialize', name: 'testSentIds' },
    );
    w.fixture.clients.ddb.middlewareStack.add(
      (next) => async (args) => {
        if (JSON.stringify((args as any).input ?? {}).includes('"EARLY#')) p.earlyWrites++;
        return next(args);
      },
      { step: 'initialize', name: 'testEarlyKeys' },
    );
  }
  return p;
}

/** Starts a long early delivery in the owner; returns its finish and whether it still runs. */
function longEarly(p: Pair): { finish: () => void; running: () => boolean } {
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
  return { finish: () => finish?.(), running: () => running };
}

describe.concurrent('early delivery under its own id, two consumers', () => {
  for (const [name, skew] of [
    ['in step', 0],
    ['31 s ahead', 31_000],
    ['31 s behind', -31_000],
    ['10 min ahead', 600_000],
  ] as const) {
    test(`the other consumer (${name}) dispatches the copy at once as M, attempt 2, beside the running early delivery`, async () => {
      const p = await pair(skew);
      const early = longEarly(p);
      const { messageId } = await p.owner.queue.queue(Q, { runId: `wrun_two_${skew}` } as any);
      await waitFor(() => p.other.deliveries.length === 1, 15_000, 'the copy dispatched by the other consumer');
      // Beside it: the early delivery still runs. No hold, no record, no clock.
      expect(early.running()).toBe(true);
      const earlyId = p.owner.deliveries[0].meta.messageId;
      expect(p.owner.deliveries.map((d) => d.meta.attempt)).toEqual([1]);
      expect(earlyId).not.toBe(messageId);
      expect(p.other.deliveries[0].meta).toMatchObject({ messageId, attempt: 2 });
      await waitFor(() => p.otherOutcomes.length === 1, 10_000, 'the copy acked');
      expect(p.otherOutcomes[0]).toMatchObject({ action: 'delete', reason: 'ack', messageId });
      early.finish();
      await sleep(2500);
      expect(p.other.deliveries).toHaveLength(1);
      expect(p.owner.deliveries).toHaveLength(1);
      expect(p.sentIds).toEqual([messageId]);
      expect(p.earlyWrites).toBe(0);
      expect(await receiveAll(p.other, await p.other.queue.transport.dlqUrl())).toHaveLength(0);
    });
  }

  test('a long early delivery never raises the attempt: its copy, received elsewhere at once, is attempt 2 with maxReceiveCount 2', async () => {
    const p = await pair(0, { EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' });
    const early = longEarly(p);
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_long' } as any);
    // Well past the visibility (2 s): nothing is held, re-sent or counted while it runs.
    await sleep(7000);
    expect(early.running()).toBe(true);
    expect(p.other.deliveries.map((d) => [d.meta.messageId, d.meta.attempt])).toEqual([[messageId, 2]]);
    expect(p.otherOutcomes.map((o) => o.reason)).toEqual(['ack']);
    early.finish();
    expect(p.sentIds).toEqual([messageId]);
    expect(await receiveAll(p.other, await p.other.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test('a copy of an early delivery that failed, received elsewhere, is delivered there as M (only its own process redelivers as E)', async () => {
    const p = await pair();
    let release: (() => void) | undefined;
    p.owner.respond = () =>
      new Promise((_, reject) => {
        release = () => reject(new Error('transient'));
      });
    const { messageId } = await p.owner.queue.queue(Q, { runId: 'wrun_two_fail' } as any);
    await waitFor(() => p.other.deliveries.length === 1, 15_000, 'the copy elsewhere');
    release?.();
    await sleep(1500);
    expect(p.other.deliveries.map((d) => [d.meta.messageId, d.meta.attempt])).toEqual([[messageId, 2]]);
    expect(p.owner.deliveries).toHaveLength(1);
    expect(p.sentIds).toEqual([messageId]);
  });
});
