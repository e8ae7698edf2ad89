/**
 * The backstop's DUE item writes (src/storage/records/due.ts): `hook_received`'s move is built from
 * the expression builders and is, to the letter, the request it was when written by hand (the
 * billed request and what it sets are load-bearing: an upsert, no condition, no ALL_OLD).
 */
import { describe, expect, it } from 'vitest';
import { FORMAT_ATTR, RECORD_FORMAT } from '../../../../src/schema/formats.js';
import { ATTR, keys, shardOf } from '../../../../src/schema/keys.js';
import { dueIndexAttrs, dueOnHookReceived, parseDue } from '../../../../src/storage/records/due.js';
import type { StorageCtx } from '../../../../src/storage/table/storage-ctx.js';

const ctx = { table: 't1' } as StorageCtx;

describe('dueOnHookReceived', () => {
  it('is the upsert of the DUE item: checked at dueAt, quiet since slot, backoff reset', () => {
    const runId = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
    const item = dueOnHookReceived(ctx, runId, 1_765_000_000_000, 7);
    const idx = dueIndexAttrs(runId, 1_765_000_000_000);
    expect(idx[ATTR.gsi1pk]).toEqual({ S: keys.dueGsi(shardOf(runId)) });
    expect(item).toEqual({
      Update: {
        TableName: 't1',
        Key: { PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } },
        UpdateExpression: 'SET #fv = :fv, #pk1 = :pk1, #sk1 = :sk1, runId = :r, dueAt = :d, wakes = :z, seenSlot = :s',
        ExpressionAttributeNames: { '#fv': FORMAT_ATTR, '#pk1': ATTR.gsi1pk, '#sk1': ATTR.gsi1sk },
        ExpressionAttributeValues: {
          ':fv': { N: String(RECORD_FORMAT) },
          ':pk1': idx[ATTR.gsi1pk],
          ':sk1': idx[ATTR.gsi1sk],
          ':r': { S: runId },
          ':d': { N: '1765000000000' },
          ':z': { N: '0' },
          ':s': { N: '7' },
        },
      },
    });
  });

  it('writes what parseDue reads back', () => {
    const runId = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
    const u = dueOnHookReceived(ctx, runId, 42_000, 3).Update;
    const values = u?.ExpressionAttributeValues ?? {};
    const item = {
      ...u?.Key,
      [FORMAT_ATTR]: values[':fv'],
      runId: values[':r'],
      dueAt: values[':d'],
      wakes: values[':z'],
      seenSlot: values[':s'],
    };
    expect(parseDue(item)).toMatchObject({ runId, dueAt: 42_000, wakes: 0, seenSlot: 3 });
  });
});
