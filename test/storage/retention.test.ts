/**
 * Retention (#13): a terminal run with `$retention: '0'` (eve's private sessions) or a World-wide
 * EVE_WORLD_AWS_RETENTION_DAYS gets a TTL on every item it owns; its S3 objects are deleted (0)
 * or tagged for the lifecycle rule (N days); `runs.get` on an expired run is
 * WorkflowRunNotFoundError. Without either, nothing expires.
 */

import { randomBytes } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { Storage } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStorage } from '../../src/storage/index.js';
import { bytes, rejectsWith, runCreatedReq, type StorageFixture, storageFixture, sv } from './helpers.js';

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
  it("$retention '0': every item expires at the terminal event, objects are deleted, runs.get is not-found", async () => {
    const before = Math.floor(Date.now() / 1000);
    const runId = await finishedRun(kept, { $retention: '0' });
    const after = Math.floor(Date.now() / 1000);
    const items = await runItems(runId);
    expect(items.length).toBeGreaterThan(5); // log, step, run view (DynamoDB's sweep has not run yet)
    for (const it of items) {
      expect(Number(it.ttl?.N)).toBeGreaterThanOrEqual(before);
      expect(Number(it.ttl?.N)).toBeLessThanOrEqual(after);
    }
    expect(await objects(runId)).toEqual([]);
    await rejectsWith(kept.runs.get(runId), 'WorkflowRunNotFoundError');
    expect(await kept.runs.getMany!([runId])).toEqual([null]);
    const listed = await kept.runs.list({ pagination: { limit: 1000 }, resolveData: 'none' });
    expect(listed.data.map((r) => r.runId)).not.toContain(runId);
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

  it("a run's $retention '0' wins over the World's days", async () => {
    const runId = await finishedRun(days, { $retention: '0' });
    await rejectsWith(days.runs.get(runId), 'WorkflowRunNotFoundError');
    expect(await objects(runId)).toEqual([]);
  });
});
