/**
 * Retention (#13): `$retention: '0'` (eve's private sessions) purges the run's user payloads at the
 * terminal event and keeps the entities readable, with `expiredAt` set, until DynamoDB TTL removes
 * them (a day later, or EVE_WORLD_AWS_RETENTION_DAYS); its S3 objects are deleted at once. A
 * World-wide EVE_WORLD_AWS_RETENTION_DAYS gets a TTL on every item N days on, data readable until
 * then, objects tagged for the lifecycle rule. Without either, nothing expires.
 */

import { randomBytes } from 'node:crypto';
import { DeleteItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import type { Storage } from '@workflow/world';
import { getEventDataRefFields } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createContext } from '../../../src/context/world-context.js';
import { createStorage } from '../../../src/storage/index.js';
import { createStreamer } from '../../../src/streams/index.js';
import { bytes, rejectsWith, runCreatedReq, type StorageFixture, storageFixture, sv } from '../../helpers/storage.js';

let f: StorageFixture;
let kept: Storage;
let days: Storage;

beforeAll(async () => {
  f = await storageFixture();
  kept = f.storage;
  // Same table and bucket, a World configured with 7 days of retention.
  days = createStorage({ ...f.ctx, config: { ...f.config, retentionDays: 7 } });
});
afterAll(() => f?.close());

/** A run with a large step input (one S3 object) and a completed step, then completed itself. */
async function finishedRun(storage: Storage, attributes?: Record<string, string>): Promise<string> {
  const { run } = await storage.events.create(
    null,
    runCreatedReq(attributes ? { attributes, allowReservedAttributes: true } : {}),
  );
  const runId = run!.runId;
  await storage.events.create(runId, { eventType: 'run_started', specVersion: sv });
  await storage.events.create(runId, {
    eventType: 'step_started',
    specVersion: sv,
    correlationId: 'step_1',
    eventData: { stepName: 's', input: new Uint8Array(randomBytes(400_000)) },
  });
  await storage.events.create(runId, {
    eventType: 'step_completed',
    specVersion: sv,
    correlationId: 'step_1',
    eventData: { result: bytes('r') },
  });
  await storage.events.create(runId, {
    eventType: 'hook_created',
    specVersion: sv,
    correlationId: 'hook_1',
    eventData: { token: `tok-${randomBytes(6).toString('hex')}`, metadata: bytes('secret metadata') },
  });
  await storage.events.create(runId, {
    eventType: 'wait_created',
    specVersion: sv,
    correlationId: 'w',
    eventData: { resumeAt: new Date(Date.now() + 60_000) },
  });
  await storage.events.create(runId, {
    eventType: 'run_completed',
    specVersion: sv,
    eventData: { output: bytes('out') },
  });
  return runId;
}

async function runItems(runId: string) {
  const out = await f.clients.ddb.send(
    new QueryCommand({
      TableName: f.config.tableName,
      KeyConditionExpression: 'PK = :p',
      ExpressionAttributeValues: { ':p': { S: `RUN#${runId}` } },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

async function objects(runId: string, withTags = true) {
  const { ListObjectsV2Command, GetObjectTaggingCommand } = await import('@aws-sdk/client-s3');
  const s3 = await f.clients.s3();
  const out = await s3.send(new ListObjectsV2Command({ Bucket: f.config.bucket, Prefix: `runs/${runId}/` }));
  return Promise.all(
    (out.Contents ?? []).map(async (o) => ({
      key: o.Key!,
      tags: withTags
        ? ((await s3.send(new GetObjectTaggingCommand({ Bucket: f.config.bucket, Key: o.Key! }))).TagSet ?? [])
        : undefined,
    })),
  );
}

describe('retention', () => {
  it("$retention '0': payloads purged at the terminal event, entities kept with expiredAt, objects deleted; not-found once TTL removed the items", async () => {
    const before = Date.now();
    const runId = await finishedRun(kept, { $retention: '0' });
    const after = Date.now();

    // The run is still there for whoever reads it right after it finished, without its payloads.
    const run = await kept.runs.get(runId);
    expect(run.status).toBe('completed');
    expect(run.input).toBeUndefined();
    expect(run.output).toBeUndefined();
    expect(run.expiredAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(run.expiredAt!.getTime()).toBeLessThanOrEqual(after);
    expect((await kept.runs.getMany!([runId]))[0]?.runId).toBe(runId);
    const listed = await kept.runs.list({ pagination: { limit: 1000 }, resolveData: 'none' });
    expect(listed.data.map((r) => r.runId)).toContain(runId);

    // Steps and events keep their shape; every user payload is gone from them.
    const step = await kept.steps.get(runId, 'step_1');
    expect(step.status).toBe('completed');
    expect(step.input).toBeUndefined();
    expect(step.output).toBeUndefined();
    const events = (await kept.events.list({ runId, resolveData: 'all' })).data;
    expect(events.map((e) => e.eventType)).toEqual([
      'run_created',
      'run_started',
      'step_created',
      'step_started',
      'step_completed',
      'hook_created',
      'wait_created',
      'run_completed',
    ]);
    for (const e of events) {
      const data = ((e as { eventData?: Record<string, unknown> }).eventData ?? {}) as Record<string, unknown>;
      for (const field of getEventDataRefFields(e.eventType))
        expect(data[field], `${e.eventType}.${field}`).toBeUndefined();
    }
    // The stored items hold no payload bytes either (not just hidden by the reads).
    const items = await runItems(runId);
    expect(items.length).toBeGreaterThan(5);
    for (const it of items) {
      for (const a of ['input', 'output', 'error', 'metadata']) expect(it[a], `${it.SK.S}.${a}`).toBeUndefined();
      for (const a of ['input', 'output', 'result', 'error', 'payload', 'metadata']) {
        expect(it.ed?.M?.[a], `${it.SK.S}.ed.${a}`).toBeUndefined();
        expect(it.e2?.M?.ed?.M?.[a], `${it.SK.S}.e2.ed.${a}`).toBeUndefined(); // a pair's second event
      }
    }
    // The entities go by TTL a day after the terminal event; the S3 objects went at once.
    for (const it of items) {
      expect(Number(it.ttl?.N)).toBeGreaterThanOrEqual(Math.floor(before / 1000) + 86_400);
      expect(Number(it.ttl?.N)).toBeLessThanOrEqual(Math.ceil(after / 1000) + 86_400);
    }
    expect(await objects(runId)).toEqual([]);

    // DynamoDB's TTL sweep, done here by real deletes: then the run is not found.
    for (const it of items)
      await f.clients.ddb.send(new DeleteItemCommand({ TableName: f.config.tableName, Key: { PK: it.PK, SK: it.SK } }));
    await rejectsWith(kept.runs.get(runId), 'WorkflowRunNotFoundError');
    expect(await kept.runs.getMany!([runId])).toEqual([null]);
  });

  it("$retention '0': stream contents are purged with the run, the stream stays listable", async () => {
    const { run } = await kept.events.create(
      null,
      runCreatedReq({ attributes: { $retention: '0' }, allowReservedAttributes: true }),
    );
    const runId = run!.runId;
    await kept.events.create(runId, { eventType: 'run_started', specVersion: sv });
    const streamer = createStreamer(createContext(f.config, f.clients));
    try {
      await streamer.streams.write(runId, 'out', 'secret token 1');
      await streamer.streams.write(runId, 'out', 'secret token 2');
      await streamer.streams.close(runId, 'out');
    } finally {
      await streamer.close();
    }
    const chunkItems = async () =>
      (
        await f.clients.ddb.send(
          new QueryCommand({
            TableName: f.config.tableName,
            KeyConditionExpression: 'PK = :p AND begins_with(SK, :c)',
            ExpressionAttributeValues: { ':p': { S: `STREAM#${runId}#out` }, ':c': { S: 'CHUNK#' } },
            ConsistentRead: true,
          }),
        )
      ).Items ?? [];
    // Stream block items (streams/block-items.ts) hold their chunks in the list `c`.
    const stored = (items: Awaited<ReturnType<typeof chunkItems>>) =>
      items.flatMap((i) => i.c?.L ?? []).filter((c) => c.B !== undefined || c.S !== undefined);
    const before = await chunkItems();
    expect(stored(before)).toHaveLength(2);
    const slots = before.map((i) => i.c?.L?.length ?? 0);
    await kept.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } });
    const after = await chunkItems();
    // The blocks stay until TTL with as many (empty) chunks as before: indices stay dense.
    expect(after.map((i) => i.c?.L?.length ?? 0)).toEqual(slots);
    expect(stored(after)).toHaveLength(0);
    for (const it of after) expect(Number(it.ttl?.N)).toBeGreaterThan(Date.now() / 1000);
  });

  it("$retention '0': a hook kept for its token retention loses its metadata", async () => {
    const { run } = await kept.events.create(
      null,
      runCreatedReq({ attributes: { $retention: '0' }, allowReservedAttributes: true }),
    );
    const runId = run!.runId;
    await kept.events.create(runId, { eventType: 'run_started', specVersion: sv });
    const token = `kept-${runId}`;
    await kept.events.create(runId, {
      eventType: 'hook_created',
      specVersion: sv,
      correlationId: 'hook_kept',
      eventData: { token, metadata: bytes('private'), tokenRetentionUntil: new Date(Date.now() + 3_600_000) },
    });
    expect((await kept.hooks.get('hook_kept')).metadata).toBeDefined();
    await kept.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } });
    const hook = await kept.hooks.get('hook_kept');
    expect(hook.token).toBe(token); // still holding its token
    expect(hook.metadata).toBeUndefined();
  });

  it('a reader past the TTL sees the run as gone before the sweep deletes it', async () => {
    const runId = await finishedRun(kept, { $retention: '0' });
    const ttl = Number((await runItems(runId)).find((i) => i.SK.S === 'RUN#meta')!.ttl.N);
    vi.useFakeTimers({ toFake: ['Date'], now: ttl * 1000 + 1 });
    try {
      await rejectsWith(kept.runs.get(runId), 'WorkflowRunNotFoundError');
    } finally {
      vi.useRealTimers();
    }
    expect((await kept.runs.get(runId)).runId).toBe(runId);
  });

  it('EVE_WORLD_AWS_RETENTION_DAYS=7: every item expires 7 days after the terminal event; objects tagged; still readable until then', async () => {
    const before = Math.floor(Date.now() / 1000);
    const runId = await finishedRun(days);
    const items = await runItems(runId);
    for (const it of items) {
      expect(Number(it.ttl?.N) - before).toBeGreaterThanOrEqual(7 * 86_400);
      expect(Number(it.ttl?.N) - before).toBeLessThan(7 * 86_400 + 120);
    }
    const run = await days.runs.get(runId);
    expect(run.status).toBe('completed');
    expect(run.expiredAt?.getTime()).toBe(Number(items.find((i) => i.SK.S === 'RUN#meta')!.ttl.N) * 1000);
    const objs = await objects(runId);
    expect(objs).toHaveLength(1);
    expect(objs[0].tags).toEqual([{ Key: 'eve-world-aws-expired', Value: 'true' }]);
  });

  it("without either (or with $retention 'default'), nothing expires", async () => {
    for (const attrs of [undefined, { $retention: 'default' }]) {
      const runId = await finishedRun(kept, attrs);
      const items = await runItems(runId);
      expect(items.filter((i) => i.ttl !== undefined)).toEqual([]);
      expect((await kept.runs.get(runId)).expiredAt).toBeUndefined();
      // Kept: the object is still there (untagged objects are not read for tags: the emulator's
      // empty tag-set answer does not parse).
      expect(await objects(runId, false)).toHaveLength(1);
    }
  });

  it("$retention '0' with the World's days: payloads purged at once, entities kept for the days", async () => {
    const before = Math.floor(Date.now() / 1000);
    const runId = await finishedRun(days, { $retention: '0' });
    const run = await days.runs.get(runId);
    expect(run.output).toBeUndefined();
    expect(run.expiredAt!.getTime()).toBeLessThanOrEqual(Date.now());
    for (const it of await runItems(runId)) expect(Number(it.ttl?.N) - before).toBeGreaterThanOrEqual(7 * 86_400);
    expect(await objects(runId)).toEqual([]);
  });
});
