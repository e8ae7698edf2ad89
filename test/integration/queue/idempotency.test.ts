/**
 * Idempotency claims are crash- and retry-safe (#12, finding 1): a key is reported as a duplicate
 * only after a message for it was accepted, a retried claim is recognised as the sender's own, and
 * a claim whose owner died is taken over after its lease. Faults are injected on the wire by the
 * fault proxy in front of DynamoDB Local; everything else is real.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MSG_ATTR } from '../../../src/queue/encoding.js';
import { claimIdempotencyKey, IDEMPOTENCY_LEASE_MS, markIdempotencyKeySent } from '../../../src/queue/idempotency.js';
import { keys } from '../../../src/schema/keys.js';
import { stackEnv } from '../../helpers/aws.js';
import { type FaultProxy, startFaultProxy } from '../../helpers/faults-proxy.js';
import { makeWorld, receiveAll, type World } from '../../helpers/queue.js';

const Q = '__wkf_workflow_idem' as ValidQueueName;
let proxy: FaultProxy;
let w: World;

beforeAll(async () => {
  proxy = await startFaultProxy({ target: stackEnv().AWS_ENDPOINT_URL_DYNAMODB, service: 'dynamodb', seed: 7 });
  // The consumer is off: the test reads the queue itself to count messages.
  w = await makeWorld({ env: { AWS_ENDPOINT_URL_DYNAMODB: proxy.url }, start: false });
});
afterAll(async () => {
  await w?.close();
  await proxy?.close();
});

async function claimItem(key: string) {
  const out = await w.fixture.clients.ddb.send(
    new GetItemCommand({
      TableName: w.fixture.config.tableName,
      Key: { PK: { S: keys.qkey(key).PK }, SK: { S: keys.qkey(key).SK } },
      ConsistentRead: true,
    }),
  );
  return out.Item ? unmarshall(out.Item) : undefined;
}

async function messagesFor(runId: string) {
  const msgs = await receiveAll(w, await w.queue.transport.queueUrl());
  return msgs
    .filter((m) => (m.Body ?? '').includes(runId) || JSON.stringify(m.MessageAttributes).includes(runId))
    .map((m) => m.MessageAttributes?.[MSG_ATTR.id]?.StringValue);
}

describe.sequential('idempotency claims', () => {
  test('lost claim response: the PutItem applied, the SDK retried it, and the message is still sent exactly once', async () => {
    proxy.setRules([{ kind: 'lose-response', ops: ['PutItem'], count: 1 }]);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_lostclaim' }, { idempotencyKey: 'k-lost-claim' });
    expect(proxy.injected('lose-response')).toBe(1);
    expect(messageId).toMatch(/^msg_/);
    expect(await claimItem('k-lost-claim')).toMatchObject({ state: 'sent', messageId });
    // Re-published under the same key: a duplicate, same id, nothing sent.
    proxy.setRules([]);
    expect((await w.queue.queue(Q, { runId: 'wrun_lostclaim' }, { idempotencyKey: 'k-lost-claim' })).messageId).toBe(
      messageId,
    );
    expect(await messagesFor('wrun_lostclaim')).toEqual([messageId]);
  });

  test('lost responses on every claim write (claim, mark-sent) still send exactly once', async () => {
    proxy.setRules([{ kind: 'lose-response', ops: ['PutItem', 'UpdateItem'], count: 4 }]);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_lostall' }, { idempotencyKey: 'k-lost-all' });
    expect(proxy.injected('lose-response')).toBeGreaterThanOrEqual(2);
    proxy.setRules([]);
    expect(await claimItem('k-lost-all')).toMatchObject({ state: 'sent', messageId });
    expect(await messagesFor('wrun_lostall')).toEqual([messageId]);
  });

  test('claim-then-crash: a pending claim by a dead owner is taken over after its lease, and the taker sends', async () => {
    // A process claimed (lease 1 s), then died before sending.
    const dead = await claimIdempotencyKey(w.ctx, 'k-crash', 'msg_01DEADDEADDEADDEADDEADDEAD', Q, {
      leaseMs: 1000,
      owner: 'dead-owner',
    });
    expect(dead.claimed).toBe(true);
    expect(await claimItem('k-crash')).toMatchObject({ state: 'pending', owner: 'dead-owner' });
    // Core re-publishes under the same key: it waits out the lease, takes over and sends.
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_crash' }, { idempotencyKey: 'k-crash' });
    expect(messageId).toBe('msg_01DEADDEADDEADDEADDEADDEAD');
    expect(await claimItem('k-crash')).toMatchObject({ state: 'sent', previousOwner: 'dead-owner' });
    expect(await messagesFor('wrun_crash')).toEqual([messageId]);
  });

  test('claim-then-crash with the default lease: the claim is a live owner first, then taken over', async () => {
    const t0 = Date.now();
    const dead = await claimIdempotencyKey(w.ctx, 'k-crash-default', 'msg_01DEFAULTDEFAULTDEFAULTDE', Q, {
      owner: 'dead-owner-2',
      now: () => t0,
    });
    expect(dead.claimed).toBe(true);
    expect((await claimItem('k-crash-default'))?.leaseUntil).toBe(t0 + IDEMPOTENCY_LEASE_MS);
    // A clock inside the lease waits (the owner may be sending); one past it takes over.
    let waited = 0;
    let clock = t0 + 1;
    const taken = await claimIdempotencyKey(w.ctx, 'k-crash-default', 'msg_other', Q, {
      now: () => clock,
      sleep: async (ms) => {
        waited++;
        clock += ms;
      },
    });
    expect(waited).toBeGreaterThan(0);
    expect(clock).toBeGreaterThanOrEqual(t0 + IDEMPOTENCY_LEASE_MS);
    expect(taken).toMatchObject({ claimed: true, tookOver: true, messageId: 'msg_01DEFAULTDEFAULTDEFAULTDE' });
  });

  test('a live owner is never reported as a duplicate before its message is accepted', async () => {
    const owner = await claimIdempotencyKey(w.ctx, 'k-live', 'msg_01LIVELIVELIVELIVELIVELIV', Q, {
      owner: 'live-owner',
    });
    expect(owner.claimed).toBe(true);
    let settled = false;
    const second = w.queue.queue(Q, { runId: 'wrun_live' }, { idempotencyKey: 'k-live' }).finally(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(settled).toBe(false); // still waiting for the live owner
    expect(await markIdempotencyKeySent(w.ctx, 'k-live', 'live-owner')).toBe(true);
    expect((await second).messageId).toBe('msg_01LIVELIVELIVELIVELIVELIV');
    expect(await messagesFor('wrun_live')).toEqual([]); // the duplicate sent nothing itself
  });

  test('writes are safe applied twice: a re-applied own claim and mark-sent keep one owner', async () => {
    const a = await claimIdempotencyKey(w.ctx, 'k-twice', 'msg_a', Q, { owner: 'o1' });
    const b = await claimIdempotencyKey(w.ctx, 'k-twice', 'msg_a', Q, { owner: 'o1' });
    expect(a).toMatchObject({ claimed: true });
    expect(b).toMatchObject({ claimed: true, messageId: 'msg_a' });
    expect(await markIdempotencyKeySent(w.ctx, 'k-twice', 'o1')).toBe(true);
    expect(await markIdempotencyKeySent(w.ctx, 'k-twice', 'o1')).toBe(true);
    // Another owner's mark-sent or claim does not change it.
    expect(await markIdempotencyKeySent(w.ctx, 'k-twice', 'o2')).toBe(false);
    expect(await claimIdempotencyKey(w.ctx, 'k-twice', 'msg_b', Q, { owner: 'o2' })).toEqual({
      claimed: false,
      messageId: 'msg_a',
    });
    // The owner's claim is no longer "its own pending claim" once sent: a duplicate.
    expect(await claimIdempotencyKey(w.ctx, 'k-twice', 'msg_a', Q, { owner: 'o1' })).toEqual({
      claimed: false,
      messageId: 'msg_a',
    });
  });

  test('an item with no state (not written by this World) fails the claim with a clear error, not a duplicate', async () => {
    const { PutItemCommand } = await import('@aws-sdk/client-dynamodb');
    await w.fixture.clients.ddb.send(
      new PutItemCommand({
        TableName: w.fixture.config.tableName,
        Item: {
          ...{ PK: { S: keys.qkey('k-foreign').PK }, SK: { S: keys.qkey('k-foreign').SK } },
          messageId: { S: 'msg_foreign' },
          ttl: { N: String(Math.floor(Date.now() / 1000) + 600) },
        },
      }),
    );
    await expect(claimIdempotencyKey(w.ctx, 'k-foreign', 'msg_new', Q)).rejects.toThrow(
      /idempotency key k-foreign: .* has no state \(pending or sent\)/,
    );
  });
});
