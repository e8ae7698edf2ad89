/**
 * Whether a deployment has a live process, judged the one way that needs no two clocks to agree: by
 * watching its heartbeat counter (`beats`, src/deployment/registry.ts), which every running process
 * of it must keep changing, on this process's own monotonic clock.
 *
 * Invariants:
 * - `live`: its `beats` changed while watched, less than {@link LIVENESS_WINDOW_MS} ago; `silent`:
 *   watched for that long with no change (no process of it counted a beat: none runs, or every one
 *   is paused or cut off from DynamoDB); else `unknown` (not watched long enough). `lastSeen`,
 *   written on another host's clock, never decides it.
 * - A Lambda deployment is not judged by heartbeats (a frozen container counts none, yet its
 *   published version is reachable by Invoke): it is `live` while active (docs/design.md,
 *   "Deployment affinity on Lambda").
 * - Watching costs one Query of the registry's partition per poll, for at most the window.
 */
import type { WorldContext } from '../context/world-context.js';
import { type DeploymentRecord, LIVENESS_WINDOW_MS, listDeployments } from './registry.js';

export type Liveness = 'live' | 'silent' | 'unknown';

/** Counters seen per deployment, with when (this process's monotonic clock) they last changed. */
export class HeartbeatWatch {
  private readonly seen = new Map<string, { beats: number; since: number; changedAt?: number }>();
  constructor(
    readonly windowMs = LIVENESS_WINDOW_MS,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Notes each record's counter as seen now. */
  observe(records: Iterable<Pick<DeploymentRecord, 'id' | 'beats'>>): void {
    const now = this.clock();
    for (const r of records) {
      const s = this.seen.get(r.id);
      if (!s) this.seen.set(r.id, { beats: r.beats, since: now });
      else if (r.beats !== s.beats) {
        s.beats = r.beats;
        s.changedAt = now;
      }
    }
  }

  /** The liveness of a deployment by its counter alone (see the header). */
  state(id: string): Liveness {
    const s = this.seen.get(id);
    if (!s) return 'unknown';
    const quiet = this.clock() - (s.changedAt ?? s.since);
    if (s.changedAt !== undefined && quiet < this.windowMs) return 'live';
    return quiet >= this.windowMs ? 'silent' : 'unknown';
  }

  /** Milliseconds this process has watched `id` (0 when never). */
  watchedMs(id: string): number {
    const s = this.seen.get(id);
    return s ? this.clock() - s.since : 0;
  }
}

/** The liveness of `record` given the watch: Lambda deployments by their status (see the header). */
export function livenessOf(record: Pick<DeploymentRecord, 'id' | 'shape' | 'status'>, watch: HeartbeatWatch): Liveness {
  if (record.shape === 'lambda' && record.status === 'active') return 'live';
  return watch.state(record.id);
}

export interface WatchOptions {
  /** Which of the listed deployments must be decided (default: every active one). */
  decide?: (r: DeploymentRecord) => boolean;
  /** How one is judged (default {@link livenessOf}; by its counter alone: `(r, w) => w.state(r.id)`). */
  judge?: (r: DeploymentRecord, watch: HeartbeatWatch) => Liveness;
  /** Stop as soon as this holds (checked after every poll). */
  enough?: (records: DeploymentRecord[], watch: HeartbeatWatch) => boolean;
  /** Between two reads of the registry (ms). Default 1000. */
  pollMs?: number;
  windowMs?: number;
  /** Called after every poll, with the milliseconds watched so far (progress on a terminal). */
  onPoll?: (elapsedMs: number) => void;
}

/**
 * Reads the registry until every deployment `decide` selects is `live` or `silent` (at most the
 * window, a little more for the last read), or `enough` holds. Returns the last records read and
 * the watch that judged them.
 */
export async function watchDeployments(
  ctx: WorldContext,
  opts: WatchOptions = {},
): Promise<{ records: DeploymentRecord[]; watch: HeartbeatWatch }> {
  const watch = new HeartbeatWatch(opts.windowMs);
  const decide = opts.decide ?? ((r: DeploymentRecord) => r.status === 'active');
  const judge = opts.judge ?? livenessOf;
  const pollMs = opts.pollMs ?? 1000;
  const t0 = performance.now();
  for (;;) {
    const records = await listDeployments(ctx);
    watch.observe(records);
    opts.onPoll?.(performance.now() - t0);
    const open = records.some((r) => decide(r) && judge(r, watch) === 'unknown');
    if (!open || opts.enough?.(records, watch)) return { records, watch };
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * The newest of `order` (newest first) that is live, or undefined when every one is silent; `wait`
 * while one newer than every live one is still unknown. `self`, when met, is live (this process is
 * of it). Pure.
 */
export function pickNewestLive(
  order: readonly Pick<DeploymentRecord, 'id' | 'shape' | 'status'>[],
  watch: HeartbeatWatch,
  self?: string,
): { id: string } | 'wait' | undefined {
  for (const r of order) {
    if (r.id === self) return { id: r.id };
    const state = livenessOf(r, watch);
    if (state === 'live') return { id: r.id };
    if (state === 'unknown') return 'wait';
  }
  return undefined;
}

/**
 * Core's `deploymentId: 'latest'` and the CLI's default target: the newest active deployment
 * (of `shape`, when given) whose consumer is live, watched for at most the window; `self`, when
 * given, counts as live and is the answer when no newer one is. Undefined when none is live.
 */
export async function newestLiveDeployment(
  ctx: WorldContext,
  opts: { shape?: DeploymentRecord['shape']; self?: string; onPoll?: (elapsedMs: number) => void } = {},
): Promise<string | undefined> {
  const candidates = (records: DeploymentRecord[]) =>
    records
      .filter((r) => r.status === 'active' && (opts.shape === undefined || r.shape === opts.shape))
      .sort((a, b) => b.firstSeen - a.firstSeen || b.id.localeCompare(a.id));
  const { records, watch } = await watchDeployments(ctx, {
    decide: (r) => candidates([r]).length === 1 && r.id !== opts.self,
    enough: (rs, w) => pickNewestLive(candidates(rs), w, opts.self) !== 'wait',
    onPoll: opts.onPoll,
  });
  const pick = pickNewestLive(candidates(records), watch, opts.self);
  return pick === 'wait' ? undefined : (pick?.id ?? opts.self);
}
