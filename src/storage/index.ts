/**
 * Storage for the World on one DynamoDB table (+ S3 for large values).
 *
 * `events.create` is the only mutation: each call commits one `TransactWriteItems` (the event at
 * its slot plus the view writes and their guards), see `write/create.ts`. Everything else reads.
 *
 * ```ts
 * const storage = createStorage(createContext(loadConfig()));
 * const world = { ...storage, capabilities: { ...storageCapabilities }, specVersion: SPEC_VERSION_CURRENT, ... };
 * ```
 */
import { WorkflowRunNotFoundError } from '@workflow/errors';
import type { Storage, WorkflowRunStatus, WorldCapabilities } from '@workflow/world';
import type { WorldContext } from '../context/world-context.js';
import { SlotHints } from './memory/slot-hints.js';
import { StepItemCache } from './memory/view-items.js';
import { createEventReads } from './read/events.js';
import { createHookReads } from './read/hooks.js';
import { createRunReads } from './read/runs.js';
import { createStepReads } from './read/steps.js';
import { isTerminalRun } from './records/lifecycle.js';
import type { StorageCtx } from './table/storage-ctx.js';
import { createEvents } from './write/create.js';

/**
 * Capabilities this storage honours, for the World composer to declare:
 * - `hookResumeDedup`: `hook_received` with a `resumeId` is deduplicated on `(runId, resumeId)`
 *   by a claim item written in the event's transaction, and `resumeId` is persisted on the event.
 * - `hookRetention`: a hook created with a `tokenRetentionUntil` (`experimental_minRetention`)
 *   outlives its run's end until then: readable, holding its token, then expired by TTL.
 */
export const storageCapabilities = {
  hookResumeDedup: true,
  hookRetention: { active: true },
} as const satisfies WorldCapabilities;

export function storageContext(ctx: WorldContext): StorageCtx {
  return { config: ctx.config, ddb: ctx.clients.ddb, payloads: ctx.payloads, table: ctx.config.tableName };
}

/** The World's storage, plus what the composer wires into the queue. */
export interface WorldStorage extends Storage {
  /** Highest slot of `runId`'s log this process has seen committed (for messages' `eve.tail`). */
  logTail(runId: string): number | undefined;
  /**
   * A terminal run's status, undefined while it is not terminal or when there is no such run. One
   * consistent GetItem, without payloads (live stream reads use it to end with their run,
   * src/streams/live.ts, timing their grace from when they saw the end, not from its timestamp).
   */
  runEnd(runId: string): Promise<{ status: WorkflowRunStatus } | undefined>;
}

export function createStorage(ctx: WorldContext): WorldStorage {
  const sctx = storageContext(ctx);
  const hints = new SlotHints();
  const runs = createRunReads(sctx);
  const events = createEventReads(sctx, hints);
  return {
    runs: runs as unknown as Storage['runs'],
    steps: createStepReads(sctx) as unknown as Storage['steps'],
    hooks: createHookReads(sctx),
    events: { create: createEvents(sctx, hints, new StepItemCache()) as Storage['events']['create'], ...events },
    logTail: (runId) => hints.get(runId),
    async runEnd(runId) {
      try {
        const run = await runs.get(runId, { resolveData: 'none' });
        return isTerminalRun(run.status) ? { status: run.status } : undefined;
      } catch (err) {
        if (WorkflowRunNotFoundError.is(err)) return undefined;
        throw err;
      }
    },
  };
}

// What the orphan sweep (src/sweep/run-payloads.ts) reads and writes the table with: a run's items,
// the run view's sweep state and mark, item states, the run's payload prefix, the codec. What the
// liveness backstop (src/backstop/) does: the due runs and a checked run's reads, the DUE item's
// moves and delete, the step leases' watch. Both import these from here, never from inside, and
// send no DynamoDB request of their own (test/unit/layers.test.ts). (The CLI's tail uses the event
// cursor; the consumer, the step lease's heartbeat and the turn's acknowledgement; doctor, the
// formats that wrote a run.)
export { expired, isTerminalRun, isTerminalStep } from './records/lifecycle.js';
export { runPrefix } from './records/payloads.js';
export { type Attrs, num, str } from './table/codec.js';
export { type WriterFormats, readWriterFormats } from './read/writer-formats.js';
export { encodeEventCursor } from './table/pagination.js';
export type { StorageCtx } from './table/storage-ctx.js';
export { type RunItems, type RunItemsOptions, readRunItems } from './write/run-items.js';
export { markRunSwept, readRunSweepState, SWEPT_ATTR } from './write/run-swept.js';
export {
  extendStepLeases,
  type LeaseWatchReport,
  leaseMark,
  observeStepLeases,
  releaseStepLeases,
  stepLeaseTtlMs,
  watchPeriodMs,
} from './write/step-lease.js';
export type { DueRecord } from './records/due.js';
export type { StepRecord } from './records/step.js';
export { dueRuns, readQuietRun, readRunHead } from './read/run-check.js';
export { ackTurn, deleteDue, moveDue } from './write/due-moves.js';
