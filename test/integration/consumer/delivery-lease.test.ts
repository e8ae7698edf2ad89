/**
 * The step lease (src/storage/write/step-lease.ts) against DynamoDB Local: `step_started` inside a
 * delivery scope stamps the step with the delivery's token; another delivery's start of the
 * running step is refused with `TooEarlyError` (core's "come back later") until this process has
 * seen the lease stand still for its ttl (a crashed owner), whatever the lease's end says; the owner's own retry after a lost response
 * (injected on the wire by the fault proxy, so the SDK retries a write that happened) is
 * recognised; the flow route extends the leases of the steps its delivery started while the
 * handler runs, and releases what is left when it settles. Real core on top: test/e2e/step-lease.test.ts.
 */
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { Storage } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { loadConfig } from '../../../src/config/index.js';
import { createQueueHandler } from '../../../src/consumer/route/queue-handler.js';
import { processSigningKey, signatureHeaders } from '../../../src/consumer/shared/signing.js';
import { type DeliveryScope, runInDelivery, type StepLease } from '../../../src/context/delivery-scope.js';
import { createContext } from '../../../src/context/world-context.js';
import { keys } from '../../../src/schema/keys.js';
import { createStorage } from '../../../src/storage/index.js';
import { LeaseWatch } from '../../../src/storage/memory/lease-watch.js';
import { parseStep } from '../../../src/storage/records/step.js';
import {
  extendStepLeases,
  type LeaseFields,
  type LeaseWatchReport,
  observeStepLeases,
  releaseStepLeases,
} from '../../../src/storage/write/step-lease.js';
import { createFixture, type Fixture, stackEnv } from '../../helpers/aws.js';
import { type FaultProxy, startFaultProxy } from '../../helpers/faults-proxy.js';
import { makeWorld } from '../../helpers/queue.js';
import { bytes, rejectsWith, startedRun, sv } from '../../helpers/storage.js';

let f: Fixture;
let proxy: FaultProxy;
let storage: Storage;
let table: { ddb: Fixture['clients']['ddb']; table: string };
let clients: ReturnType<typeof createClients>;

beforeAll(async () => {
  f = await createFixture({}, 'lease');
  proxy = await startFaultProxy({ target: stackEnv().AWS_ENDPOINT_URL_DYNAMODB, service: 'dynamodb', seed: 3 });
  const config = loadConfig({ ...f.env, AWS_ENDPOINT_URL_DYNAMODB: proxy.url });
  clients = createClients(config);
  storage = createStorage(createContext(config, clients));
  table = { ddb: clients.ddb, table: config.tableName };
});
afterAll(async () => {
  if (clients) destroyClients(clients);
  await proxy?.close();
});

const lease = (token: string, ttlMs = 30_000): StepLease => ({ token, ttlMs, started: new Map() });
const scope = (l: StepLease, messageId = 'msg_owner'): DeliveryScope => ({
  messageId,
  attempt: 1,
  logTails: new Map(),
  stepLease: l,
});
const inScope = <T>(l: StepLease | undefined, fn: () => Promise<T>): Promise<T> =>
  l ? runInDelivery(scope(l), fn) : fn();

const lazyStart = (stepId: string) => ({
  eventType: 'step_started' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { stepName: 'step//lease', input: bytes('in'), ownerMessageId: 'msg_owner' },
});
const start = (stepId: string) => ({
  eventType: 'step_started' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { stepName: 'step//lease', ownerMessageId: 'msg_owner' },
});
const complete = (stepId: string) => ({
  eventType: 'step_completed' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { result: bytes('out') },
});

async function stored(runId: string, stepId: string) {
  const out = await f.clients.ddb.send(
    new GetItemCommand({
      TableName: f.config.tableName,
      Key: { PK: { S: keys.step(runId, stepId).PK }, SK: { S: keys.step(runId, stepId).SK } },
      ConsistentRead: true,
    }),
  );
  return {
    token: out.Item?.leaseToken?.S,
    until: out.Item?.leaseUntil?.N === undefined ? undefined : Number(out.Item.leaseUntil.N),
    attempt: Number(out.Item?.attempt?.N),
    status: out.Item?.status?.S,
  };
}

async function startedSteps(runId: string): Promise<number> {
  const page = await storage.events.list({ runId, pagination: { limit: 1000 } });
  return page.data.filter((e) => e.eventType === 'step_started').length;
}

describe.sequential('step lease (storage)', () => {
  test('a start stamps the step; another delivery is refused while the lease lives; the owner restarts; completion clears it', async () => {
    const runId = await startedRun(storage);
    const a = lease('tok-a');
    const t0 = Date.now();
    const r = await inScope(a, () => storage.events.create(runId, lazyStart('step_1')));
    expect(r.step?.status).toBe('running');
    // Not part of the contract's Step.
    expect(r.step).not.toHaveProperty('leaseToken');
    const s = await stored(runId, 'step_1');
    expect(s.token).toBe('tok-a');
    expect(s.until).toBeGreaterThanOrEqual(t0 + 30_000);
    expect(s.until).toBeLessThanOrEqual(Date.now() + 30_000);
    expect([...a.started.values()]).toEqual([{ runId, stepId: 'step_1', beat: 0 }]);

    // A second copy of the delivery (same message id, another request: another token).
    const b = lease('tok-b');
    const err = await rejectsWith(
      inScope(b, () => storage.events.create(runId, start('step_1'))),
      'TooEarlyError',
    );
    const retryAfter = (err as Error & { retryAfter?: number }).retryAfter ?? 0;
    expect(retryAfter).toBeGreaterThan(25);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(b.started.size).toBe(0);
    expect((await stored(runId, 'step_1')).attempt).toBe(1);

    // The owner itself may start the step again (core's owned recovery in the same delivery).
    const again = await inScope(a, () => storage.events.create(runId, start('step_1')));
    expect(again.step?.attempt).toBe(2);

    // Completion clears the lease and drops the step from the owner's heartbeat set.
    await inScope(a, () => storage.events.create(runId, complete('step_1')));
    const done = await stored(runId, 'step_1');
    expect(done).toMatchObject({ status: 'completed', token: undefined, until: undefined });
    expect(a.started.size).toBe(0);
    // A late copy finds the step finished: EntityConflictError (core: 'skipped'), never a start.
    await rejectsWith(
      inScope(b, () => storage.events.create(runId, start('step_1'))),
      'EntityConflictError',
    );
  });

  test('a crashed owner: its lease stands still, the redelivery watches it for the ttl and takes over; the dead holder can neither extend nor release it', async () => {
    const runId = await startedRun(storage);
    const dead = lease('tok-dead', 1000);
    await inScope(dead, () => storage.events.create(runId, lazyStart('step_c')));
    const next = lease('tok-next');
    // Its end has passed by the time the second attempt comes, but that decides nothing: the
    // first attempt is this process's first sight of the lease.
    await new Promise((r) => setTimeout(r, 1100));
    await rejectsWith(
      inScope(next, () => storage.events.create(runId, start('step_c'))),
      'TooEarlyError',
    );
    await new Promise((r) => setTimeout(r, 1100));
    const r = await inScope(next, () => storage.events.create(runId, start('step_c')));
    expect(r.step).toMatchObject({ status: 'running', attempt: 2 });
    expect((await stored(runId, 'step_c')).token).toBe('tok-next');
    // The dead holder's heartbeat and release find the lease no longer theirs.
    expect(await extendStepLeases(table, dead)).toEqual(['step_c']);
    dead.started.set('x', { runId, stepId: 'step_c' });
    await releaseStepLeases(table, dead);
    expect((await stored(runId, 'step_c')).token).toBe('tok-next');
    await inScope(next, () => storage.events.create(runId, complete('step_c')));
    expect((await stored(runId, 'step_c')).status).toBe('completed');
  });

  test('outside a delivery scope starts are neither fenced nor stamped (the plain path)', async () => {
    const runId = await startedRun(storage);
    await inScope(lease('tok-a'), () => storage.events.create(runId, lazyStart('step_p')));
    const r = await storage.events.create(runId, start('step_p'));
    expect(r.step?.attempt).toBe(2);
    expect(await stored(runId, 'step_p')).toMatchObject({ token: undefined, until: undefined });
  });

  test('lost responses on stamped starts: the SDK retry of a start that committed is the owner’s own, never refused', async () => {
    const runId = await startedRun(storage);
    const a = lease('tok-lost');
    const before = proxy.injected('lose-response');
    try {
      // The lazy start (step create + synthetic step_created + step_started) commits, its
      // response is lost, the SDK sends the same transaction again.
      proxy.setRules([{ kind: 'lose-response', ops: ['TransactWriteItems'], count: 1 }]);
      const r = await inScope(a, () => storage.events.create(runId, lazyStart('step_l')));
      expect(r.step?.status).toBe('running');
      expect(proxy.injected('lose-response') - before).toBe(1);
      // The start of the running step by the same delivery, its response lost too.
      proxy.setRules([{ kind: 'lose-response', ops: ['TransactWriteItems'], count: 1 }]);
      const again = await inScope(a, () => storage.events.create(runId, start('step_l')));
      expect(again.step?.status).toBe('running');
      expect(proxy.injected('lose-response') - before).toBe(2);
    } finally {
      proxy.setRules([]);
    }
    const s = await stored(runId, 'step_l');
    expect(s.token).toBe('tok-lost');
    // Each start committed once (the retries were recognised, not applied again).
    expect(await startedSteps(runId)).toBe(2);
    await rejectsWith(
      inScope(lease('tok-other'), () => storage.events.create(runId, start('step_l'))),
      'TooEarlyError',
    );
  });
});

describe('step lease in the flow route', () => {
  const port = (ttlMs: number, log: string[] = []) => ({
    ttlMs,
    extend: async (l: StepLease) => {
      log.push('extend');
      return extendStepLeases(table, l);
    },
    release: async (l: StepLease) => {
      log.push('release');
      return releaseStepLeases(table, l);
    },
  });

  function signedRequest(messageId: string, body: string): Request {
    const parts = {
      queueName: '__wkf_workflow_lease',
      messageId,
      attempt: 1,
      body,
      destination: 'http://localhost/flow',
    };
    return new Request('http://localhost/flow', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-vqs-queue-name': parts.queueName,
        'x-vqs-message-id': messageId,
        'x-vqs-message-attempt': '1',
        ...signatureHeaders(processSigningKey(), parts, Date.now()),
      },
      body,
    });
  }

  test('a long step: the route extends its lease while the handler runs; a concurrent copy is refused throughout', async () => {
    const runId = await startedRun(storage);
    const log: string[] = [];
    const untils: number[] = [];
    const refusals: string[] = [];
    const route = createQueueHandler(
      '__wkf_workflow_',
      async () => {
        await storage.events.create(runId, lazyStart('step_long'));
        // The body runs for 4 lease ttls (ttl 600 ms): without the heartbeat the lease would
        // have expired three times over.
        for (let i = 0; i < 8; i++) {
          await new Promise((r) => setTimeout(r, 300));
          untils.push((await stored(runId, 'step_long')).until ?? 0);
          try {
            await inScope(lease(`copy-${i}`, 600), () => storage.events.create(runId, start('step_long')));
          } catch (e) {
            refusals.push((e as Error).name);
          }
        }
        await storage.events.create(runId, complete('step_long'));
      },
      { stepLease: port(600, log) },
    );
    const res = await route(signedRequest('msg_long', JSON.stringify({ runId })));
    expect(await res.json()).toEqual({ ok: true });
    expect(refusals).toEqual(Array(8).fill('TooEarlyError'));
    expect(log.filter((l) => l === 'extend').length).toBeGreaterThanOrEqual(5);
    // The expiry moved forward while the body ran, and ended cleared by the completion.
    expect(untils[untils.length - 1]).toBeGreaterThan(untils[0]);
    expect(await stored(runId, 'step_long')).toMatchObject({ status: 'completed', token: undefined });
    // Nothing left to release after a completed step.
    expect(log).not.toContain('release');
  });

  test('a handler that fails leaves nothing held: the leases it still holds are released at once', async () => {
    const runId = await startedRun(storage);
    const log: string[] = [];
    const errors: string[] = [];
    const route = createQueueHandler(
      '__wkf_workflow_',
      async () => {
        await storage.events.create(runId, lazyStart('step_fail'));
        throw new Error('handler died after the start');
      },
      { stepLease: port(30_000, log), logError: (m) => errors.push(m) },
    );
    const res = await route(signedRequest('msg_fail', JSON.stringify({ runId })));
    expect(res.status).toBe(500);
    expect(log).toEqual(['release']);
    expect(await stored(runId, 'step_fail')).toMatchObject({ status: 'running', token: undefined, until: undefined });
    // The redelivery starts the step at once instead of waiting out a 30 s lease.
    const r = await inScope(lease('tok-redelivery'), () => storage.events.create(runId, start('step_fail')));
    expect(r.step?.attempt).toBe(2);
  });
});

test('default settings: a start under the flow route holds its step for 15 s, half the 30 s a crashed copy stays hidden', async () => {
  const w = await makeWorld({ start: false, register: false });
  try {
    const s = createStorage(w.ctx);
    const runId = await startedRun(s);
    let heldMs = 0;
    const route = w.queue.createQueueHandler('__wkf_workflow_', async () => {
      const t0 = Date.now();
      await s.events.create(runId, lazyStart('step_default'));
      const item = await w.fixture.clients.ddb.send(
        new GetItemCommand({
          TableName: w.fixture.config.tableName,
          Key: { PK: { S: keys.step(runId, 'step_default').PK }, SK: { S: keys.step(runId, 'step_default').SK } },
          ConsistentRead: true,
        }),
      );
      heldMs = Number(item.Item?.leaseUntil?.N) - t0;
      await s.events.create(runId, complete('step_default'));
    });
    const parts = {
      queueName: '__wkf_workflow_lease',
      messageId: 'msg_default',
      attempt: 1,
      body: '{}',
      destination: 'http://localhost/flow',
    };
    const res = await route(
      new Request('http://localhost/flow', {
        method: 'POST',
        headers: {
          'x-vqs-queue-name': parts.queueName,
          'x-vqs-message-id': parts.messageId,
          'x-vqs-message-attempt': '1',
          ...signatureHeaders(processSigningKey(), parts, Date.now()),
        },
        body: parts.body,
      }),
    );
    expect(res.status).toBe(200);
    expect(w.fixture.config.consumerVisibilitySeconds).toBe(30);
    expect(heldMs).toBeGreaterThan(14_000);
    expect(heldMs).toBeLessThanOrEqual(15_500);
    expect(heldMs).toBeLessThan(w.fixture.config.consumerVisibilitySeconds * 1000);
  } finally {
    await w.close();
  }
});

describe("the backstop's watch of a step lease (observeStepLeases)", () => {
  async function leaseOf(runId: string, stepId: string): Promise<LeaseFields> {
    const out = await f.clients.ddb.send(
      new GetItemCommand({
        TableName: f.config.tableName,
        Key: { PK: { S: keys.step(runId, stepId).PK }, SK: { S: keys.step(runId, stepId).SK } },
        ConsistentRead: true,
      }),
    );
    return parseStep(out.Item as never);
  }

  /** A table whose GetItems take `stallMs` on a fake clock, and whose revoke runs `beforeRevoke` first. */
  function scripted(o: { stallMs?: (read: number) => number; beforeRevoke?: () => Promise<unknown> } = {}) {
    const clock = { t: 0 };
    let reads = 0;
    const ddb = {
      send: async (cmd: { input: { UpdateExpression?: string } }) => {
        if (cmd instanceof GetItemCommand) clock.t += o.stallMs?.(reads++) ?? 0;
        if (cmd instanceof UpdateItemCommand && cmd.input.UpdateExpression?.startsWith('REMOVE'))
          await o.beforeRevoke?.();
        return table.ddb.send(cmd as never);
      },
    };
    return {
      ctx: { ddb: ddb as unknown as Fixture['clients']['ddb'], table: table.table },
      opts: {
        watch: new LeaseWatch(() => clock.t),
        clock: () => clock.t,
        sleep: async (ms: number) => {
          clock.t += ms;
        },
      },
    };
  }

  test('a heartbeating holder is live; once it stops, its lease stands still for its ttl and is revoked, and a start then needs no wait', async () => {
    const runId = await startedRun(storage);
    const holder = lease('tok-h', 1200);
    await inScope(holder, () => storage.events.create(runId, lazyStart('step_w')));
    const beating = setInterval(() => void extendStepLeases(table, holder), 400);
    let live: Map<string, LeaseWatchReport>;
    try {
      live = await observeStepLeases(table, [await leaseOf(runId, 'step_w')], { watch: new LeaseWatch() });
    } finally {
      clearInterval(beating);
    }
    expect(live.get('step_w')).toMatchObject({ verdict: 'live', why: 'heartbeat' });
    // Stopped (crashed, paused): whatever its lease end says, only the watch decides.
    const lapsed = await observeStepLeases(table, [await leaseOf(runId, 'step_w')], { watch: new LeaseWatch() });
    expect(lapsed.get('step_w')).toMatchObject({ verdict: 'lapsed' });
    expect(lapsed.get('step_w')?.quietMs).toBeGreaterThanOrEqual(1200);
    expect(await stored(runId, 'step_w')).toMatchObject({ status: 'running', token: undefined, until: undefined });
    // The holder's next heartbeat finds its lease gone; another delivery starts at once.
    expect(await extendStepLeases(table, holder)).toEqual(['step_w']);
    const r = await inScope(lease('tok-next'), () => storage.events.create(runId, start('step_w')));
    expect(r.step?.attempt).toBe(2);
  });

  test('the revoke is fenced on what was watched: a heartbeat that lands between the last read and the revoke keeps the lease', async () => {
    const runId = await startedRun(storage);
    const holder = lease('tok-late', 1200);
    await inScope(holder, () => storage.events.create(runId, lazyStart('step_r')));
    const { ctx, opts } = scripted({ beforeRevoke: () => extendStepLeases(table, holder) });
    const out = await observeStepLeases(ctx, [await leaseOf(runId, 'step_r')], opts);
    expect(out.get('step_r')).toMatchObject({ verdict: 'live', why: 'renewed' });
    expect((await stored(runId, 'step_r')).token).toBe('tok-late');
  });

  test('only time the table answered promptly counts: a stalled read starts the count again; a table that never does ends the watch live', async () => {
    const runId = await startedRun(storage);
    await inScope(lease('tok-s', 1200), () => storage.events.create(runId, lazyStart('step_s')));
    // Interval 200 ms; the third read stalls 1 s (the holder's heartbeats could have stalled too).
    const once = scripted({ stallMs: (n) => (n === 2 ? 1000 : 0) });
    const out = await observeStepLeases(ctx(once), [await leaseOf(runId, 'step_s')], once.opts);
    expect(out.get('step_s')?.verdict).toBe('lapsed');
    expect(out.get('step_s')?.reads).toBeGreaterThanOrEqual(3 + 6); // counted again after the stall
    await inScope(lease('tok-s2', 1200), () => storage.events.create(runId, start('step_s')));
    const always = scripted({ stallMs: () => 5000 });
    const slow = await observeStepLeases(ctx(always), [await leaseOf(runId, 'step_s')], always.opts);
    expect(slow.get('step_s')).toMatchObject({ verdict: 'live', why: 'slow store' });
    expect((await stored(runId, 'step_s')).token).toBe('tok-s2');
  });
});

const ctx = (s: { ctx: { ddb: Fixture['clients']['ddb']; table: string } }) => s.ctx;
