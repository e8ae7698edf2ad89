/**
 * The durable in-progress delivery lease (src/consumer/delivery-lease.ts) against DynamoDB Local:
 * one holder at a time, own-token recognition, takeover after expiry, writes safe when applied
 * twice (lost responses injected by the fault proxy, so the SDK retries writes that happened),
 * and its cost in write units (DynamoDB Local's ConsumedCapacity).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { loadConfig } from '../../../src/config.js';
import {
  acquireDeliveryLease,
  extendDeliveryLease,
  releaseDeliveryLease,
} from '../../../src/consumer/delivery-lease.js';
import { keys } from '../../../src/ddb.js';
import { createFixture, type Fixture, stackEnv } from '../../helpers/aws.js';
import { type FaultProxy, startFaultProxy } from '../../helpers/faults-proxy.js';

let f: Fixture;
let proxy: FaultProxy;
let ctx: { config: Fixture['config']; clients: Fixture['clients'] };
/** Write units consumed, by operation (ReturnConsumedCapacity added by middleware). */
const wru: { op: string; units: number }[] = [];

beforeAll(async () => {
  f = await createFixture({}, 'lease');
  proxy = await startFaultProxy({ target: stackEnv().AWS_ENDPOINT_URL_DYNAMODB, service: 'dynamodb', seed: 3 });
  const config = loadConfig({ ...f.env, AWS_ENDPOINT_URL_DYNAMODB: proxy.url });
  const clients = createClients(config);
  clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const cc = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity;
      if (cc) wru.push({ op: (context as { commandName: string }).commandName, units: cc.CapacityUnits ?? 0 });
      return out;
    },
    { step: 'initialize', name: 'capacity' },
  );
  ctx = { config, clients };
});
afterAll(async () => {
  if (ctx) destroyClients(ctx.clients);
  await proxy?.close();
});

async function stored(messageId: string) {
  const out = await f.clients.ddb.send(
    new GetItemCommand({
      TableName: f.config.tableName,
      Key: { PK: { S: keys.deliveryLease(messageId).PK }, SK: { S: 'LEASE' } },
      ConsistentRead: true,
    }),
  );
  return out.Item;
}

describe.sequential('delivery lease', () => {
  test('one holder at a time; the holder recognises its own token; release frees it', async () => {
    const a = await acquireDeliveryLease(ctx, 'msg_one', { ttlMs: 30_000, token: 'tok-a' });
    expect(a.acquired).toBe(true);
    const b = await acquireDeliveryLease(ctx, 'msg_one', { ttlMs: 30_000, token: 'tok-b' });
    expect(b).toMatchObject({ acquired: false });
    expect(b.acquired === false && b.expiresAt).toBeGreaterThan(Date.now());
    expect((await acquireDeliveryLease(ctx, 'msg_one', { ttlMs: 30_000, token: 'tok-a' })).acquired).toBe(true);
    // Someone else's release does nothing.
    await releaseDeliveryLease(ctx, { messageId: 'msg_one', token: 'tok-b', expiresAt: 0 });
    expect(await stored('msg_one')).toBeDefined();
    if (!a.acquired) throw new Error('unreachable');
    await releaseDeliveryLease(ctx, a.lease);
    expect(await stored('msg_one')).toBeUndefined();
    expect((await acquireDeliveryLease(ctx, 'msg_one', { ttlMs: 30_000, token: 'tok-b' })).acquired).toBe(true);
  });

  test('an expired lease (dead holder) is taken over; the old holder can neither extend nor release it', async () => {
    const t0 = Date.now();
    const dead = await acquireDeliveryLease(ctx, 'msg_dead', { ttlMs: 1000, token: 'dead', now: t0 });
    if (!dead.acquired) throw new Error('first acquire failed');
    expect(
      (await acquireDeliveryLease(ctx, 'msg_dead', { ttlMs: 30_000, token: 'live', now: t0 + 500 })).acquired,
    ).toBe(false);
    const live = await acquireDeliveryLease(ctx, 'msg_dead', { ttlMs: 30_000, token: 'live', now: t0 + 2000 });
    expect(live.acquired).toBe(true);
    expect(await extendDeliveryLease(ctx, dead.lease, { ttlMs: 30_000 })).toBe(false);
    await releaseDeliveryLease(ctx, dead.lease);
    expect((await stored('msg_dead'))?.token?.S).toBe('live');
  });

  test('concurrent acquires: exactly one wins', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => acquireDeliveryLease(ctx, 'msg_race', { ttlMs: 30_000, token: `t${i}` })),
    );
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
  });

  test('lost responses: acquire, extend and release applied twice (SDK retries) behave as once', async () => {
    const before = proxy.injected('lose-response');
    try {
      proxy.setRules([{ kind: 'lose-response', ops: ['PutItem'], count: 1 }]);
      const a = await acquireDeliveryLease(ctx, 'msg_lost', { ttlMs: 30_000, token: 'mine' });
      expect(a.acquired).toBe(true);
      if (!a.acquired) return;
      proxy.setRules([{ kind: 'lose-response', ops: ['UpdateItem'], count: 1 }]);
      expect(await extendDeliveryLease(ctx, a.lease, { ttlMs: 60_000 })).toBe(true);
      proxy.setRules([{ kind: 'lose-response', ops: ['DeleteItem'], count: 1 }]);
      await releaseDeliveryLease(ctx, a.lease);
      expect(proxy.injected('lose-response') - before).toBe(3);
      expect(await stored('msg_lost')).toBeUndefined();
    } finally {
      proxy.setRules([]);
    }
  });

  test('cost: acquire 1 WRU, extend 1 WRU, release 1 WRU (2 WRU for a delivery inside one heartbeat)', async () => {
    wru.length = 0;
    const a = await acquireDeliveryLease(ctx, 'msg_cost', { ttlMs: 30_000 });
    if (!a.acquired) throw new Error('acquire failed');
    await extendDeliveryLease(ctx, a.lease, { ttlMs: 30_000 });
    await releaseDeliveryLease(ctx, a.lease);
    const by = Object.fromEntries(wru.map((w) => [w.op, w.units]));
    console.log(`[delivery lease] write units: ${JSON.stringify(by)}`);
    expect(by).toEqual({ PutItemCommand: 1, UpdateItemCommand: 1, DeleteItemCommand: 1 });
  });

  test('bad input is refused with a clear error', async () => {
    await expect(acquireDeliveryLease(ctx, 'msg_x', { ttlMs: 0 })).rejects.toThrow(
      /ttlMs must be a positive number of milliseconds, got 0/,
    );
    await expect(acquireDeliveryLease(ctx, '', { ttlMs: 1000 })).rejects.toThrow(
      /messageId must be a non-empty string/,
    );
  });
});

describe('delivery lease in the consumer', () => {
  test('two copies of one message at two Worlds: the second is deferred while the first runs, then runs after it', async () => {
    const { makeWorld } = await import('../../helpers/queue.js');
    const sqsProxy = await startFaultProxy({ target: stackEnv().AWS_ENDPOINT_URL_SQS, service: 'sqs', seed: 5 });
    const deferredAtB: string[] = [];
    const env = { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '20', AWS_ENDPOINT_URL_SQS: sqsProxy.url };
    // A handles one delivery at a time, so while it runs the first copy the second can only go to B
    // (a different World: its in-process guard knows nothing of A's delivery).
    const a = await makeWorld({ env: { ...env, EVE_WORLD_AWS_CONCURRENCY: '1' } });
    const b = await makeWorld({
      sameAs: a,
      start: false,
      env: { EVE_WORLD_AWS_CONCURRENCY: '8' },
      queueOptions: {
        onDeliveryOutcome: (o) => {
          if (o.reason === 'deferred' && o.messageId) deferredAtB.push(o.messageId);
        },
      },
    });
    try {
      let open!: () => void;
      const gate = new Promise<void>((r) => {
        open = r;
      });
      let running = 0;
      let maxRunning = 0;
      for (const w of [a, b]) {
        w.respond = async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          await gate;
          running--;
        };
      }
      sqsProxy.setRules([{ kind: 'duplicate', ops: ['SendMessage'], count: 1 }]);
      const { messageId } = await a.queue.queue('__wkf_workflow_lease' as never, { runId: 'wrun_lease' });
      expect(sqsProxy.injected('duplicate')).toBe(1);
      const { waitFor } = await import('../../helpers/queue.js');
      await waitFor(() => a.deliveries.length === 1, 20_000, 'A to run the first copy');
      await b.queue.start();
      await waitFor(() => deferredAtB.includes(messageId as string), 20_000, 'B to defer the second copy');
      expect(a.deliveries.length + b.deliveries.length).toBe(1);
      open();
      // The first copy is acked, so its lease is left to expire (10 s at visibility 20 s) rather
      // than released: the deferred copy runs once it has.
      await waitFor(
        () => a.deliveries.length + b.deliveries.length === 2,
        45_000,
        'the deferred copy to run after the first',
      );
      expect(maxRunning).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await sqsProxy.close();
    }
  });

  test('an acked delivery lets its lease expire (no release write); a copy that comes back releases it', async () => {
    const { makeWorld, waitFor } = await import('../../helpers/queue.js');
    const outcomes: { messageId?: string; reason: string }[] = [];
    const w = await makeWorld({
      start: false,
      queueOptions: { onDeliveryOutcome: (o) => outcomes.push({ messageId: o.messageId, reason: o.reason }) },
    });
    // Every lease write this World sends, by command (the lease items' keys start with LEASE#).
    const leaseWrites: string[] = [];
    w.fixture.clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: { PK?: { S?: string } }; Item?: { PK?: { S?: string } } };
        const pk = input.Key?.PK?.S ?? input.Item?.PK?.S ?? '';
        if (pk.startsWith('LEASE#')) leaseWrites.push((context as { commandName: string }).commandName);
        return next(args);
      },
      { step: 'initialize', name: 'lease-writes' },
    );
    try {
      await w.queue.start();
      // 1. Acked at once: acquire only; the lease stays, held until it expires.
      const acked = (await w.queue.queue('__wkf_workflow_acked' as never, { runId: 'wrun_acked' })).messageId as string;
      await waitFor(() => outcomes.find((o) => o.messageId === acked), 20_000, 'the ack');
      expect(leaseWrites).toEqual(['PutItemCommand']);
      const left = (
        await w.fixture.clients.ddb.send(
          new GetItemCommand({
            TableName: w.fixture.config.tableName,
            Key: { PK: { S: keys.deliveryLease(acked).PK }, SK: { S: 'LEASE' } },
            ConsistentRead: true,
          }),
        )
      ).Item;
      expect(left?.token?.S).toBeTruthy();
      expect(Number(left?.expiresAt?.N)).toBeGreaterThan(Date.now());
      // A late duplicate of the finished message is deferred while the lease lives, not run.
      const dup = await acquireDeliveryLease(w.ctx, acked, { ttlMs: 10_000 });
      expect(dup.acquired).toBe(false);

      // 2. `{timeoutSeconds}`: the copy comes back, so its lease is released for it at once.
      leaseWrites.length = 0;
      w.respond = (d) => (d.meta.attempt === 1 ? { timeoutSeconds: 1 } : undefined);
      const later = (await w.queue.queue('__wkf_workflow_later' as never, { runId: 'wrun_later' })).messageId as string;
      await waitFor(
        () => w.deliveries.filter((d) => d.meta.messageId === later).length === 2,
        20_000,
        'the redelivery after timeoutSeconds',
      );
      await waitFor(() => outcomes.filter((o) => o.messageId === later).length === 2, 20_000, 'the second settle');
      // acquire, release (deferred), acquire (the redelivery; acked, so not released)
      expect(leaseWrites).toEqual(['PutItemCommand', 'DeleteItemCommand', 'PutItemCommand']);
      expect(outcomes.filter((o) => o.messageId === later).map((o) => o.reason)).toEqual(['deferred', 'ack']);
    } finally {
      await w.close();
    }
  });

  test('a copy that finds the lease held is hidden until the lease expires, not run', async () => {
    const { makeWorld, waitFor } = await import('../../helpers/queue.js');
    const deferred: { messageId?: string; detail?: string }[] = [];
    const w = await makeWorld({
      start: false,
      queueOptions: {
        onDeliveryOutcome: (o) => {
          if (o.action === 'keep' && o.reason === 'deferred')
            deferred.push({ messageId: o.messageId, detail: o.detail });
        },
      },
    });
    try {
      const { messageId } = await w.queue.queue('__wkf_workflow_held' as never, { runId: 'wrun_held' });
      // Another live delivery (another process) holds the lease for 45 s.
      const other = await acquireDeliveryLease(w.ctx, messageId as string, { ttlMs: 45_000, token: 'other-process' });
      expect(other.acquired).toBe(true);
      await w.queue.start();
      const d = await waitFor(() => deferred.find((x) => x.messageId === messageId), 20_000, 'the copy to be deferred');
      const seconds = Number(/retried in (\d+) s, when the lease expires/.exec(d.detail ?? '')?.[1]);
      // Until the lease's expiry (45 s from the acquire, minus the time to receive), not a flat 5 s.
      expect(seconds).toBeGreaterThan(30);
      expect(seconds).toBeLessThanOrEqual(45);
      expect(w.deliveries).toHaveLength(0);
    } finally {
      await w.close();
    }
  });
});
