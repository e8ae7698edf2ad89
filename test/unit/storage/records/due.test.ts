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
import { spelled } from '../../../helpers/expression-text.js';

const ctx = { table: 't1' } as StorageCtx;

describe('dueOnHookReceived', () => {
  it('is the upsert of the DUE item: checked at dueAt, quiet since slot, backoff reset', () => {
    const runId = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
    const item = dueOnHookReceived(ctx, runId, 1_765_000_000_000, 7);
    const idx = dueIndexAttrs(runId, 1_765_000_000_000);
    expect(idx[ATTR.gsi1pk]).toEqual({ S: keys.dueGsi(shardOf(runId)) });
    expect(item.Update?.TableName).toBe('t1');
    expect(item.Update?.Key).toEqual({ PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } });
    expect(item.Update?.ConditionExpression).toBeUndefined(); // the transaction's run guard is its condition
    expect(spelled(item.Update)).toEqual({
      UpdateExpression:
        `SET ${FORMAT_ATTR} = ${RECORD_FORMAT}, ${ATTR.gsi1pk} = "${idx[ATTR.gsi1pk].S}", ` +
        `${ATTR.gsi1sk} = "${idx[ATTR.gsi1sk].S}", runId = "${runId}", dueAt = 1765000000000, wakes = 0, seenSlot = 7`,
    });
  });

  it('writes what parseDue reads back', () => {
    const runId = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
    const u = dueOnHookReceived(ctx, runId, 42_000, 3).Update;
    const names = u?.ExpressionAttributeNames ?? {};
    const values = u?.ExpressionAttributeValues ?? {};
    // Each `SET name = value` as the item's attribute.
    const sets = (u?.UpdateExpression ?? '').replace(/^SET /, '').split(', ');
    const item = {
      ...u?.Key,
      ...Object.fromEntries(sets.map((a) => a.split(' = ')).map(([n, v]) => [names[n], values[v]])),
    };
    expect(parseDue(item)).toMatchObject({ runId, dueAt: 42_000, wakes: 0, seenSlot: 3 });
  });
});
