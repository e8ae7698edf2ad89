/**
 * Old deployments drain, then go (deployment affinity, src/deployment/): which registered
 * deployments still have active runs, how long each has been quiet, and the retire decision that
 * `eve-world-aws deployments retire` and the daily sweep share.
 *
 * Invariants:
 * - A deployment is retirable only when no process of it runs (its heartbeat counter watched
 *   unchanged for LIVENESS_WINDOW_MS on this process's clock: src/deployment/liveness.ts), it has
 *   no active run (pending or running), and it has been quiet for the grace period (no `lastSeen`
 *   and no run of it ended within it: a policy on timestamps other hosts wrote, hours long, never
 *   what keeps a live process from being retired). `force` (the CLI's `--force`) skips all three,
 *   after saying which runs it fails.
 * - When the active-run listing is cut short (more than {@link ACTIVE_SCAN_LIMIT} active runs), "no
 *   active run" is unknown: nothing is retirable without `force`.
 * - Retiring is markRetired's one conditional write (safe twice); the sweep's dry run writes
 *   nothing.
 */
import type { WorkflowRun } from '@workflow/world';
import type { WorldContext } from '../context/world-context.js';
import { watchDeployments } from '../deployment/liveness.js';
import { type DeploymentRecord, listDeployments, markRetired } from '../deployment/registry.js';
import { createStorage } from '../storage/index.js';

/** Active runs read at most (newest first); past it, drain decisions are refused. */
const ACTIVE_SCAN_LIMIT = 10_000;
/** Ended runs read at most (newest first) for each deployment's last run end. */
const ENDED_SCAN_LIMIT = 1_000;

/** What the runs of the table say about each deployment. */
export interface DeploymentActivity {
  /** Active (pending or running) runs per deployment id. */
  activeRuns: Map<string, number>;
  /** Their ids, newest first. */
  activeRunIds: Map<string, string[]>;
  /** Latest end (epoch ms) of a run per deployment id, among the newest ENDED_SCAN_LIMIT ended runs. */
  lastRunEnded: Map<string, number>;
  /** True when the active-run listing stopped at ACTIVE_SCAN_LIMIT: counts are lower bounds. */
  capped: boolean;
}

type RunSummary = Pick<WorkflowRun, 'runId' | 'deploymentId' | 'updatedAt'> & { completedAt?: Date };

type RunPage = (params: {
  status: WorkflowRun['status'][];
  cursor?: string;
  limit: number;
}) => Promise<{ data: RunSummary[]; cursor: string | null; hasMore: boolean }>;

async function scan(page: RunPage, status: WorkflowRun['status'][], limit: number) {
  const runs: RunSummary[] = [];
  let cursor: string | undefined;
  let hasMore = false;
  do {
    const p = await page({ status, cursor, limit: Math.min(1000, limit - runs.length) });
    runs.push(...p.data);
    hasMore = p.hasMore;
    cursor = p.cursor ?? undefined;
  } while (hasMore && cursor && runs.length < limit);
  return { runs, capped: hasMore && runs.length >= limit };
}

/** Active runs and last run ends per deployment, read from the run listing (GSI2). */
export async function deploymentActivity(ctx: WorldContext): Promise<DeploymentActivity> {
  const reads = createStorage(ctx).runs;
  const page: RunPage = ({ status, cursor, limit }) =>
    reads.list({ status, resolveData: 'none', pagination: { limit, cursor, sortOrder: 'desc' } });
  const [active, ended] = await Promise.all([
    scan(page, ['pending', 'running'], ACTIVE_SCAN_LIMIT),
    scan(page, ['completed', 'failed', 'cancelled'], ENDED_SCAN_LIMIT),
  ]);
  const activeRuns = new Map<string, number>();
  const activeRunIds = new Map<string, string[]>();
  for (const r of active.runs) {
    activeRuns.set(r.deploymentId, (activeRuns.get(r.deploymentId) ?? 0) + 1);
    activeRunIds.set(r.deploymentId, [...(activeRunIds.get(r.deploymentId) ?? []), r.runId]);
  }
  const lastRunEnded = new Map<string, number>();
  for (const r of ended.runs) {
    const at = (r.completedAt ?? r.updatedAt).getTime();
    if (at > (lastRunEnded.get(r.deploymentId) ?? 0)) lastRunEnded.set(r.deploymentId, at);
  }
  return { activeRuns, activeRunIds, lastRunEnded, capped: active.capped };
}

/** Whether `record` may be retired now, and why not. */
export type DrainVerdict =
  | { retirable: true; activeRuns: number; quietSince: number }
  | {
      retirable: false;
      activeRuns: number;
      quietSince: number;
      why: 'retired' | 'live' | 'active-runs' | 'too-many-active-runs' | 'within-grace';
      detail: string;
    };

/** When `record` was last heard of: its last heartbeat, or the end of its last run if later. */
export function quietSince(record: DeploymentRecord, activity: DeploymentActivity): number {
  return Math.max(record.lastSeen, activity.lastRunEnded.get(record.id) ?? 0);
}

const ago = (ms: number) =>
  ms >= 3_600_000
    ? `${(ms / 3_600_000).toFixed(1)} h`
    : ms >= 60_000
      ? `${Math.floor(ms / 60_000)} min`
      : `${Math.floor(ms / 1000)} s`;

/** The retire decision (see the header); `live`: a process of it was seen counting heartbeats. Pure. */
export function drainVerdict(
  record: DeploymentRecord,
  activity: DeploymentActivity,
  graceMs: number,
  now: number,
  live = false,
): DrainVerdict {
  const activeRuns = activity.activeRuns.get(record.id) ?? 0;
  const since = quietSince(record, activity);
  const no = (why: Extract<DrainVerdict, { retirable: false }>['why'], detail: string): DrainVerdict => ({
    retirable: false,
    activeRuns,
    quietSince: since,
    why,
    detail,
  });
  if (record.status === 'retired') return no('retired', `deployment ${record.id} is already retired`);
  if (live)
    return no(
      'live',
      `a process of deployment ${record.id} is running (its heartbeat counter moved while watched): stop it first, or pass --force (it then starts no more runs and its active runs fail)`,
    );
  if (activeRuns > 0)
    return no(
      'active-runs',
      `deployment ${record.id} has ${activeRuns} active run${activeRuns === 1 ? '' : 's'}: wait until they finish (\`eve-world-aws runs --status pending,running\`), or pass --force to fail each with DEPLOYMENT_MISMATCH at its next delivery`,
    );
  if (activity.capped)
    return no(
      'too-many-active-runs',
      `more than ${ACTIVE_SCAN_LIMIT} runs are active: whether deployment ${record.id} has one is unknown; pass --force to retire it anyway`,
    );
  if (now - since < graceMs)
    return no(
      'within-grace',
      `deployment ${record.id} was last heard of ${ago(Math.max(0, now - since))} ago (a heartbeat of a live process or a run of it ending), less than the grace period of ${ago(graceMs)}: a process of it may still be running; stop it and retry later, or pass --force`,
    );
  return { retirable: true, activeRuns, quietSince: since };
}

/** What the sweep did to the registry. */
export interface DeploymentSweep {
  /** Registered deployments looked at (retired ones included). */
  scanned: number;
  /** Retired by this sweep (with a dry run: that would be). */
  retired: string[];
  /** Active deployments kept, with why. */
  kept: Array<{ id: string; why: string; activeRuns: number }>;
}

/**
 * The daily sweep's part: retire every active deployment that is retirable (no active run, quiet
 * for `graceMs`). With no registered deployment (affinity never on) it is one Query.
 */
export async function sweepDeployments(
  ctx: WorldContext,
  /** `windowMs`: how long a drained deployment's counter is watched (default LIVENESS_WINDOW_MS). */
  opts: { now?: number; graceMs?: number; dryRun?: boolean; windowMs?: number } = {},
): Promise<DeploymentSweep> {
  const records = await listDeployments(ctx);
  const out: DeploymentSweep = { scanned: records.length, retired: [], kept: [] };
  const candidates = records.filter((d) => d.status === 'active');
  if (candidates.length === 0) return out;
  const now = opts.now ?? Date.now();
  const graceMs = opts.graceMs ?? ctx.config.deploymentGraceSeconds * 1000;
  const activity = await deploymentActivity(ctx);
  const drained = candidates.filter((d) => drainVerdict(d, activity, graceMs, now).retirable);
  // The drained ones are watched (at most LIVENESS_WINDOW_MS): a running process keeps its own.
  const { watch } =
    drained.length > 0
      ? await watchDeployments(ctx, {
          decide: (r) => drained.some((d) => d.id === r.id),
          judge: (r, w) => w.state(r.id),
        })
      : { watch: undefined };
  for (const d of candidates) {
    const v = drainVerdict(d, activity, graceMs, now, watch?.state(d.id) === 'live');
    if (!v.retirable) {
      out.kept.push({ id: d.id, why: v.why, activeRuns: v.activeRuns });
      continue;
    }
    if (!opts.dryRun)
      await markRetired(ctx, d.id, `retired by the sweep: no active run, quiet ${ago(now - v.quietSince)}`, now);
    out.retired.push(d.id);
  }
  return out;
}
