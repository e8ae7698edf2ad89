/**
 * The primitive reads of the table: strongly consistent gets (one item, or many by key in input
 * order), and Query paging (all items, or one page of `limit` with `hasMore` decided by seeing one
 * item past the page). Every other read is built from these.
 */
import { BatchGetItemCommand, GetItemCommand, QueryCommand, type QueryCommandInput } from '@aws-sdk/client-dynamodb';
import { type Path, readInput } from '../../aws/expression.js';
import type { Attrs } from './codec.js';
import { keysOf } from './codec.js';
import { backoff } from './contention-backoff.js';
import { decodeKeyCursor, encodeKeyCursor } from './pagination.js';
import type { StorageCtx } from './storage-ctx.js';

export type QueryInput = Omit<QueryCommandInput, 'TableName'>;

/** One item, strongly consistent; `projection` (the attributes to return) leaves the others unread. */
export async function getItem(ctx: StorageCtx, key: { PK: string; SK: string }, projection?: readonly Path[]) {
  const read = { TableName: ctx.table, Key: keysOf(key), ConsistentRead: true };
  const res = await ctx.ddb.send(new GetItemCommand({ ...read, ...(projection ? readInput({ projection }) : {}) }));
  return res.Item as Attrs | undefined;
}

/**
 * The items at `keys`, strongly consistent, in input order (`undefined` where none exists).
 * `projection` (the attributes to return) leaves large attributes unread.
 */
export async function getItems(
  ctx: StorageCtx,
  keys: readonly Attrs[],
  projection?: readonly Path[],
): Promise<(Attrs | undefined)[]> {
  const found = new Map<string, Attrs>();
  const id = (k: Attrs) => `${k.PK.S}\u0000${k.SK.S}`;
  const unique = [...new Map(keys.map((k) => [id(k), { PK: k.PK, SK: k.SK }])).values()];
  for (let i = 0; i < unique.length; i += 100) {
    let left: Attrs[] = unique.slice(i, i + 100);
    for (let attempt = 0; left.length > 0; attempt++) {
      const res = await ctx.ddb.send(
        new BatchGetItemCommand({
          RequestItems: {
            [ctx.table]: {
              Keys: left,
              ConsistentRead: true,
              ...(projection ? readInput({ projection }) : {}),
            },
          },
        }),
      );
      for (const it of (res.Responses?.[ctx.table] ?? []) as Attrs[]) found.set(id(it), it);
      left = (res.UnprocessedKeys?.[ctx.table]?.Keys ?? []) as Attrs[];
      if (left.length > 0) await backoff(attempt);
    }
  }
  return keys.map((k) => found.get(id(k)));
}

/** The items of one Query request (no paging). */
export async function queryOnce(ctx: StorageCtx, input: QueryInput): Promise<Attrs[]> {
  return ((await ctx.ddb.send(new QueryCommand({ TableName: ctx.table, ...input }))).Items ?? []) as Attrs[];
}

/** All items of one Query, following `LastEvaluatedKey`, up to `max` items. */
export async function queryAll(ctx: StorageCtx, input: QueryInput, max = Number.POSITIVE_INFINITY): Promise<Attrs[]> {
  const out: Attrs[] = [];
  let start: Record<string, any> | undefined;
  do {
    const res = await ctx.ddb.send(new QueryCommand({ TableName: ctx.table, ...input, ExclusiveStartKey: start }));
    out.push(...((res.Items ?? []) as Attrs[]));
    start = res.LastEvaluatedKey;
  } while (start && out.length < max);
  return out.slice(0, max);
}

/** Up to `limit + 1` items (the extra one only tells `hasMore`). */
export async function queryPage(ctx: StorageCtx, input: QueryInput, limit: number): Promise<Attrs[]> {
  const out: Attrs[] = [];
  let start: Attrs | undefined;
  do {
    const res = await ctx.ddb.send(
      new QueryCommand({ TableName: ctx.table, ...input, Limit: limit + 1 - out.length, ExclusiveStartKey: start }),
    );
    out.push(...((res.Items ?? []) as Attrs[]));
    start = res.LastEvaluatedKey as Attrs | undefined;
  } while (start && out.length <= limit);
  return out;
}

/**
 * One page of `limit` matching items from a (possibly filtered) Query: pages DynamoDB until one
 * item past the page is seen (that is `hasMore`), and cursors at the last returned item's key.
 */
export async function keyedPage(
  ctx: StorageCtx,
  input: QueryInput,
  limit: number,
  cursor: string | undefined,
  keyNames: string[],
): Promise<{ items: Attrs[]; cursor: string | null; hasMore: boolean }> {
  const items: Attrs[] = [];
  let start: Attrs | undefined = cursor ? decodeKeyCursor(cursor, keyNames) : undefined; // '' = from the start
  do {
    const res = await ctx.ddb.send(
      new QueryCommand({
        TableName: ctx.table,
        ...input,
        Limit: Math.max(limit + 1 - items.length, 25),
        ExclusiveStartKey: start,
      }),
    );
    items.push(...((res.Items ?? []) as Attrs[]));
    start = res.LastEvaluatedKey as Attrs | undefined;
  } while (start && items.length <= limit);
  const hasMore = items.length > limit;
  const data = items.slice(0, limit);
  const last = data[data.length - 1];
  const next = hasMore && last ? encodeKeyCursor(Object.fromEntries(keyNames.map((n) => [n, last[n]]))) : null;
  return { items: data, cursor: next, hasMore };
}
