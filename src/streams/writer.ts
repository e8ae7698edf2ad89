/**
 * Appending blocks: one conditional PutItem per group of chunks (split only past BLOCK_BYTES /
 * BLOCK_CHUNKS), and one for the EOF. No counter, no reservation, no meta row.
 *
 * Where a block goes: at the end of this writer's last block of the stream (remembered per stream,
 * so a writer that owns a stream pays one request per group), or at 0 for a stream this instance
 * has not seen. `attribute_not_exists(PK)` makes the put exclusive. On a condition failure the old
 * item comes back (ALL_OLD):
 *   - it carries our own token: an SDK retry of a put whose response was lost; the block is ours;
 *   - it is the EOF: the stream is closed; the chunks are dropped, as readers never see data past
 *     EOF (the reference Worlds do the same);
 *   - otherwise another writer got there first: read the tail (one Query) and put there.
 * So a retried put never writes a block twice and never leaves a gap (see block-items.ts, density).
 */
import { randomUUID } from 'node:crypto';
import { type AttributeValue, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expression, when } from '../aws/expression.js';
import { conditionFailureItem, isConditionalCheckFailed } from '../aws/sdk-errors.js';
import type { WorldContext } from '../context/world-context.js';
import { ATTR, keys } from '../schema/keys.js';
import { countMetric } from '../telemetry/metrics.js';
import { withStreamFlushSpan } from '../telemetry/spans.js';
import {
  BLOCK_BYTES,
  BLOCK_CHUNKS,
  type Block,
  blockEnd,
  encodeChunk,
  type StoredChunk,
  toBlock,
} from './block-items.js';
import { busKey, type CommittedBlock, publish } from './bus.js';
import type { StreamQueries } from './queries.js';

/** Streams whose tail this writer remembers (oldest forgotten first). */
const MAX_REMEMBERED_TAILS = 10_000;

export class BlockWriter {
  private readonly instance = randomUUID();
  private puts = 0;
  /** Key of the next block, per stream, as this writer last saw it (a hint; the put checks it). */
  private readonly tails = new Map<string, number>();

  constructor(
    private readonly ctx: WorldContext,
    private readonly queries: StreamQueries,
    private readonly useBus: boolean,
  ) {}

  /**
   * Append `chunks` (already in call order). `nextAt`: when the writer expects its next block
   * (wall-clock ms), stored on the last block as a hint for pollers in other processes.
   */
  async append(runId: string, name: string, chunks: Uint8Array[], nextAt?: number): Promise<void> {
    if (chunks.length === 0) return;
    const token = this.nextToken();
    const stored = await Promise.all(chunks.map((c, i) => this.store(runId, name, token, i, c)));
    // Split into items under the size caps; a single chunk always fits (payload threshold <=
    // BLOCK_BYTES).
    const parts: [number, number][] = [];
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < stored.length; i++) {
      const size = sizeOf(stored[i]);
      if (i > start && (bytes + size > BLOCK_BYTES || i - start >= BLOCK_CHUNKS)) {
        parts.push([start, i]);
        start = i;
        bytes = 0;
      }
      bytes += size;
    }
    parts.push([start, stored.length]);
    for (const [a, b] of parts) {
      const part = parts.length === 1 ? token : `${token}.${a}`;
      const hint = b === stored.length ? nextAt : undefined;
      if (await this.put(runId, name, part, stored.slice(a, b), chunks.slice(a, b), hint)) return; // closed
    }
  }

  /** Write the EOF block. Idempotent: closing a closed stream is a no-op. */
  async close(runId: string, name: string): Promise<void> {
    await this.put(runId, name, this.nextToken(), undefined, []);
    this.tails.delete(tailKey(runId, name));
  }

  private nextToken(): string {
    return `${this.instance}.${++this.puts}`;
  }

  /** Inline, or offloaded to S3 under a key fixed by the put token, so a retry overwrites it. */
  private async store(runId: string, name: string, token: string, i: number, bytes: Uint8Array): Promise<StoredChunk> {
    if (bytes.byteLength === 0) return { empty: true };
    if (bytes.byteLength <= this.ctx.config.payloadThresholdBytes) return { d: bytes };
    const key = `runs/${runId}/streams/${encodeURIComponent(name)}/${token}.${i}`;
    const ptr = await this.ctx.payloads.putBlob(key, bytes);
    return { s3: ptr.__s3 };
  }

  /**
   * Put one block (`stored` undefined = the EOF). Returns true when the stream turned out to be
   * closed already (nothing written).
   */
  private put(
    runId: string,
    name: string,
    token: string,
    stored: StoredChunk[] | undefined,
    bytes: Uint8Array[],
    nextAt?: number,
  ): Promise<boolean> {
    const size = bytes.reduce((n, b) => n + b.byteLength, 0);
    return withStreamFlushSpan({ chunks: bytes.length, bytes: size }, async (span) => {
      const closed = await this.putBlock(runId, name, token, stored, bytes, nextAt);
      span.setAttributes({ 'eve_world_aws.stream.closed': closed, 'eve_world_aws.stream.eof': !stored });
      if (!closed && stored) {
        countMetric('StreamChunks', bytes.length);
        countMetric('StreamBytes', size);
      }
      return closed;
    });
  }

  private async putBlock(
    runId: string,
    name: string,
    token: string,
    stored: StoredChunk[] | undefined,
    bytes: Uint8Array[],
    nextAt?: number,
  ): Promise<boolean> {
    const tk = tailKey(runId, name);
    let at = this.tails.get(tk) ?? 0;
    for (;;) {
      const item: Record<string, AttributeValue> = {
        [ATTR.pk]: { S: keys.stream(runId, name) },
        [ATTR.sk]: { S: keys.chunkSk(at) },
        w: { S: token },
        ...(stored ? { c: { L: stored.map(encodeChunk) } } : { eof: { BOOL: true } }),
        ...(stored && nextAt !== undefined ? { nx: { N: String(Math.round(nextAt)) } } : {}),
        ...(at === 0 ? { [ATTR.gsi1pk]: { S: keys.runStreamsGsi(runId) }, [ATTR.gsi1sk]: { S: name } } : {}),
      };
      let existing: Block | undefined;
      try {
        const put = expression().when(when.absent).toPutItem(this.ctx.config.tableName, item, { returnOld: true });
        await this.ctx.clients.ddb.send(new PutItemCommand(put));
      } catch (err) {
        if (!isConditionalCheckFailed(err)) {
          this.tails.delete(tk); // unknown whether it landed; the next put finds out
          throw err;
        }
        const item = conditionFailureItem(err);
        existing = item ? toBlock(item) : undefined;
        if (existing?.token !== token) {
          if (existing?.eof) return this.closedAt(tk);
          // Another writer took this key: continue after the real tail.
          const last = await this.queries.lastBlock(runId, name);
          if (last?.eof) return this.closedAt(tk);
          at = last ? blockEnd(last) : 0;
          continue;
        }
        // Our own put, applied by an earlier attempt whose response was lost.
      }
      const count = stored?.length ?? 0;
      if (stored) this.remember(tk, at + count);
      if (this.useBus) {
        const block: CommittedBlock = { first: at, chunks: stored ? bytes.map((b) => b.slice()) : [], eof: !stored };
        publish(busKey(this.ctx.config.tableName, runId, name), block);
      }
      return false;
    }
  }

  private closedAt(tk: string): true {
    this.tails.delete(tk);
    return true;
  }

  private remember(tk: string, next: number): void {
    this.tails.delete(tk);
    this.tails.set(tk, next);
    if (this.tails.size > MAX_REMEMBERED_TAILS) this.tails.delete(this.tails.keys().next().value as string);
  }
}

const tailKey = (runId: string, name: string) => `${runId}\0${name}`;

function sizeOf(c: StoredChunk): number {
  if ('d' in c) return c.d.byteLength + 3;
  if ('s3' in c) return c.s3.length + 3;
  return 2;
}
