/**
 * The sweep as one operation: orphaned run payloads under `runs/` (./run-payloads.ts) and held
 * queue bodies past their time under `queue-held/` (./held-bodies.ts). It reads what storage and
 * the queue wrote, so it sits above both and below the consumer (whose `/lambda` entry re-exports
 * the scheduled handler, ./lambda.ts) and the World (`world.sweepOrphans`, the CLI's `sweep`).
 */
import type { WorldContext } from '../context.js';
import { storageContext } from '../storage/index.js';
import { type HeldBodySweep, sweepHeldBodies } from './held-bodies.js';
import { type OrphanSweepOptions, type OrphanSweepReport, sweepOrphanedPayloads } from './run-payloads.js';

export type { HeldBodySweep } from './held-bodies.js';
export { ORPHAN_GRACE_MS, type OrphanSweepOptions, type OrphanSweepReport } from './run-payloads.js';

/** What {@link sweepOrphans} did: run payloads, and held queue bodies (not with `runId`). */
export interface SweepReport extends OrphanSweepReport {
  heldBodies?: HeldBodySweep;
}

/**
 * Delete the S3 objects nothing can reference any more: orphaned run payloads under `runs/` and
 * held queue bodies past their time. What `eve-world-aws sweep` and the scheduled Lambda run;
 * safe to run at any time and repeatedly.
 *
 * Held bodies go first: they are one listing of `queue-held/` and have no lifecycle rule, so a
 * sweep stopped by `signal` (a Lambda deadline) while working through a backlog of runs never
 * starves them. `stopped` is true when either part stopped early.
 */
export async function sweepOrphans(context: WorldContext, options: OrphanSweepOptions = {}): Promise<SweepReport> {
  const heldBodies =
    options.runId === undefined
      ? await sweepHeldBodies(context, { now: options.now, dryRun: options.dryRun, signal: options.signal })
      : undefined;
  const report: SweepReport = await sweepOrphanedPayloads(storageContext(context), options);
  if (heldBodies) {
    report.heldBodies = heldBodies;
    report.stopped ||= heldBodies.stopped;
  }
  return report;
}
