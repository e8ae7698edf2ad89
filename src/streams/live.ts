/**
 * The live reader behind `streams.get()`: a pull-based ReadableStream over the block items.
 *
 * Position: `i` is the next chunk index to deliver, `k` the key of the next block to read (the
 * block holding `i`, or the one after the tail). Blocks are dense (block-items.ts), so the next
 * block is exactly the one keyed `k`; applying it delivers its chunks from `i` on and moves `k`
 * past it. Nothing is skipped, repeated or reordered, whichever source the block came from.
 *
 * Sources, cheapest first:
 *  1. the in-process bus (bus.ts): blocks committed by a writer in this process, taken from memory
 *     when one starts exactly at `k` (no request);
 *  2. one consistent Query from `k` (returns every block written since, and the EOF).
 * Pacing of (2) (the argument: docs/design.md, "Live stream reads"): polls are spaced from the
 * START of the previous Query and never closer than `streamPollMs`; after ACTIVE_MS without data
 * the interval grows by BACKOFF per empty poll up to `streamIdlePollMs`; a block's `nextAt` hint
 * (block-items.ts, pacing.ts) moves a poll to just after it, never sooner than `streamPollMs` after
 * the last Query. A hint only moves a poll: what is read, and in which order, is the same. While
 * the bus is feeding the reader, polls wait the idle interval. Polls happen only while the consumer
 * wants data (backpressure).
 *
 * The end of a run ends its streams (`runEnd` given): a stream whose writer never wrote its EOF
 * (the run was cancelled mid-stream, failed, or completed without closing it) would otherwise be
 * polled forever. Only while the reader is idle (no data for ACTIVE_MS) it reads the run, at most
 * once per RUN_CHECK_MS until the run is terminal. Once this reader has known the run terminal for
 * END_GRACE_MS (timed on its own monotonic clock from the read that first showed it terminal, never
 * from the run's end time, which another process's clock wrote) and a Query that started after that
 * found nothing new, no writer is taken to be left: the reader writes the stream's EOF (`seal`, the
 * writer's idempotent close; a late block that lands first is kept, the EOF goes after it by
 * density), logs why, and ends at that EOF like any reader. Sealing, not just closing this reader,
 * is what lets core's `getReadable()` end: core trusts an end only when `getInfo()` says `done`
 * (else it reconnects), and every other reader and `getChunks()` then agree. Chunks a writer sends
 * after the seal are dropped, as for any closed stream.
 *
 * Every exit path (EOF, cancel, error, World close) runs `finish()`, which clears the timer and the
 * bus listener.
 */
import type { WorkflowRunStatus } from '@workflow/world';
import type { WorldConfig } from '../config/index.js';
import type { Logger } from '../telemetry/log.js';
import { mapLimited } from '../util/concurrency.js';
import type { Block, StoredChunk } from './block-items.js';
import { busKey, type CommittedBlock, readerFinished, readerStarted, subscribe } from './bus.js';
import type { StreamQueries } from './queries.js';

/** A polling reader keeps the fast interval this long after the last chunk it polled. */
const ACTIVE_MS = 1000;
/** Growth of the poll interval per empty poll once ACTIVE_MS passed without data. */
const BACKOFF = 1.25;
/** A writer's `nextAt` hint moves the next poll at most this many fast intervals after the last. */
const HINT_MAX_INTERVALS = 4;
/** Margin after a hinted commit time before querying (ms): adapts between these bounds. */
const SETTLE_MIN_MS = 2;
const SETTLE_START_MS = 5;
/** Bus blocks a reader buffers while its consumer is slow; past it, it forgets them and queries. */
const MAX_BUFFERED_BLOCKS = 1000;
/** S3 fetches in flight per reader. */
const S3_CONCURRENCY = 8;
/** An idle reader reads its run's status at most this often until the run is terminal. */
const RUN_CHECK_MS = 5000;
/**
 * How long after a reader saw its run ended a stream with no new data is taken to have no writer
 * left (the reader sees the end at or after it happened, so a write up to this long after the end
 * is never lost, whatever the clocks).
 */
export const END_GRACE_MS = 5000;

export interface LiveTailDeps {
  config: WorldConfig;
  table: string;
  useBus: boolean;
  queries: StreamQueries;
  /** Shutdown hooks of the owning Streamer's readers (its close() calls them). */
  readers: Set<(err: Error) => void>;
  fetchS3(key: string, signal: AbortSignal): Promise<Uint8Array>;
  /**
   * The run's end, undefined while it is not terminal (or not found). Absent: a reader ends only
   * at an EOF some writer wrote.
   */
  runEnd?(runId: string): Promise<{ status: WorkflowRunStatus } | undefined>;
  /** Write the stream's EOF (idempotent). Needed with `runEnd`. */
  seal?(runId: string, name: string): Promise<void>;
  logger?: Logger;
}

export function liveTail(
  deps: LiveTailDeps,
  runId: string,
  name: string,
  start: { i: number; k: number; first?: Block },
): ReadableStream<Uint8Array> {
  const { config, useBus, readers, queries } = deps;
  const abort = new AbortController();
  const fast = config.streamPollMs;
  let i = start.i;
  let k = start.k;
  let eof = false;
  let interval = fast;
  /** When the next Query may start (performance.now()); earlier when more data is known to be there. */
  let nextQueryAt = 0;
  /** Margin after a writer's hinted commit time; grows when a hinted poll came too early. */
  let settle = SETTLE_START_MS;
  /** The next Query was timed by a writer's hint (to adapt `settle` by its outcome). */
  let hinted = false;
  // Not active until a poll finds data: a reader opened on a quiet stream backs off at once.
  let lastPolledDataAt = Number.NEGATIVE_INFINITY;
  let finished = false;
  let woken = false;
  let wake: (() => void) | undefined;
  let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
  let unsubscribe: (() => void) | undefined;
  /** Committed blocks from the bus, in arrival order (= key order for one writer). */
  let mem: CommittedBlock[] = [];
  /** A block read by get() while resolving the start position, applied first. */
  let pending: Block | undefined = start.first;
  /** The run's end once seen terminal (it never changes after). */
  let ended: { status: WorkflowRunStatus } | undefined;
  /** When this reader's read of the run that showed it terminal returned (performance.now()). */
  let endSeenAt = 0;
  /** When the run may be read again (performance.now()). */
  let nextRunCheckAt = 0;
  /** Start of the last Query (performance.now(), to order it after the end's grace). */
  let lastQueryStart = 0;

  const onBlock = (b: CommittedBlock) => {
    if (mem.length >= MAX_BUFFERED_BLOCKS) mem = [];
    mem.push(b);
    woken = true;
    wake?.();
  };
  const finish = () => {
    if (finished) return;
    finished = true;
    readerFinished();
    readers.delete(shutdown);
    unsubscribe?.();
    mem = [];
    wake?.();
    abort.abort();
  };
  const shutdown = (err: Error) => {
    if (finished) return;
    finish();
    ctrl?.error(err);
  };
  const nap = (ms: number) =>
    woken || ms <= 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const timer = setTimeout(() => done(), ms);
          const done = () => {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          };
          wake = done;
        });

  /** Apply one block at `k`: returns the bytes to enqueue (empty chunks dropped). */
  async function apply(first: number, chunks: (Uint8Array | StoredChunk)[], isEof: boolean): Promise<Uint8Array[]> {
    if (isEof) {
      eof = true;
      return [];
    }
    const from = Math.max(0, i - first);
    const wanted = chunks.slice(from);
    i = Math.max(i, first + chunks.length);
    k = first + chunks.length;
    const out = await mapLimited(wanted, S3_CONCURRENCY, async (c) => {
      if (c instanceof Uint8Array) return c;
      if ('d' in c) return c.d;
      if ('s3' in c) return deps.fetchS3(c.s3, abort.signal);
      return new Uint8Array(0);
    });
    return out.filter((b) => b.byteLength > 0);
  }

  /** Blocks from memory that start at `k`; stale ones are dropped, later ones kept. */
  function takeFromMemory(): CommittedBlock[] {
    const taken: CommittedBlock[] = [];
    let at = k;
    while (mem.length > 0) {
      const b = mem[0];
      if (b.first < at || (b.first === at && taken.length > 0 && taken[taken.length - 1].eof)) {
        mem.shift(); // already read (from a Query or an earlier block)
        continue;
      }
      if (b.first !== at) break; // a block we have not seen precedes it: query
      mem.shift();
      taken.push(b);
      if (b.eof) break;
      at = b.first + b.chunks.length;
    }
    // A wake-up for blocks taken here is spent: the next wait must not skip straight to a Query.
    woken = mem.length > 0;
    return taken;
  }

  /**
   * After an empty Query of an idle reader: true when the run has ended and no writer is left,
   * once this reader has sealed the stream (header). A failed run read is retried later.
   */
  async function runOver(): Promise<boolean> {
    if (!deps.runEnd || !deps.seal) return false;
    if (!ended) {
      if (performance.now() < nextRunCheckAt) return false;
      nextRunCheckAt = performance.now() + RUN_CHECK_MS;
      ended = await deps.runEnd(runId).catch(() => undefined);
      if (!ended || finished) return false;
      endSeenAt = performance.now();
    }
    // The empty Query must have started a grace after this reader saw the end, so nothing written
    // within the grace after the end (which came before the sight) is missed.
    if (finished || lastQueryStart - endSeenAt < END_GRACE_MS) return false;
    try {
      await deps.seal(runId, name);
    } catch (err) {
      deps.logger?.warn(
        `[eve-world-aws] could not close stream "${name}" of run ${runId} after its run ended (tried again at the next idle poll): ${String(err)}`,
        { runId },
      );
      return false;
    }
    deps.logger?.info(
      `[eve-world-aws] stream "${name}" of run ${runId} ended with its run (${ended.status}): nothing was written for ${END_GRACE_MS / 1000} s after the run ended and its writer never closed it, so the reader closed it (later writes to it are dropped)`,
      { runId },
    );
    return true;
  }

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        // Subscribe before the first query so a block committed during it is not missed.
        ctrl = controller;
        readerStarted();
        readers.add(shutdown);
        if (useBus) unsubscribe = subscribe(busKey(deps.table, runId, name), onBlock);
      },
      async pull(controller) {
        try {
          while (!finished) {
            const out: Uint8Array[] = [];
            let fromQuery = false;
            let truncated = false;
            if (pending) {
              const b = pending;
              pending = undefined;
              fromQuery = true;
              out.push(...(await apply(b.first, b.chunks, b.eof)));
            }
            const memBlocks = eof ? [] : takeFromMemory();
            for (const b of memBlocks) out.push(...(await apply(b.first, b.chunks, b.eof)));
            let queryStart = 0;
            /** The `nextAt` hint of the last block this round's Query returned. */
            let hint: number | undefined;
            if (out.length === 0 && !eof && memBlocks.length === 0) {
              await nap(nextQueryAt - performance.now());
              if (finished) return;
              woken = false;
              if (mem.length > 0 && mem[0].first <= k) continue; // the bus brought what we need
              queryStart = performance.now();
              lastQueryStart = queryStart;
              const page = await queries.blocksFrom(runId, name, k, { signal: abort.signal });
              fromQuery = true;
              truncated = page.truncated;
              for (const b of page.blocks) {
                if (b.first !== k) break; // cannot happen (density); read again from k next time
                out.push(...(await apply(b.first, b.chunks, b.eof)));
                hint = b.nextAt;
                if (eof) break;
              }
              // Too early costs a fast interval, too late only the margin: grow fast, shrink
              // slowly.
              if (hinted) settle = out.length > 0 ? Math.max(SETTLE_MIN_MS, settle - 0.5) : Math.min(settle + 5, fast);
              hinted = false;
            }
            if (finished) return;
            for (const bytes of out) controller.enqueue(bytes);
            if (eof) {
              finish();
              controller.close();
              return;
            }
            const now = performance.now();
            if (out.length > 0 || memBlocks.length > 0) {
              if (fromQuery) {
                lastPolledDataAt = now;
                interval = fast;
                // The next chunk cannot be there yet, unless the page was cut short.
                const base = queryStart || now;
                nextQueryAt = truncated ? now : base + fast;
                if (!truncated && hint !== undefined) {
                  // A writer mid-burst said when its next block commits (its wall clock): query
                  // just after that, never sooner than the fast interval, nor much later.
                  const at = hint - Date.now() + performance.now() + settle;
                  nextQueryAt = Math.min(Math.max(nextQueryAt, at), base + HINT_MAX_INTERVALS * fast);
                  hinted = true;
                }
              } else {
                // The bus is feeding us: it cuts the wait short, the poll is only a fallback.
                interval = config.streamIdlePollMs;
                nextQueryAt = now + interval;
              }
              if (out.length > 0) return; // pull() is called again when the consumer wants more
              continue;
            }
            nextQueryAt = queryStart + interval;
            if (now - lastPolledDataAt >= ACTIVE_MS) {
              interval = Math.min(interval * BACKOFF, config.streamIdlePollMs);
              if (queryStart > 0 && (await runOver())) {
                if (finished) return;
                nextQueryAt = 0; // read the EOF just written (or the late block before it)
              }
            }
          }
        } catch (err) {
          if (finished) return; // cancelled mid-request
          finish();
          controller.error(err);
        }
      },
      cancel() {
        finish();
      },
    },
    { highWaterMark: 1 },
  );
}
