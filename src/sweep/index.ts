/**
 * The sweep as one operation: orphaned run payloads under `runs/` (src/storage/orphan-sweep.ts)
 * and held queue bodies past their time under `queue-held/` (src/queue/body-lifetime.ts). It
 * composes two independent parts (storage and queue), so it sits above them and below the
 * consumer (whose `/lambda` entry re-exports the scheduled handler, ./lambda.ts) and the World
 * (`world.sweepOrphans`, the CLI's `sweep`).
 */
import type { WorldContext } from '../context.js';
import { type HeldBodySweep, sweepHeldBodies } from '../queue/body-lifetime.js';
import {
  type OrphanSweepOptions,
  type OrphanSweepReport,
  storageContext,
  sweepOrphanedPayloads,
} from '../storage/index.js';

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
