/**
 * The live reader behind `streams.get()`: a pull-based ReadableStream over the block items.
 *
 * Position: `i` is the next chunk index to deliver, `k` the key of the next block to read (the
 * block holding `i`, or the one after the tail). Blocks are dense (items.ts), so the next block
 * is exactly the one keyed `k`; applying it delivers its chunks from `i` on and moves `k` past it.
 * Nothing is skipped, repeated or reordered, whichever source the block came from.
 *
 * Sources, cheapest first:
 *  1. the in-process bus (bus.ts): blocks committed by a writer in this process, taken from memory
 *     when one starts exactly at `k` (no request);
 *  2. one consistent Query from `k` (returns every block written since, and the EOF).
 * Pacing of (2): a reader that found data by polling (a writer in another process) keeps polling
 * every `streamPollMs` until ACTIVE_MS pass without data (at most 1000 / streamPollMs reads per
 * second while the writer is active: 20 at the default 50 ms), then backs off x2 per empty poll
 * up to `streamIdlePollMs` (1 read per second at the default). While the bus is feeding the
 * reader, polls wait the idle interval: the bus cuts every wait short, the poll is only a
 * fallback. Polls happen only while the consumer wants data (backpressure).
 *
 * Every exit path (EOF, cancel, error, World close) runs `finish()`, which clears the timer and
 * the bus listener.
 */
import type { WorldConfig } from '../config.js';
import { busKey, type CommittedBlock, readerFinished, readerStarted, subscribe } from './bus.js';
import type { Block, StoredChunk } from './items.js';
import type { StreamQueries } from './queries.js';

/** A polling reader keeps the fast interval this long after the last chunk it polled. */
const ACTIVE_MS = 3000;
/** Bus blocks a reader buffers while its consumer is slow; past it, it forgets them and queries. */
const MAX_BUFFERED_BLOCKS = 1000;
/** S3 fetches in flight per reader. */
const S3_CONCURRENCY = 8;

export interface LiveTailDeps {
  config: WorldConfig;
  table: string;
  useBus: boolean;
  queries: StreamQueries;
  /** Shutdown hooks of the owning Streamer's readers (its close() calls them). */
  readers: Set<(err: Error) => void>;
  fetchS3(key: string, signal: AbortSignal): Promise<Uint8Array>;
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
  /** Wait before the next query; 0 when more data is known to be there. */
  let pause = 0;
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
    const out: Uint8Array[] = new Array(wanted.length);
    let next = 0;
    const worker = async () => {
      while (next < wanted.length) {
        const n = next++;
        const c = wanted[n];
        if (c instanceof Uint8Array) out[n] = c;
        else if ('d' in c) out[n] = c.d;
        else if ('s3' in c) out[n] = await deps.fetchS3(c.s3, abort.signal);
        else out[n] = new Uint8Array(0);
      }
    };
    await Promise.all(Array.from({ length: Math.min(S3_CONCURRENCY, wanted.length) }, worker));
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
            if (out.length === 0 && !eof && memBlocks.length === 0) {
              await nap(pause);
              if (finished) return;
              woken = false;
              if (mem.length > 0 && mem[0].first <= k) continue; // the bus brought what we need
              const page = await queries.blocksFrom(runId, name, k, { signal: abort.signal });
              fromQuery = true;
              truncated = page.truncated;
              for (const b of page.blocks) {
                if (b.first !== k) break; // cannot happen (density); read again from k next time
                out.push(...(await apply(b.first, b.chunks, b.eof)));
                if (eof) break;
              }
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
                pause = truncated ? 0 : fast;
              } else {
                // The bus is feeding us: it cuts the wait short, the poll is only a fallback.
                interval = config.streamIdlePollMs;
                pause = interval;
              }
              if (out.length > 0) return; // pull() is called again when the consumer wants more
              continue;
            }
            pause = interval;
            if (now - lastPolledDataAt >= ACTIVE_MS) interval = Math.min(interval * 2, config.streamIdlePollMs);
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
