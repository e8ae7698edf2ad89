/**
 * The World queue end to end on the emulator stack (DynamoDB Local + fauxqs SQS/S3), consumed by
 * the in-process poller: at-least-once delivery, durable idempotency across World instances,
 * delays (SQS and multi-hop), `{timeoutSeconds}` redelivery, DLQ, malformed messages, S3 offload,
 * and signed delivery over HTTP.
 */
import { createHash, randomBytes } from 'node:crypto';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { encodePayload, MSG_ATTR } from '../../../src/queue/encoding.js';
import { EVE_QUEUE, makeWorld, receiveAll, serve, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_demo' as ValidQueueName;
const worlds: World[] = [];
async function world(opts: Parameters<typeof makeWorld>[0] = {}): Promise<World> {
  const w = await makeWorld(opts);
  worlds.push(w);
  return w;
}
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

const FAST = { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2' };

describe.concurrent('SQS queue', () => {
  test('delivers every message once acked, with Uint8Array payloads intact, and deletes it', async ({ expect }) => {
    const w = await world({ env: FAST });
    const sent: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { messageId } = await w.queue.queue(EVE_QUEUE, {
        runId: `wrun_${i}`,
        input: new Uint8Array([0, i, 0, 255]),
      } as any);
      expect(messageId).toMatch(/^msg_[0-9A-Z]{26}$/);
      sent.push(messageId as string);
    }
    await waitFor(() => w.deliveries.length >= 5, 15_000, '5 deliveries');
    for (const d of w.deliveries) {
      expect(d.meta.queueName).toBe(EVE_QUEUE);
      expect(d.meta.attempt).toBe(1);
      expect(d.body.input).toBeInstanceOf(Uint8Array);
      expect(Array.from(d.body.input)).toEqual([0, Number(d.body.runId.slice(5)), 0, 255]);
    }
    // Each delivered once; an early delivery (on by default) carries its own id, never the copy's.
    expect(w.deliveries.map((d) => d.body.runId).sort()).toEqual(['wrun_0', 'wrun_1', 'wrun_2', 'wrun_3', 'wrun_4']);
    expect(new Set(w.deliveries.map((d) => d.meta.messageId)).size).toBe(5);
    // Acked messages are gone: after the visibility timeout nothing reappears.
    await w.queue.close();
    await sleep(2500);
    expect(await receiveAll(w, await w.queue.transport.queueUrl())).toHaveLength(0);
  });

  test('a failed delivery comes back with the same message id and the next attempt', async ({ expect }) => {
    const w = await world({ env: FAST });
    w.respond = (d) => {
      if (d.meta.attempt === 1) throw new Error('transient');
      return undefined;
    };
    await w.queue.queue(Q, { runId: 'wrun_retry' });
    await waitFor(() => w.deliveries.length >= 2, 15_000, 'redelivery');
    // (The first is the early delivery, under its own id: its copy redelivers it as that id.)
    const first = w.deliveries[0].meta.messageId;
    expect(w.deliveries.map((d) => [d.meta.messageId, d.meta.attempt])).toEqual([
      [first, 1],
      [first, 2],
    ]);
    await sleep(2500);
    expect(w.deliveries).toHaveLength(2);
  });

  test('a consumer that dies mid-delivery loses nothing: another World gets the message after the visibility timeout', async ({
    expect,
  }) => {
    const a = await world({ env: FAST, queueOptions: { drainTimeoutMs: 200 } });
    a.respond = () => new Promise(() => {}); // never finishes
    const { messageId } = await a.queue.queue(Q, { runId: 'wrun_crash' });
    await waitFor(() => a.deliveries.length === 1, 15_000, 'first delivery');
    await a.queue.close(); // abandons the running delivery
    const b = await world({ sameAs: a });
    await waitFor(() => b.deliveries.length === 1, 15_000, 'redelivery to the second World');
    // close() released the copy at once, but the abandoned delivery still holds its lease (its
    // handler may still be running here), so the second World defers that copy until the lease
    // expires instead of running it concurrently: the body runs at attempt 2 or later, once.
    expect(b.deliveries[0].meta).toMatchObject({ messageId });
    expect(b.deliveries[0].meta.attempt).toBeGreaterThanOrEqual(2);
  });

  test('an idempotency key yields one message across two World instances, concurrently and later', async ({
    expect,
  }) => {
    const a = await world({ start: false });
    const b = await world({ sameAs: a, start: false });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? a : b).queue.queue(Q, { runId: 'wrun_idem' }, { idempotencyKey: 'wait-1:hop-0' }),
      ),
    );
    const ids = new Set(results.map((r) => r.messageId));
    expect(ids.size).toBe(1);
    // Still deduped after the first copy was sent and even from a fresh instance.
    const c = await world({ sameAs: a, start: false });
    expect((await c.queue.queue(Q, { runId: 'wrun_idem' }, { idempotencyKey: 'wait-1:hop-0' })).messageId).toBe(
      [...ids][0],
    );
    const other = await b.queue.queue(Q, { runId: 'wrun_idem' }, { idempotencyKey: 'wait-1:hop-1' });
    expect(other.messageId).not.toBe([...ids][0]);
    const msgs = await receiveAll(a, await a.queue.transport.queueUrl());
    expect(msgs.map((m) => m.MessageAttributes?.[MSG_ATTR.id]?.StringValue).sort()).toEqual(
      [[...ids][0], other.messageId].sort(),
    );
  });

  test('a failed send releases its idempotency key so a retry can send', async ({ expect }) => {
    const a = await world({ start: false });
    const broken = await world({ sameAs: a, start: false, env: { EVE_WORLD_AWS_QUEUE: 'no-such-queue-here' } });
    await expect(broken.queue.queue(Q, { runId: 'wrun_rel' }, { idempotencyKey: 'k-release' })).rejects.toThrow();
    const { messageId } = await a.queue.queue(Q, { runId: 'wrun_rel' }, { idempotencyKey: 'k-release' });
    const msgs = await receiveAll(a, await a.queue.transport.queueUrl());
    expect(msgs.map((m) => m.MessageAttributes?.[MSG_ATTR.id]?.StringValue)).toEqual([messageId]);
  });

  test('delaySeconds within the hop limit uses an SQS delay and is never early', async ({ expect }) => {
    const w = await world({ env: FAST });
    const sentAt = Date.now();
    await w.queue.queue(Q, { runId: 'wrun_delay' }, { delaySeconds: 2 });
    await waitFor(() => w.deliveries.length === 1, 15_000, 'delayed delivery');
    expect(w.deliveries[0].at - sentAt).toBeGreaterThanOrEqual(2000);
  });

  test('a long wait crosses several hops and arrives after, not before, its due time', async ({ expect }) => {
    const outcomes: DeliveryOutcome[] = [];
    const w = await world({
      env: FAST,
      tuning: { maxDelayHopSeconds: 1 },
      queueOptions: { onDeliveryOutcome: (o) => outcomes.push(o) },
    });
    const sentAt = Date.now();
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_hops' }, { delaySeconds: 4.5 });
    await waitFor(() => w.deliveries.length === 1, 20_000, 'delivery after hops');
    expect(w.deliveries[0].at - sentAt).toBeGreaterThanOrEqual(4500);
    expect(w.deliveries[0].meta).toMatchObject({ messageId, attempt: 1 });
    expect(outcomes.filter((o) => o.reason === 'redelayed').length).toBeGreaterThanOrEqual(2);
    await sleep(1500);
    expect(w.deliveries).toHaveLength(1);
  });

  test('{timeoutSeconds} redelivers the same message after that delay; it is not an ack', async ({ expect }) => {
    const w = await world({ env: FAST });
    w.respond = (d) => (d.meta.attempt === 1 ? { timeoutSeconds: 2 } : undefined);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_timeout' });
    await waitFor(() => w.deliveries.length === 2, 15_000, 'redelivery after timeoutSeconds');
    const [first, second] = w.deliveries;
    expect(second.at - first.at).toBeGreaterThanOrEqual(2000);
    expect(second.meta).toMatchObject({ messageId, attempt: 2 });
    await sleep(2500);
    expect(w.deliveries).toHaveLength(2);
  });

  test('repeated {timeoutSeconds} never pushes a message into the DLQ; id stays, attempts keep counting', async ({
    expect,
  }) => {
    const w = await world({ env: { ...FAST, EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' } });
    w.respond = (d) => (d.meta.attempt < 5 ? { timeoutSeconds: 1 } : undefined);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_many' });
    await waitFor(() => w.deliveries.length === 5, 20_000, '5 deliveries');
    expect(w.deliveries.map((d) => d.meta.attempt)).toEqual([1, 2, 3, 4, 5]);
    // The first is the early delivery (its own id); its `timeoutSeconds` is redelivered as the copy.
    expect(new Set(w.deliveries.slice(1).map((d) => d.meta.messageId))).toEqual(new Set([messageId]));
    expect(await receiveAll(w, await w.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test('after maxReceiveCount failures the message is in the DLQ and one log line names run and queue', async ({
    expect,
  }) => {
    const w = await world({ env: { ...FAST, EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' } });
    w.respond = () => {
      throw new Error('always fails');
    };
    const { messageId } = await w.queue.queue(EVE_QUEUE, { runId: 'wrun_dead' });
    const dlqUrl = await w.queue.transport.dlqUrl();
    // The early delivery (attempt 1) is not a receive of the copy: its failure replaces the copy,
    // whose two receives (attempts 2 and 3) are what the queue counts toward the DLQ.
    await waitFor(() => w.deliveries.length === 3, 20_000, 'three failed deliveries');
    let dead: Awaited<ReturnType<typeof receiveAll>> = [];
    const end = Date.now() + 15_000;
    while (dead.length === 0 && Date.now() < end) dead = await receiveAll(w, dlqUrl);
    expect(dead.map((m) => m.MessageAttributes?.[MSG_ATTR.id]?.StringValue)).toEqual([messageId]);
    expect(w.deliveries.map((d) => d.meta.attempt)).toEqual([1, 2, 3]);
    const lines = w.logger.lines.filter((l) => l.includes('] DLQ:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('wrun_dead');
    expect(lines[0]).toContain(EVE_QUEUE);
  });

  test('malformed messages are never acked: 400 from the handler, kept, then in the DLQ', async ({ expect }) => {
    const w = await world({ env: { ...FAST, EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' } });
    const url = await w.queue.transport.queueUrl();
    const outcomes: string[] = [];
    await w.fixture.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: '{"runId": broken',
        MessageAttributes: {
          [MSG_ATTR.queue]: { DataType: 'String', StringValue: Q },
          [MSG_ATTR.id]: { DataType: 'String', StringValue: 'msg_MALFORMED' },
        },
      }),
    );
    // No attributes and not an envelope: the consumer cannot even route it.
    await w.fixture.clients.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'hello' }));
    const dlqUrl = await w.queue.transport.dlqUrl();
    const dead: Awaited<ReturnType<typeof receiveAll>> = [];
    const end = Date.now() + 20_000;
    while (dead.length < 2 && Date.now() < end) dead.push(...(await receiveAll(w, dlqUrl)));
    outcomes.push(...dead.map((m) => m.Body ?? ''));
    expect(outcomes.sort()).toEqual(['hello', '{"runId": broken']);
    expect(w.deliveries).toHaveLength(0);
    expect(w.logger.lines.filter((l) => l.includes('] DLQ:'))).toHaveLength(2);
  });

  test('a 2 MB payload travels through S3 and arrives byte for byte', async ({ expect }) => {
    const w = await world({ env: FAST });
    const big = new Uint8Array(randomBytes(2 * 1024 * 1024));
    big[0] = 0;
    big[big.length - 1] = 0;
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_big', input: big } as any);
    await waitFor(() => w.deliveries.length === 1, 20_000, 'big delivery');
    const got = w.deliveries[0].body.input as Uint8Array;
    expect(got.byteLength).toBe(big.byteLength);
    expect(createHash('sha256').update(got).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
    // Under queue/<messageId>/<created s> (the 30-day lifecycle prefix; see body-lifetime.ts).
    const page = [];
    for await (const p of w.ctx.payloads.list(`queue/${messageId}/`)) page.push(...p);
    expect(page.map((o) => o.key)).toEqual([expect.stringMatching(new RegExp(`^queue/${messageId}/\\d+$`))]);
    const head = await (await w.fixture.clients.s3()).send(
      new HeadObjectCommand({ Bucket: w.fixture.config.bucket, Key: page[0].key }),
    );
    expect(head.ContentLength).toBeGreaterThan(2 * 1024 * 1024);
  });

  test('over HTTP, deliveries are signed and the flow route accepts them; forged requests get 401', async ({
    expect,
  }) => {
    let handler: (req: Request) => Promise<Response> = async () => new Response('not ready', { status: 503 });
    const server = await serve((req) => handler(req));
    try {
      const w = await world({
        register: false,
        env: {
          ...FAST,
          EVE_WORLD_AWS_SIGNING_SECRET: '3c7e1a9f5b2d8c4e0a6f1b7d3e9c5a2f8b4d0e6c1a7f3b9d5e2c8a4f0b6d1e7c',
          EVE_WORLD_AWS_FLOW_URL: server.url,
        },
      });
      handler = w.queue.createQueueHandler('__wkf_workflow_', async (body, meta) => {
        w.deliveries.push({ body, meta, at: Date.now() });
        return undefined;
      });
      const { messageId } = await w.queue.queue(Q, { runId: 'wrun_http', input: new Uint8Array([0, 0, 1]) } as any);
      await waitFor(() => w.deliveries.length === 1, 15_000, 'HTTP delivery');
      expect(w.deliveries[0].meta).toMatchObject({ messageId, attempt: 1, queueName: Q });
      expect(Array.from(w.deliveries[0].body.input)).toEqual([0, 0, 1]);

      const forged = await fetch(server.url, {
        method: 'POST',
        headers: {
          'x-vqs-queue-name': Q,
          'x-vqs-message-id': 'msg_FORGED',
          'x-vqs-message-attempt': '1',
          'x-eve-timestamp': String(Math.floor(Date.now() / 1000)),
          'x-eve-signature': `v1=${'a'.repeat(64)}`,
        },
        body: encodePayload({ runId: 'wrun_evil' }),
      });
      expect(forged.status).toBe(401);
      const unsigned = await fetch(server.url, {
        method: 'POST',
        headers: { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_X', 'x-vqs-message-attempt': '1' },
        body: encodePayload({ runId: 'wrun_evil' }),
      });
      expect(unsigned.status).toBe(401);
      expect(w.deliveries).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

test('getDeploymentId reports the configured deployment id', async () => {
  const w = await world({ start: false, tuning: { deploymentId: 'dpl_test' } });
  expect(await w.queue.getDeploymentId()).toBe('dpl_test');
  const batch = await w.queue.queueBatch(Q, [
    { message: { runId: 'wrun_b1' } },
    { message: { runId: 'wrun_b2' }, opts: { idempotencyKey: 'batch-k' } },
    { message: { runId: 'wrun_b2' }, opts: { idempotencyKey: 'batch-k' } },
  ]);
  expect(batch).toHaveLength(3);
  expect(batch.every((r) => r.error === undefined)).toBe(true);
  expect(batch[1].messageId).toBe(batch[2].messageId);
  expect(await receiveAll(w, await w.queue.transport.queueUrl())).toHaveLength(2);
});
