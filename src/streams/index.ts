/**
 * Streams (Strategy A): block items in DynamoDB, live reads by polling, an in-process fast path.
 * Composes the parts: the call-order queue (write-queue.ts), the block writer (writer.ts), the
 * reads (queries.ts, live.ts) and the in-process bus (bus.ts). Item format: block-items.ts.
 *
 * Cost at token rate: ONE PutItem per group of chunks core sends, at most one group per
 * `streamBurstMs` in a burst (pacing.ts); no request for a reader in the writer's process (bus.ts),
 * one Query per poll for a reader elsewhere (live.ts).
 */
import { WorkflowWorldError } from '@workflow/errors';
import type {
  CreateStreamWriteSessionOptions,
  GetChunksOptions,
  StreamChunk,
  StreamChunksResponse,
  Streamer,
  StreamInfoResponse,
  StreamWriteSession,
} from '@workflow/world';
import type { WorldContext } from '../context/world-context.js';
import type { Logger } from '../telemetry/log.js';
import {
  type Block,
  blockEnd,
  DEFAULT_PAGE,
  decodeCursor,
  encodeCursor,
  MAX_PAGE,
  type RunIdArg,
  type StoredChunk,
  toBytes,
} from './block-items.js';
import { type LiveTailDeps, liveTail } from './live.js';
import { BurstPacer } from './pacing.js';
import { StreamQueries } from './queries.js';
import { WriteQueue } from './write-queue.js';
import { BlockWriter } from './writer.js';

export { activeStreamReaders, streamSignalListeners } from './bus.js';

export interface StreamerOptions {
  /**
   * Publish committed blocks to, and take them from, the in-process bus (default true). With
   * false this instance behaves like a World in another process: its readers rely on polling
   * alone and its writes feed no local reader. Tests and the benchmark use it.
   */
  inProcessSignal?: boolean;
  /** The run's end, from storage's runs.get (the composer passes it): what live.ts's `LiveTailDeps.runEnd` says. */
  runEnd?: LiveTailDeps['runEnd'];
  /** Where a reader says why it closed a stream its writer left open. */
  logger?: Logger;
}

/** The Streamer plus `close()`, which the World's own close() calls. */
export interface AwsStreamer extends Streamer {
  /**
   * Waits until every queued write/close of this instance has settled, then ends this instance's
   * live readers with an error (not EOF: the stream itself is not done) and releases their timers
   * and listeners. Safe to call twice.
   */
  close(): Promise<void>;
}

/** Data chunks in a stream whose last block is `last`. */
const countOf = (last: Block | undefined) => (last ? (last.eof ? last.first : blockEnd(last)) : 0);

export function createStreamer(ctx: WorldContext, options: StreamerOptions = {}): AwsStreamer {
  const { config, clients, payloads } = ctx;
  const table = config.tableName;
  const useBus = options.inProcessSignal ?? true;
  const queries = new StreamQueries(clients.ddb, table);
  const writer = new BlockWriter(ctx, queries, useBus);
  const queue = new WriteQueue((kind, runId, name, chunks, nextAt) =>
    kind === 'close' ? writer.close(runId, name) : writer.append(runId, name, chunks, nextAt),
  );
  /** Shutdown hooks of this instance's live readers. */
  const readers = new Set<(err: Error) => void>();

  const fetchS3 = (key: string, signal?: AbortSignal) => {
    signal?.throwIfAborted();
    return payloads.getBytes(key);
  };
  const bytesOf = (c: StoredChunk): Promise<Uint8Array> | Uint8Array =>
    'd' in c ? c.d : 's3' in c ? fetchS3(c.s3) : new Uint8Array(0);

  const streams: Streamer['streams'] = {
    write(runId: RunIdArg, name: string, chunk: string | Uint8Array): Promise<void> {
      return queue.enqueue('data', runId, name, [toBytes(chunk)]);
    },

    writeMulti(runId: RunIdArg, name: string, chunks: (string | Uint8Array)[]): Promise<void> {
      if (chunks.length === 0) return Promise.resolve();
      return queue.enqueue('data', runId, name, chunks.map(toBytes));
    },

    close(runId: RunIdArg, name: string): Promise<void> {
      return queue.enqueue('close', runId, name, []);
    },

    /**
     * A thin session over the same queue. `chunkSeq` must continue where the last successful
     * write ended; a group that repeats an already-written prefix (a retry) skips that prefix.
     */
    createWriteSession(runId: RunIdArg, name: string, opts: CreateStreamWriteSessionOptions): StreamWriteSession {
      let written = 0;
      // Core's writer (the only user of sessions) sends one group at a time; pacing its
      // acknowledgements in a burst makes the next group carry the window's chunks (pacing.ts).
      const pacer = new BurstPacer(config.streamBurstMs);
      /** How long this session's last write took (ms): the next block commits about that long after its send. */
      let putMs = 0;
      return {
        async write(chunkSeq: number, chunks: (string | Uint8Array)[]) {
          if (chunkSeq > written) {
            throw new WorkflowWorldError(
              `Stream writer ${opts.writerId}: chunkSeq ${chunkSeq} skips ahead of ${written}`,
              { status: 400 },
            );
          }
          const fresh = chunks.slice(written - chunkSeq);
          if (fresh.length === 0) return;
          const arrived = performance.now();
          const releaseAt = pacer.arrive(arrived);
          // Mid-burst, core sends its next group when this write is acknowledged: the block
          // carries when that group should be committed, so pollers elsewhere query right then.
          const nextAt = releaseAt > arrived ? Date.now() + (releaseAt - arrived) + putMs : undefined;
          await queue.enqueue('data', runId, name, fresh.map(toBytes), nextAt);
          putMs = performance.now() - arrived;
          written = Math.max(written, chunkSeq + chunks.length);
          // Durable (and published to this process's readers) by now; only the ack waits.
          const wait = releaseAt - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        },
        close: () => queue.enqueue('close', runId, name, []),
        dispose() {},
      };
    },

    async get(runIdArg: RunIdArg, name: string, startIndex = 0): Promise<ReadableStream<Uint8Array>> {
      const runId = await runIdArg;
      if (typeof startIndex !== 'number' || !Number.isFinite(startIndex)) {
        throw new WorkflowWorldError(
          `startIndex must be a finite number (a chunk index, or negative to count back from the end), got ${String(startIndex)}`,
          { status: 400, code: 'INVALID_ARGUMENT', field: 'startIndex' },
        );
      }
      let i = Math.trunc(startIndex);
      if (i < 0) i = Math.max(0, countOf(await queries.lastBlock(runId, name)) + i);
      // From 0 the first block is at key 0; otherwise find the block holding `i` (or the tail).
      const first = i > 0 ? await queries.lastBlock(runId, name, i) : undefined;
      const ends = options.runEnd ? { runEnd: options.runEnd, seal: streams.close, logger: options.logger } : {};
      return liveTail({ config, table, useBus, queries, readers, fetchS3, ...ends }, runId, name, {
        i,
        k: first?.first ?? 0,
        first,
      });
    },

    async list(runIdArg: RunIdArg): Promise<string[]> {
      return queries.names(await runIdArg);
    },

    /**
     * A snapshot page of data chunks from the cursor (EOF excluded). `cursor` stays non-null
     * until the page reaches EOF, so a caller can resume a live stream; `done` is true only when
     * this page reached EOF. A malformed cursor is a 400 WorkflowWorldError, as for events.
     */
    async getChunks(runIdArg: RunIdArg, name: string, opts: GetChunksOptions = {}): Promise<StreamChunksResponse> {
      const runId = await runIdArg;
      const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(opts.limit ?? DEFAULT_PAGE)));
      let { i, k } = decodeCursor(opts.cursor);
      // limit + 1 items hold >= limit + 1 chunks from the cursor, or the end: enough for hasMore.
      const page = await queries.blocksFrom(runId, name, k, { limit: limit + 1 });
      const picked: { index: number; chunk: StoredChunk }[] = [];
      let done = false;
      let more = false;
      outer: for (const b of page.blocks) {
        if (b.first !== k) break;
        if (b.eof) {
          done = true;
          break;
        }
        for (let j = Math.max(0, i - b.first); j < b.chunks.length; j++) {
          if (picked.length === limit) {
            more = true;
            i = b.first + j;
            break outer;
          }
          picked.push({ index: b.first + j, chunk: b.chunks[j] });
        }
        k = blockEnd(b);
        i = Math.max(i, k);
      }
      const hasMore = more || (page.truncated && !done);
      const bytes = await Promise.all(picked.map((p) => bytesOf(p.chunk)));
      const data: StreamChunk[] = picked.map((p, n) => ({ index: p.index, data: bytes[n] }));
      return { data, cursor: done && !more ? null : encodeCursor({ i, k }), hasMore, done: done && !more };
    },

    /** `tailIndex` counts data chunks only (the EOF is not a chunk): -1 for none. */
    async getInfo(runIdArg: RunIdArg, name: string): Promise<StreamInfoResponse> {
      const last = await queries.lastBlock(await runIdArg, name);
      return { tailIndex: countOf(last) - 1, done: last?.eof === true };
    },
  };

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    await queue.settle();
    const err = new Error('The World was closed while this stream was being read');
    for (const stop of [...readers]) stop(err);
  }

  return {
    /**
     * Core holds a stream's leading chunk (after quiet) this long to send it with the chunks that
     * follow, in one group (one PutItem); default 0, send at once: grouping during a burst comes
     * from pacing the session's acknowledgements instead (pacing.ts), which does not delay a
     * lone chunk. `WORKFLOW_STREAM_FLUSH_INTERVAL_MS` overrides it (core reads it).
     */
    streamFlushIntervalMs: config.streamFlushMs,
    streams,
    close: () => {
      closing ??= close();
      return closing;
    },
  };
}
