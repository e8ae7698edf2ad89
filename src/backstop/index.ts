/**
 * The liveness backstop (docs/operations.md, "Liveness backstop"): an active run that owes work and
 * has no message that will wake it is woken within a stated bound, whatever caused the gap. The
 * run's `DUE` item (src/storage/records/due.ts) says when to check it; a tick (./check.ts) finds
 * the due checks, fences each, decides (./decide.ts) and wakes (./wake.ts), a repeat wake only
 * while the queue shows no backlog (./backlog.ts); the flow route acknowledges quiet turns
 * (`ackTurn`, src/storage/write/due-moves.ts).
 *
 * It sits above storage and the queue (it reads one and sends on the other) and below the sweep,
 * whose scheduled Lambda runs a tick a minute, and the consumer, whose in-process poller runs one
 * every `backstopTickSeconds`.
 */
import type { WorldContext } from '../context/world-context.js';
import { createQueue, type QueueSender } from '../queue/index.js';
import { storageContext } from '../storage/index.js';
import { consoleLogger, type Logger } from '../telemetry/log.js';
import { type QueueBacklog, queueBacklog } from './backlog.js';
import { backstopTick, type TickOptions, type TickReport } from './check.js';
import { createWake } from './wake.js';

export type { TickReport } from './check.js';

export interface BackstopOptions {
  /** Sends the wakes. Default: a queue sender of the context (no early delivery). */
  sender?: Pick<QueueSender, 'queue'>;
  /** The queue's backlog, which holds repeat wakes (./backlog.ts). Default: the context's queue's. */
  backlog?: QueueBacklog;
  logger?: Logger;
  now?: () => number;
  limit?: number;
  afterFence?: TickOptions['afterFence'];
}

/** One tick: check every run whose check is due. */
export function runBackstopTick(ctx: WorldContext, opts: BackstopOptions = {}): Promise<TickReport> {
  const sender = opts.sender ?? createQueue(ctx, { logger: opts.logger });
  return backstopTick(storageContext(ctx), {
    wake: createWake(ctx, sender),
    backlog: opts.backlog ?? queueBacklog(ctx),
    logger: opts.logger ?? consoleLogger,
    now: opts.now,
    limit: opts.limit,
    afterFence: opts.afterFence,
  });
}

/**
 * A tick every `config.backstopTickSeconds` in this process (none when 0), never two at once; a
 * failed tick is logged and the next one runs. Returns the stop function.
 */
export function startBackstop(ctx: WorldContext, opts: BackstopOptions = {}): () => void {
  const seconds = ctx.config.backstopTickSeconds;
  if (seconds <= 0) return () => {};
  const logger = opts.logger ?? consoleLogger;
  // One sender and one backlog reader for every tick of this process (they cache the queue's URL).
  const sender = opts.sender ?? createQueue(ctx, { logger });
  const backlog = opts.backlog ?? queueBacklog(ctx);
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    runBackstopTick(ctx, { ...opts, sender, backlog, logger })
      .catch((err) => logger.error(`[eve-world-aws] backstop tick failed: ${String(err)}`))
      .finally(() => {
        running = false;
      });
  }, seconds * 1000);
  timer.unref?.();
  return () => clearInterval(timer);
}
