/**
 * The sweep as one operation: orphaned run payloads under `runs/` (./run-payloads.ts), held queue
 * bodies past their time under `queue-held/` (./held-bodies.ts), and drained deployments past their
 * grace period (./deployments.ts). It reads what storage and the queue wrote, so it sits above both
 * and below the consumer (whose `/lambda` entry re-exports the scheduled handler,
 * ./sweep-handler.ts) and the World (`world.sweepOrphans`, the CLI's `sweep`).
 */
import type { WorldContext } from '../context/world-context.js';
import { storageContext } from '../storage/index.js';
import { type DeploymentSweep, sweepDeployments } from './deployments.js';
import { type HeldBodySweep, sweepHeldBodies } from './held-bodies.js';
import { type OrphanSweepOptions, type OrphanSweepReport, sweepOrphanedPayloads } from './run-payloads.js';

export type { DeploymentSweep } from './deployments.js';
export type { HeldBodySweep } from './held-bodies.js';
export { ORPHAN_GRACE_MS, type OrphanSweepOptions, type OrphanSweepReport } from './run-payloads.js';

/** What {@link sweepOrphans} did: run payloads, and held queue bodies and deployments (not with `runId`). */
export interface SweepReport extends OrphanSweepReport {
  heldBodies?: HeldBodySweep;
  /** Deployments retired because they drained (no active run, quiet past `deploymentGraceSeconds`). */
  deployments?: DeploymentSweep;
}

/**
 * Delete the S3 objects nothing can reference any more: orphaned run payloads under `runs/` and
 * held queue bodies past their time; and retire deployments that drained (./deployments.ts). What
 * `eve-world-aws sweep` and the scheduled Lambda run; safe to run at any time and repeatedly.
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
  // Last and only when nothing stopped the sweep: a registry Query and two run listings.
  // A registry that cannot be read or written is one more failure of the report, never a throw.
  if (options.runId === undefined && !report.stopped && !options.signal?.aborted) {
    try {
      report.deployments = await sweepDeployments(context, { now: options.now, dryRun: options.dryRun });
    } catch (err) {
      report.failures.push({ key: 'deployments (the DEPLOY# registry)', error: String(err) });
    }
  }
  return report;
}
