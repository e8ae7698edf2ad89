/**
 * The live reader behind `streams.get()`: a pull-based ReadableStream over the chunk items.
 *
 * Invariants: the cursor only advances over a contiguous prefix of present items, so no chunk is
 * skipped, duplicated or reordered; every exit path (EOF, cancel, error, World close) runs
 * `finish()`, which clears the timer and the signal listener, so nothing keeps running.
 */
import type { WorldConfig } from '../config.js';
import { HOT_POLLS, MAX_S3_PER_PULL, type Meta, type RawChunk } from './items.js';
import { readerFinished, readerStarted, signalKey, signals } from './signals.js';

export interface ScanResult {
  /** The contiguous chunks from the cursor. */
  chunks: RawChunk[];
  /** The meta row, when the page reached it. */
  meta?: Meta;
  /** The 1 MB page ended before the meta row. */
  truncated: boolean;
  /** A later chunk exists past a missing index (a gap). */
  broken: boolean;
}

export interface LiveTailDeps {
  config: WorldConfig;
  table: string;
  gapSealMs: number;
  useSignal: boolean;
  /** Shutdown hooks of the owning Streamer's readers (its close() calls them). */
  readers: Set<(err: Error) => void>;
  scan(runId: string, name: string, from: number, opts: { signal?: AbortSignal }): Promise<ScanResult>;
  seal(runId: string, name: string, index: number): Promise<boolean>;
  resolveData(chunk: RawChunk, signal?: AbortSignal): Promise<Uint8Array>;
}

/**
 * Pull-based live tail. Polls only while the consumer wants data (backpressure: a slow reader
 * costs no requests) and stops at gaps. Pacing: after a page that reached the tail, wait one
 * fast interval before the next query (an immediate re-query would find nothing); keep the fast
 * interval for HOT_POLLS intervals after the last chunk (token streams pause briefly between
 * bursts), then back off x2 per empty poll up to streamIdlePollMs. Every wait is cut short by
 * the in-process signal, so a reader in the writer's process sees new chunks one query later.
 */
export function liveTail(deps: LiveTailDeps, runId: string, name: string, startCursor: number): ReadableStream<Uint8Array> {
  const { config, gapSealMs, useSignal, readers, scan, seal, resolveData } = deps;
  const key = signalKey(deps.table, runId, name);
  const abort = new AbortController();
  const fast = config.streamPollMs;
  let cursor = startCursor;
  let interval = fast;
  /** Wait before the next query; 0 when more data is known to be there. */
  let pause = 0;
  let lastDataAt = performance.now();
  let gap: { index: number; since: number } | undefined;
  let finished = false;
  /** Set by a signal since the last query started: re-query instead of sleeping. */
  let woken = false;
  let wake: (() => void) | undefined;
  let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;

  const onSignal = () => {
    woken = true;
    wake?.();
  };
  const finish = () => {
    if (finished) return;
    finished = true;
    readerFinished();
    readers.delete(shutdown);
    if (useSignal) signals.off(key, onSignal);
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

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        // Subscribe before the first query so a write landing during it still wakes us.
        ctrl = controller;
        readerStarted();
        readers.add(shutdown);
        if (useSignal) signals.on(key, onSignal);
      },
      async pull(controller) {
        try {
          while (!finished) {
            await nap(pause);
            if (finished) return;
            woken = false;
            const page = await scan(runId, name, cursor, { signal: abort.signal });
            const { meta, broken } = page;
            // Bound the S3 fetches per pull (a 1 MB page can hold thousands of pointers).
            let s3 = 0;
            const cut = page.chunks.findIndex((c) => c.s3 !== undefined && ++s3 > MAX_S3_PER_PULL);
            const chunks = cut === -1 ? page.chunks : page.chunks.slice(0, cut);
            const data = await Promise.all(chunks.map((c) => resolveData(c, abort.signal)));
            if (finished) return;
            let enqueued = 0;
            for (const bytes of data) {
              if (bytes.byteLength > 0) {
                controller.enqueue(bytes);
                enqueued++;
              }
            }
            cursor += chunks.length;
            if (meta?.done && cursor >= meta.reserved) {
              finish();
              controller.close();
              return;
            }
            const now = performance.now();
            if (chunks.length > 0) {
              lastDataAt = now;
              interval = fast;
              gap = undefined;
              pause = cut === -1 && meta && cursor >= meta.reserved ? fast : 0;
              if (enqueued > 0) return; // pull() is called again when the consumer wants more
              continue;
            }
            if (broken || (meta && cursor < meta.reserved)) {
              // A reserved chunk is missing: it lands any moment (or its writer died).
              if (gap?.index !== cursor) gap = { index: cursor, since: now };
              else if (now - gap.since >= gapSealMs && (await seal(runId, name, cursor))) {
                pause = 0;
                continue;
              }
              pause = fast;
              continue;
            }
            pause = interval;
            if (now - lastDataAt >= HOT_POLLS * fast) interval = Math.min(interval * 2, config.streamIdlePollMs);
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
