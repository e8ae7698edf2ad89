/**
 * One page of a sharded index listing: the shards' sorted Query pages merged into one order.
 *
 * A list key is spread over `LIST_SHARDS` partition-key values (see `schema/keys.ts`), each sorted
 * by the same sort key. The merge keeps a small buffer per shard and always takes the best head
 * across all shards, refilling a shard (from where its last Query stopped) before comparing
 * whenever its buffer runs dry. Invariants:
 *
 * - **Exact.** Sort keys are unique across shards (they end in the entity id), so the items
 *   returned so far are exactly those on the near side of the last one's sort key. The cursor is
 *   that sort key: every shard's position is "strictly past it", so the next page neither skips nor
 *   repeats an item.
 * - **Stable.** Items created after the first page sort on the near side (newer) in the default
 *   newest-first order, so they never shift later pages.
 * - **Bounded.** Each shard reads only as far as the page needs, plus its one look-ahead Query.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { type Cond, readInput, when } from '../../aws/expression.js';
import { LIST_SHARDS } from '../../schema/keys.js';
import type { Attrs } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { invalidArgument } from '../table/world-errors.js';

export interface ShardedQuery {
  index: string;
  pkName: string;
  skName: string;
  /** The partition-key value of shard `i`. */
  pk: (shard: number) => string;
  /** Optional filter (applied by DynamoDB after the key condition). */
  filter?: Cond;
  ascending: boolean;
}

const CURSOR_PREFIX = 'shk:';

export const encodeShardCursor = (sk: string) => CURSOR_PREFIX + Buffer.from(sk, 'utf8').toString('base64url');

export function decodeShardCursor(cursor: string): string {
  if (!cursor.startsWith(CURSOR_PREFIX)) throw invalidArgument('cursor', 'Invalid pagination cursor');
  const sk = Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8');
  if (sk.length === 0) throw invalidArgument('cursor', 'Invalid pagination cursor');
  return sk;
}

interface Shard {
  buf: Attrs[];
  start?: Attrs;
  done: boolean;
}

export async function shardedPage(
  ctx: StorageCtx,
  q: ShardedQuery,
  limit: number,
  cursor: string | undefined,
): Promise<{ items: Attrs[]; cursor: string | null; hasMore: boolean }> {
  const after = cursor ? decodeShardCursor(cursor) : undefined; // '' = from the start
  const want = limit + 1; // one past the page tells hasMore
  const perQuery = Math.min(want, Math.max(10, Math.ceil((want * 2) / LIST_SHARDS)));
  const shards: Shard[] = Array.from({ length: LIST_SHARDS }, () => ({ buf: [], done: false }));
  const better = (a: string, b: string) => (q.ascending ? a < b : a > b);

  async function refill(i: number, s: Shard): Promise<void> {
    const past = after === undefined ? [] : [(q.ascending ? when.above : when.below)(q.skName, after)];
    const res = await ctx.ddb.send(
      new QueryCommand({
        TableName: ctx.table,
        IndexName: q.index,
        ...readInput({ key: [when.is(q.pkName, q.pk(i)), ...past], filter: q.filter ? [q.filter] : [] }),
        ScanIndexForward: q.ascending,
        Limit: perQuery,
        ExclusiveStartKey: s.start,
      }),
    );
    s.buf.push(...((res.Items ?? []) as Attrs[]));
    s.start = res.LastEvaluatedKey as Attrs | undefined;
    s.done = s.start === undefined;
  }

  const out: Attrs[] = [];
  while (out.length < want) {
    const dry = shards.map((s, i) => [s, i] as const).filter(([s]) => s.buf.length === 0 && !s.done);
    if (dry.length > 0) {
      await Promise.all(dry.map(([s, i]) => refill(i, s)));
      continue; // a filtered Query may come back empty with more to read
    }
    let best: Shard | undefined;
    for (const s of shards) {
      if (s.buf.length > 0 && (!best || better(s.buf[0][q.skName].S!, best.buf[0][q.skName].S!))) best = s;
    }
    if (!best) break;
    out.push(best.buf.shift()!);
  }
  const hasMore = out.length > limit;
  const items = out.slice(0, limit);
  return { items, hasMore, cursor: hasMore ? encodeShardCursor(items[items.length - 1][q.skName].S!) : null };
}
