/**
 * Streams (Strategy A): chunk items in DynamoDB, live reads by polling, an in-process fast path.
 *
 * Layout (see ddb.ts): chunks are `STREAM#<runId>#<name> / CHUNK#<index:20>`; the meta row
 * `STREAM#<runId>#<name> / STREAM#meta` holds
 *   tail  – indices reserved so far (the atomic counter; chunk indices are [0, tail))
 *   done  – set by close(); eof = the value of `tail` at that moment (EOF position)
 *   at    – wall-clock ms of the latest reservation (used to seal abandoned reservations)
 *   GSI1PK/GSI1SK = RUNSTREAMS#<runId> / <name>, so list(runId) is one GSI query.
 *
 * Invariants and why they hold:
 * - Indices are dense and unique: a write reserves a contiguous block with one atomic
 *   `ADD tail :n` and only then puts its chunks at those indices.
 * - Call order is index order within one Streamer: writes/closes for a stream go through one
 *   in-process queue (keyed by name synchronously at call time, before `runId` is awaited), and
 *   the queue reserves in queue order. Several Streamers (processes) may write one stream
 *   concurrently; each one's chunks stay in its call order, interleaved between writers.
 * - Every chunk index is < eof: reservations carry `attribute_not_exists(done)` and close()
 *   copies `tail` into `eof` in the same atomic update, so a reservation is either before the
 *   close (and counted) or refused (the write is dropped: post-EOF data is never visible,
 *   as in the reference World).
 * - Readers never skip or reorder: a reader only advances its cursor over a contiguous prefix of
 *   present items. A reserved index whose put has not landed yet (a concurrent writer) is a gap,
 *   and the reader waits at the fast poll interval until it fills.
 *
 * Writer crash between reserve and put (the one way a gap can be permanent): a reader that has
 * watched the same gap for `gapSealMs` (default 30 s) *seals* the index with a conditional put of
 * a `sealed` marker (`attribute_not_exists(PK)`), then treats it as an empty chunk. A writer only
 * starts the fast unconditional BatchWriteItem within `gapSealMs / 3` of starting the reservation
 * and aborts its attempts at `2/3 gapSealMs` (see putBatch); after that (a stalled writer) it
 * falls back to conditional puts, and if a reader sealed the index first the write rejects
 * instead of landing unseen (getChunks would show it while live readers had skipped it). So a chunk is
 * either delivered to every reader or its write() fails: never silently lost. The alternative,
 * putting chunks and counter in one TransactWriteItems, has no gaps at all but costs 2x write
 * units, caps a batch at 99 chunks and serialises concurrent writers on conflicts; the crash
 * window it closes is rare, so the batch path stays the default (design.md, Strategy A).
 */
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type {
  CreateStreamWriteSessionOptions,
  GetChunksOptions,
  StreamChunk,
  StreamChunksResponse,
  Streamer,
  StreamInfoResponse,
  StreamWriteSession,
} from '@workflow/world';
import type { WorldContext } from './context.js';
import { ATTR, GSI1, keys } from './ddb.js';
import {
  BATCH_CONCURRENCY,
  BATCH_SIZE,
  type Body,
  DEFAULT_GAP_SEAL_MS,
  DEFAULT_PAGE,
  decodeCursor,
  encodeCursor,
  forEachLimit,
  isConditionFailure,
  MAX_GROUP_CHUNKS,
  MAX_PAGE,
  META_SK,
  type Meta,
  N,
  names,
  type RawChunk,
  type RunIdArg,
  sleep,
  toBytes,
  toMeta,
  toRawChunk,
} from './streamer/items.js';
import { liveTail, type ScanResult } from './streamer/live.js';
import { signalKey, signals } from './streamer/signals.js';

export { activeStreamReaders, streamSignalListeners } from './streamer/signals.js';

export interface StreamerOptions {
  /**
   * How long a reader waits on a reserved-but-missing chunk before sealing it as abandoned
   * (writer crashed between reserve and put). Writers switch to conditional puts after a third
   * of this. Default 30 000 ms; tests lower it.
   */
  gapSealMs?: number;
  /**
   * Fire and listen to the in-process signal (default true). With false this instance behaves
   * like a World in another process: its readers rely on polling alone and its writes wake no
   * local reader. Tests and the benchmark use it to exercise the polling path.
   */
  inProcessSignal?: boolean;
}

/** Thrown when a stalled write finds its reserved index sealed by a reader: it did not land. */
export class StreamWriteAbandonedError extends Error {
  override name = 'StreamWriteAbandonedError';
}

// ---------------------------------------------------------------------------------------------

interface Job {
  kind: 'data' | 'close';
  runId: RunIdArg;
  chunks: Uint8Array[];
  resolve(): void;
  reject(err: unknown): void;
}

/** The Streamer plus `close()`, which the World's own close() calls. */
export interface AwsStreamer extends Streamer {
  /**
   * Waits until every queued write/close of this instance has settled, then ends this instance's
   * live readers with an error (not EOF: the stream itself is not done) and releases their
   * timers and listeners. Safe to call twice.
   */
  close(): Promise<void>;
}

/**
 * Build the Streamer for one World. Writers are queued per stream name in this instance; live
 * readers share the module-level in-process signal with every instance on the same table.
 */
export function createStreamer(ctx: WorldContext, options: StreamerOptions = {}): AwsStreamer {
  const { config, clients, payloads } = ctx;
  const ddb = clients.ddb;
  const table = config.tableName;
  const gapSealMs = options.gapSealMs ?? DEFAULT_GAP_SEAL_MS;
  const writerSafeMs = gapSealMs / 3;
  const useSignal = options.inProcessSignal ?? true;
  const notify = (runId: string, name: string) => {
    if (useSignal) signals.emit(signalKey(table, runId, name));
  };

  // ------------------------------------------------------------------ writes

  /** Per-name FIFO of pending writes/closes; present while a drain loop runs. */
  const queues = new Map<string, Job[]>();
  const drains = new Set<Promise<void>>();
  /** Shutdown hooks of this instance's live readers. */
  const readers = new Set<(err: Error) => void>();

  function enqueue(kind: Job['kind'], runId: RunIdArg, name: string, chunks: Uint8Array[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const job: Job = { kind, runId, chunks, resolve, reject };
      const q = queues.get(name);
      if (q) {
        q.push(job);
        return;
      }
      const fresh = [job];
      queues.set(name, fresh);
      const running = drain(name, fresh).finally(() => drains.delete(running));
      drains.add(running);
    });
  }

  /**
   * Runs jobs in call order. Consecutive data jobs of one run are merged into one reservation
   * (group commit): while a group is in flight, later un-awaited writes pile up and go together.
   */
  async function drain(name: string, q: Job[]): Promise<void> {
    while (q.length > 0) {
      const head = q[0];
      let runId: string;
      try {
        runId = await head.runId;
      } catch (err) {
        q.shift();
        head.reject(err);
        continue;
      }
      if (head.kind === 'close') {
        q.shift();
        await closeStream(runId, name).then(head.resolve, head.reject);
        continue;
      }
      const group = [q.shift() as Job];
      let count = head.chunks.length;
      while (q.length > 0 && q[0].kind === 'data' && count + q[0].chunks.length <= MAX_GROUP_CHUNKS) {
        let other: string;
        try {
          other = await q[0].runId;
        } catch {
          break; // rejected in its own turn
        }
        if (other !== runId) break;
        const job = q.shift() as Job;
        group.push(job);
        count += job.chunks.length;
      }
      try {
        await writeChunks(
          runId,
          name,
          group.flatMap((j) => j.chunks),
        );
        for (const j of group) j.resolve();
      } catch (err) {
        for (const j of group) j.reject(err);
      }
    }
    // Synchronous with the emptiness check above: a later enqueue starts a new loop.
    queues.delete(name);
  }

  async function toBody(runId: string, name: string, bytes: Uint8Array): Promise<Body> {
    if (bytes.byteLength === 0) return {};
    if (bytes.byteLength <= config.payloadThresholdBytes) return { d: bytes };
    // Uploaded before the reservation so the reserve->put window stays one round trip.
    const key = `runs/${runId}/streams/${encodeURIComponent(name)}/${randomUUID()}`;
    const ptr = await payloads.putBlob(key, bytes);
    return { s3: ptr.__s3, n: ptr.size };
  }

  /** Reserve `n` indices; returns the first, or undefined when the stream is already closed. */
  async function reserve(runId: string, name: string, n: number): Promise<number | undefined> {
    try {
      const out = await ddb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: marshall(keys.streamMeta(runId, name)),
          UpdateExpression: `ADD ${N.tail} :n SET ${N.at} = :now, ${N.g1pk} = :g1pk, ${N.g1sk} = :g1sk`,
          ConditionExpression: `attribute_not_exists(${N.done})`,
          ExpressionAttributeNames: names(N.tail, N.at, N.g1pk, N.g1sk, N.done),
          ExpressionAttributeValues: marshall({ ':n': n, ':now': Date.now(), ':g1pk': keys.runStreamsGsi(runId), ':g1sk': name }),
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return Number(out.Attributes?.tail?.N) - n;
    } catch (err) {
      if (isConditionFailure(err)) return undefined;
      throw err;
    }
  }

  async function writeChunks(runId: string, name: string, chunks: Uint8Array[]): Promise<void> {
    if (chunks.length === 0) return;
    const bodies = await Promise.all(chunks.map((c) => toBody(runId, name, c)));
    const t0 = performance.now();
    const start = await reserve(runId, name, chunks.length);
    if (start === undefined) return; // closed: post-EOF chunks are dropped, as readers never see them
    const requests: WriteRequest[] = bodies.map((body, i) => ({
      PutRequest: { Item: marshall({ ...keys.chunk(runId, name, start + i), ...body }) },
    }));
    const batches: WriteRequest[][] = [];
    for (let i = 0; i < requests.length; i += BATCH_SIZE) batches.push(requests.slice(i, i + BATCH_SIZE));
    await forEachLimit(batches, BATCH_CONCURRENCY, async (batch) => {
      await putBatch(batch, t0);
      notify(runId, name);
    });
  }

  /**
   * Unconditional BatchWriteItem with retries of unprocessed items, used only inside the writer's
   * safe window: an attempt may start until t0 + writerSafeMs, and an abort stops every attempt
   * (including the SDK's own retries) at t0 + 2 * writerSafeMs. A request already sent lands
   * within milliseconds, far inside the remaining third of gapSealMs before any reader may seal.
   * Past the window, or on that abort, the rest goes through the conditional path.
   */
  async function putBatch(batch: WriteRequest[], t0: number): Promise<void> {
    let pending = batch;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await sleep(Math.min(1000, 25 * 2 ** attempt) * (0.5 + Math.random() / 2));
      const left = t0 + writerSafeMs - performance.now();
      if (left <= 0) return putConditionally(pending);
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), left + writerSafeMs);
      try {
        const out = await ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }), {
          abortSignal: abort.signal,
        });
        pending = out.UnprocessedItems?.[table] ?? [];
      } catch (err) {
        // Aborted: some items may have landed; the conditional path accepts those as ours.
        if (abort.signal.aborted) return putConditionally(pending);
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** Stalled-writer path: each put must not overwrite a reader's seal. */
  async function putConditionally(requests: WriteRequest[]): Promise<void> {
    await forEachLimit(requests, BATCH_CONCURRENCY, async (req) => {
      const item = req.PutRequest?.Item as Record<string, AttributeValue>;
      try {
        await ddb.send(
          new PutItemCommand({
            TableName: table,
            Item: item,
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': ATTR.pk },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
      } catch (err) {
        // Our own earlier attempt may have landed (a retried request): only a seal is fatal.
        if (isConditionFailure(err) && err.Item && !err.Item.sealed) return;
        if (isConditionFailure(err)) {
          throw new StreamWriteAbandonedError(
            `Stream chunk ${item[ATTR.sk].S} of ${item[ATTR.pk].S} was sealed by a reader after the writer stalled ` +
              `for over ${writerSafeMs} ms; the chunk was not written.`,
          );
        }
        throw err;
      }
    });
  }

  async function closeStream(runId: string, name: string): Promise<void> {
    try {
      await ddb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: marshall(keys.streamMeta(runId, name)),
          UpdateExpression: `SET ${N.done} = :t, ${N.eof} = if_not_exists(${N.tail}, :zero), ${N.g1pk} = :g1pk, ${N.g1sk} = :g1sk`,
          ConditionExpression: `attribute_not_exists(${N.done})`,
          ExpressionAttributeNames: names(N.done, N.eof, N.tail, N.g1pk, N.g1sk),
          ExpressionAttributeValues: marshall({ ':t': true, ':zero': 0, ':g1pk': keys.runStreamsGsi(runId), ':g1sk': name }),
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err; // already closed: close is idempotent
    }
    notify(runId, name);
  }

  // ------------------------------------------------------------------ reads

  async function readMeta(runId: string, name: string): Promise<Meta | undefined> {
    const out = await ddb.send(
      new GetItemCommand({ TableName: table, Key: marshall(keys.streamMeta(runId, name)), ConsistentRead: true }),
    );
    return toMeta(out.Item);
  }

  /**
   * One consistent Query from `from`: the contiguous chunks starting there, plus the meta row
   * when the page reaches it. `broken` means a later chunk exists past a missing index (a gap);
   * `truncated` means the 1 MB page ended before the meta row.
   */
  async function scan(
    runId: string,
    name: string,
    from: number,
    opts: { limit?: number; signal?: AbortSignal } = {},
  ): Promise<ScanResult> {
    const bounded = opts.limit !== undefined;
    const out = await ddb.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: bounded ? '#pk = :pk AND #sk BETWEEN :from AND :to' : '#pk = :pk AND #sk >= :from',
        ExpressionAttributeNames: { '#pk': ATTR.pk, '#sk': ATTR.sk },
        ExpressionAttributeValues: {
          ':pk': { S: keys.stream(runId, name) },
          ':from': { S: keys.chunkSk(from) },
          ...(bounded ? { ':to': { S: keys.chunkSk(from + (opts.limit as number)) } } : {}),
        },
        ConsistentRead: true,
      }),
      { abortSignal: opts.signal },
    );
    const chunks: RawChunk[] = [];
    let meta: Meta | undefined;
    let expected = from;
    let contiguous = true;
    for (const item of out.Items ?? []) {
      if (item[ATTR.sk].S === META_SK) {
        meta = toMeta(item);
        continue;
      }
      if (!contiguous) continue;
      const chunk = toRawChunk(item);
      if (chunk.index !== expected) {
        contiguous = false; // stop at the first gap; never skip a reserved index
        continue;
      }
      chunks.push(chunk);
      expected++;
    }
    return { chunks, meta, truncated: out.LastEvaluatedKey !== undefined, broken: !contiguous };
  }

  /** Mark an abandoned reservation; false when the chunk landed meanwhile. */
  async function seal(runId: string, name: string, index: number): Promise<boolean> {
    try {
      await ddb.send(
        new PutItemCommand({
          TableName: table,
          Item: marshall({ ...keys.chunk(runId, name, index), sealed: true, at: Date.now() }),
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': ATTR.pk },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  async function resolveData(chunk: RawChunk, signal?: AbortSignal): Promise<Uint8Array> {
    if (chunk.s3) {
      signal?.throwIfAborted();
      return payloads.getBytes(chunk.s3);
    }
    return chunk.inline ?? new Uint8Array(0);
  }

  // ------------------------------------------------------------------ the Streamer

  const streams: Streamer['streams'] = {
    write(runId: RunIdArg, name: string, chunk: string | Uint8Array): Promise<void> {
      return enqueue('data', runId, name, [toBytes(chunk)]);
    },

    writeMulti(runId: RunIdArg, name: string, chunks: (string | Uint8Array)[]): Promise<void> {
      if (chunks.length === 0) return Promise.resolve();
      return enqueue('data', runId, name, chunks.map(toBytes));
    },

    close(runId: RunIdArg, name: string): Promise<void> {
      return enqueue('close', runId, name, []);
    },

    /**
     * A thin session over the same queue. `chunkSeq` must continue where the last successful
     * write ended; a group that repeats an already-written prefix (a retry) skips that prefix.
     */
    createWriteSession(runId: RunIdArg, name: string, opts: CreateStreamWriteSessionOptions): StreamWriteSession {
      let written = 0;
      return {
        async write(chunkSeq: number, chunks: (string | Uint8Array)[]) {
          if (chunkSeq > written) {
            throw new Error(`Stream writer ${opts.writerId}: chunkSeq ${chunkSeq} skips ahead of ${written}`);
          }
          const fresh = chunks.slice(written - chunkSeq);
          if (fresh.length > 0) await enqueue('data', runId, name, fresh.map(toBytes));
          written = Math.max(written, chunkSeq + chunks.length);
        },
        close: () => enqueue('close', runId, name, []),
        dispose() {},
      };
    },

    async get(runIdArg: RunIdArg, name: string, startIndex = 0): Promise<ReadableStream<Uint8Array>> {
      const runId = await runIdArg;
      if (!Number.isFinite(startIndex)) throw new Error(`startIndex must be a finite number, got ${startIndex}`);
      let start = Math.trunc(startIndex);
      if (start < 0) {
        const meta = await readMeta(runId, name);
        start = Math.max(0, (meta?.reserved ?? 0) + start);
      }
      return liveTail({ config, table, gapSealMs, useSignal, readers, scan, seal, resolveData }, runId, name, start);
    },

    async list(runIdArg: RunIdArg): Promise<string[]> {
      const runId = await runIdArg;
      const names: string[] = [];
      let from: Record<string, AttributeValue> | undefined;
      do {
        const out = await ddb.send(
          new QueryCommand({
            TableName: table,
            IndexName: GSI1,
            KeyConditionExpression: '#g = :g',
            ExpressionAttributeNames: { '#g': ATTR.gsi1pk, '#s': ATTR.gsi1sk },
            ExpressionAttributeValues: { ':g': { S: keys.runStreamsGsi(runId) } },
            ProjectionExpression: '#s',
            ExclusiveStartKey: from,
          }),
        );
        for (const item of out.Items ?? []) names.push(item[ATTR.gsi1sk].S as string);
        from = out.LastEvaluatedKey;
      } while (from);
      return names;
    },

    /**
     * A snapshot page of the contiguous chunks from the cursor. Stops at a gap (a reserved chunk
     * not yet written) so paging never passes a chunk that is about to land; seals the gap when
     * the newest reservation is older than gapSealMs (every writer has given up on its window).
     * `cursor` stays non-null until the page reaches EOF, so a caller can resume a live stream;
     * `done` is true only when this page reached EOF.
     */
    async getChunks(runIdArg: RunIdArg, name: string, opts: GetChunksOptions = {}): Promise<StreamChunksResponse> {
      const runId = await runIdArg;
      const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(opts.limit ?? DEFAULT_PAGE)));
      const start = decodeCursor(opts.cursor);
      for (;;) {
        // Ask for limit + 1 chunks: the extra one only answers hasMore.
        const [page, meta] = await Promise.all([scan(runId, name, start, { limit }), readMeta(runId, name)]);
        const chunks = page.chunks.slice(0, limit);
        const next = start + chunks.length;
        const gapAt = page.broken || (!page.truncated && page.chunks.length <= limit) ? next : undefined;
        if (
          gapAt !== undefined &&
          meta &&
          gapAt < meta.reserved &&
          meta.at !== undefined &&
          Date.now() - meta.at > gapSealMs &&
          (await seal(runId, name, gapAt))
        ) {
          continue;
        }
        const data: StreamChunk[] = [];
        const bytes = await Promise.all(chunks.map((c) => resolveData(c)));
        chunks.forEach((c, i) => {
          if (!c.sealed) data.push({ index: c.index, data: bytes[i] });
        });
        const hasMore = page.chunks.length > limit || (page.truncated && chunks.length > 0);
        const done = !hasMore && meta?.done === true && next >= meta.reserved;
        return { data, cursor: done ? null : encodeCursor(next), hasMore, done };
      }
    },

    async getInfo(runIdArg: RunIdArg, name: string): Promise<StreamInfoResponse> {
      const runId = await runIdArg;
      const meta = await readMeta(runId, name);
      return { tailIndex: (meta?.reserved ?? 0) - 1, done: meta?.done === true };
    },
  };

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    while (drains.size > 0) await Promise.allSettled([...drains]);
    const err = new Error('The World was closed while this stream was being read');
    for (const stop of [...readers]) stop(err);
  }

  return {
    streams,
    close: () => {
      closing ??= close();
      return closing;
    },
  };
}
