/**
 * Stream item codecs and small helpers for src/streamer.ts. The key layout itself lives in
 * ddb.ts; this file only knows the non-key attributes of the meta row and chunk items:
 *
 *   STREAM#meta  tail (N, indices reserved), done (BOOL), eof (N, EOF position), at (N, ms)
 *   CHUNK#<i>    d (B, inline bytes; absent when empty) | s3 (S, key) + n (N, size) | sealed (BOOL)
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ATTR, keys } from '../ddb.js';

export type RunIdArg = string | PromiseLike<string>;

export const DEFAULT_GAP_SEAL_MS = 30_000;
/** BatchWriteItem maximum. */
export const BATCH_SIZE = 25;
export const BATCH_CONCURRENCY = 8;
/** Queued writes merged into one reservation (a single writeMulti may exceed it). */
export const MAX_GROUP_CHUNKS = 500;
/** Live readers keep the fast poll interval this many intervals after the last chunk. */
export const HOT_POLLS = 5;
/** S3-offloaded chunks a live reader fetches per pull; the rest wait for the next pull. */
export const MAX_S3_PER_PULL = 8;
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
export const META_SK = 'STREAM#meta';

/** Expression aliases of the meta row's attributes. */
export const N = { tail: '#tail', done: '#done', eof: '#eof', at: '#at', g1pk: '#g1pk', g1sk: '#g1sk' } as const;
const NAME_OF: Record<string, string> = {
  '#tail': 'tail',
  '#done': 'done',
  '#eof': 'eof',
  '#at': 'at',
  '#g1pk': ATTR.gsi1pk,
  '#g1sk': ATTR.gsi1sk,
};
/** ExpressionAttributeNames for the aliases used (DynamoDB rejects unused ones). */
export const names = (...aliases: string[]) => Object.fromEntries(aliases.map((a) => [a, NAME_OF[a]]));

export interface Meta {
  /** Indices reserved so far; after close, the EOF position. Every chunk index is below it. */
  reserved: number;
  done: boolean;
  /** Wall-clock ms of the newest reservation. */
  at?: number;
}

export function toMeta(item: Record<string, AttributeValue> | undefined): Meta | undefined {
  if (!item) return undefined;
  const m = unmarshall(item) as { tail?: number; done?: boolean; eof?: number; at?: number };
  const done = m.done === true;
  return { reserved: done ? (m.eof ?? 0) : (m.tail ?? 0), done, at: m.at };
}

/** A stored chunk: inline bytes, an S3 key, or a sealed (abandoned) index. */
export interface RawChunk {
  index: number;
  inline?: Uint8Array;
  s3?: string;
  sealed?: boolean;
}

export function toRawChunk(item: Record<string, AttributeValue>): RawChunk {
  const index = keys.indexFromChunkSk(item[ATTR.sk].S as string);
  if (item.sealed) return { index, sealed: true };
  if (item.s3?.S) return { index, s3: item.s3.S };
  const b = item.d?.B;
  if (!b) return { index, inline: new Uint8Array(0) };
  // Decoded bytes may be a view into a shared pool; hand readers a buffer of their own.
  return { index, inline: b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : Uint8Array.from(b) };
}

/** Non-key attributes of a chunk item as written. */
export type Body = { d: Uint8Array } | { s3: string; n: number } | Record<string, never>;

const encoder = new TextEncoder();
export const toBytes = (chunk: string | Uint8Array): Uint8Array => (typeof chunk === 'string' ? encoder.encode(chunk) : chunk);

export function encodeCursor(index: number): string {
  return Buffer.from(JSON.stringify({ i: index })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): number {
  if (!cursor) return 0;
  try {
    const { i } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { i?: unknown };
    if (typeof i === 'number' && Number.isSafeInteger(i) && i >= 0) return i;
  } catch {
    // fall through
  }
  throw new Error(`Invalid stream cursor "${cursor}"`);
}

export function isConditionFailure(err: unknown): err is { name: string; Item?: Record<string, AttributeValue> } {
  return (err as { name?: string } | null)?.name === 'ConditionalCheckFailedException';
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Run `fn` over `items` with at most `limit` in flight; rejects on the first failure. */
export async function forEachLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
