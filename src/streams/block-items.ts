/**
 * The stream item format and its codecs (keys themselves live in src/schema/keys.ts).
 *
 * A stream is a dense run of BLOCK items under `STREAM#<runId>#<name>`; a block holds several chunks and is keyed by
 * the index of its first chunk:
 *
 *   SK = CHUNK#<first:20>   c   (L)    the chunks, in order: B = inline bytes, S = S3 key, NULL = empty
 *                           w   (S)    the token of the put that wrote it (recognises our own retry)
 *                           eof (BOOL) the EOF block: no chunks; `first` is the number of data chunks
 *                           nx  (N)    optional: wall-clock ms at which the writer, mid-burst, expects
 *                                      its next block to be committed; pollers elsewhere time their
 *                                      next Query by it (a hint: it never changes what is read)
 *                           GSI1PK/GSI1SK on the block at 0 only, so list(runId) is one GSI query
 *
 * Invariant (density): blocks tile [0, tail) with no gap and no overlap. A writer only puts a block at the END of a
 * block it has seen (its own last block, or the last one a Query returned), with `attribute_not_exists(PK)`. If that
 * end is the tail, the put extends the tiling; if not, a block already starts there and the put fails, so the writer
 * re-reads the tail and tries again. Nothing is reserved ahead, so nothing can be abandoned: a dead writer leaves no
 * gap. Every chunk index below an EOF block's key is data; nothing is ever stored past EOF.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { WorkflowWorldError } from '@workflow/errors';
import { ATTR, keys } from '../schema/keys.js';

export type RunIdArg = string | PromiseLike<string>;

/** Inline bytes per block item (DynamoDB caps an item at 400 KB; one inline chunk is at most 350 KB). */
export const BLOCK_BYTES = 350_000;
/** Chunks per block item (bounds the work a reader does per item). */
export const BLOCK_CHUNKS = 1000;
/** Queued writes merged into one group by the Streamer's own queue (a writeMulti may exceed it). */
export const MAX_GROUP_CHUNKS = 1000;
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
/** The last possible chunk sort key, for range queries that must not reach `STREAM#meta`. */
export const LAST_CHUNK_SK = keys.chunkSk(99_999_999_999_999);

/** One chunk as stored: inline bytes, an S3 key, or empty. */
export type StoredChunk = { d: Uint8Array } | { s3: string } | { empty: true };

export interface Block {
  /** Index of the block's first chunk (its sort key). */
  first: number;
  chunks: StoredChunk[];
  eof: boolean;
  token?: string;
  /** The writer's `nx` hint (see above). */
  nextAt?: number;
}

/** Index just past the block's data (the key of the block after it). */
export const blockEnd = (b: Block): number => b.first + b.chunks.length;

export function encodeChunk(c: StoredChunk): AttributeValue {
  if ('d' in c) return { B: c.d };
  if ('s3' in c) return { S: c.s3 };
  return { NULL: true };
}

function decodeChunk(v: AttributeValue): StoredChunk {
  if (v.B) {
    const b = v.B;
    // Decoded bytes may be a view into a shared pool; hand readers a buffer of their own.
    return { d: b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : Uint8Array.from(b) };
  }
  if (v.S) return { s3: v.S };
  return { empty: true };
}

export function toBlock(item: Record<string, AttributeValue>): Block {
  const first = keys.indexFromChunkSk(item[ATTR.sk].S as string);
  const eof = item.eof?.BOOL === true;
  const chunks = eof ? [] : (item.c?.L ?? []).map(decodeChunk);
  const nx = item.nx?.N === undefined ? Number.NaN : Number(item.nx.N);
  return { first, chunks, eof, token: item.w?.S, ...(Number.isFinite(nx) ? { nextAt: nx } : {}) };
}

const encoder = new TextEncoder();
export const toBytes = (chunk: string | Uint8Array): Uint8Array =>
  typeof chunk === 'string' ? encoder.encode(chunk) : chunk;

/** A position in a stream: chunk index `i`, and `k`, the key of the block that holds (or follows) it. */
export interface Position {
  i: number;
  k: number;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify(p)).toString('base64url');
}

/** The same 400 error the event and run cursors throw (storage/table/world-errors.ts `invalidArgument`). */
function badCursor(cursor: string): WorkflowWorldError {
  return new WorkflowWorldError(
    `Invalid stream cursor "${cursor}": pass the cursor returned by the previous streams.getChunks() page of the same stream, or omit it to start at chunk 0.`,
    { status: 400, code: 'INVALID_ARGUMENT', field: 'cursor' },
  );
}

export function decodeCursor(cursor: string | undefined | null): Position {
  if (!cursor) return { i: 0, k: 0 };
  let p: { i?: unknown; k?: unknown };
  try {
    p = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor(cursor);
  }
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!p || !ok(p.i) || !ok(p.k) || p.k > p.i) throw badCursor(cursor);
  return { i: p.i, k: p.k };
}
