/**
 * The orphan sweep of run payloads: deletes offloaded payloads under `runs/<runId>/` that no stored
 * item references and that no future create can ever reference. Why objects are orphaned and why
 * each rule below is safe (which writers can still publish a pointer under which prefix):
 * docs/design.md, "Orphan sweep".
 *
 * Invariants:
 * - A terminal run (ended more than `graceMs` ago) loses only unreferenced objects older than
 *   `graceMs`, and nothing under a step that is not terminal; while any step is not terminal, no
 *   stream object either. Paths this World does not write are kept.
 * - A prefix with no run item loses its unreferenced objects older than `graceMs` only once its run
 *   id is older than the run-creation window plus `graceMs` ({@link RUN_CREATE_WINDOW_MS}); objects
 *   a live hook references are kept; a prefix that is not a `wrun_<ULID>` is kept.
 * - A pending or running run is never touched.
 * - Items are read (strongly consistent) before objects are listed.
 * - A run whose sweep protected nothing and deleted every orphan is marked `orphansSweptAt`
 *   (conditional on the run being terminal: `markRunSwept`, src/storage/write/run-swept.ts); later
 *   sweeps skip it unless `recheck` is set.
 * - Once `signal` is aborted no further run prefix is started; the report says `stopped: true`.
 * - Every doubt keeps the object; every delete is idempotent.
 *
 * The table is read and written only through what src/storage/index.ts exports (a run's items are
 * the ones retention reads too, src/storage/write/run-items.ts); no DynamoDB request is made here.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { DEFAULT_TIMESTAMP_THRESHOLD_PAST_MS, ulidToDate } from '@workflow/world';
import { SETTINGS } from '../config/index.js';
import { keys } from '../schema/keys.js';
import {
  type Attrs,
  expired,
  isTerminalRun,
  isTerminalStep,
  markRunSwept,
  num,
  readRunItems,
  readRunSweepState,
  runPrefix,
  type StorageCtx,
  SWEPT_ATTR,
  str,
} from '../storage/index.js';
import { forEachLimited } from '../util/concurrency.js';

/** Default grace: objects, and runs ended, younger than this are left alone (its row: `SETTINGS.sweep.graceMs`). */
export const ORPHAN_GRACE_MS = SETTINGS.sweep.graceMs.default;

/** How long after its id was minted a run can still be created (core's ULID timestamp check). */
export const RUN_CREATE_WINDOW_MS = DEFAULT_TIMESTAMP_THRESHOLD_PAST_MS;

/** Listed deletions in a report; the counts include the rest. */
const MAX_LISTED = 1000;

/** Run prefixes looked at in parallel. */
const CONCURRENCY = 4;

const RUNS_ROOT = 'runs/';

/** Sub-paths of a run prefix whose writers are known (see the header). */
const KNOWN_KINDS = new Set(['run', 'steps', 'hooks', 'events', 'streams']);

export interface OrphanSweepOptions {
  /** The clock (epoch ms); tests pass a later time instead of waiting. */
  now?: number;
  /** Minimum age of a deleted object and minimum time since its run ended. Default 1 h. */
  graceMs?: number;
  /** Report what would be deleted; delete nothing. */
  dryRun?: boolean;
  /** Only this run's prefix. */
  runId?: string;
  /** Also re-read terminal runs an earlier sweep already cleaned (`orphansSweptAt`). */
  recheck?: boolean;
  /**
   * Stop cleanly when aborted: no run prefix is started after that (those in progress finish);
   * the report then has `stopped: true`. Already aborted: nothing is read or deleted.
   */
  signal?: AbortSignal;
  /** Called after each run prefix (for a progress line). */
  onProgress?: (p: { runs: number; objects: number; orphans: number }) => void;
}

export interface SweptObject {
  key: string;
  size: number;
  lastModified: string;
  runId: string;
  /** `unreferenced`: its run is terminal; `no-run`: its run was never created or was purged. */
  reason: 'unreferenced' | 'no-run';
}

export interface OrphanSweepReport {
  dryRun: boolean;
  graceMs: number;
  runs: {
    scanned: number;
    /** Pending or running: never swept. */
    active: number;
    /** Ended (or, without a run item, minted) too recently. */
    recent: number;
    terminal: number;
    /** No run item: never created, or purged by retention. */
    absent: number;
    /** Not a `wrun_<ULID>` prefix: not this World's, kept. */
    foreign: number;
    /** Terminal runs an earlier sweep already cleaned: skipped (see `recheck`). */
    clean: number;
  };
  objects: {
    scanned: number;
    referenced: number;
    /** Younger than the grace. */
    recent: number;
    /** Under a non-terminal step, a stream while a step is live, or an unknown path. */
    protected: number;
    /** Deleted (or, in a dry run, that would be). */
    orphans: number;
    orphanBytes: number;
  };
  /** Orphans, up to 1,000 (`unlisted` counts the rest). */
  swept: SweptObject[];
  unlisted: number;
  /** Objects S3 refused to delete, and run prefixes (`runs/<id>/`) whose sweep failed. */
  failures: Array<{ key: string; error: string }>;
  /** `signal` was aborted during the sweep, so some run prefixes may not have been looked at: the next sweep continues. */
  stopped: boolean;
}

type RunState =
  | { kind: 'active' }
  | { kind: 'terminal'; endedAt: number; swept: boolean }
  | { kind: 'absent'; mintedAt: number }
  | { kind: 'foreign' };

/** What a run prefix is, from its run item (`undefined`: none) and its name. Pure. */
export function runState(runId: string, run: Attrs | undefined, now: number): RunState {
  const minted = runId.startsWith('wrun_') ? ulidToDate(runId.slice(5)) : null;
  if (!minted) return { kind: 'foreign' };
  // A run item past its TTL is purged for every reader (src/storage/records/lifecycle.ts).
  if (!run || expired(run, now)) return { kind: 'absent', mintedAt: minted.getTime() };
  const status = str(run, 'status');
  if (!isTerminalRun(status)) return { kind: 'active' };
  return {
    kind: 'terminal',
    endedAt: num(run, 'completedAt') ?? num(run, 'updatedAt') ?? now,
    swept: run[SWEPT_ATTR] !== undefined,
  };
}

/** Whether a prefix in `state` may be swept at `now` (else it is active or too recent). Pure. */
export function sweepable(state: RunState, now: number, graceMs: number): boolean {
  if (state.kind === 'terminal') return now - state.endedAt >= graceMs;
  if (state.kind === 'absent') return now - state.mintedAt >= RUN_CREATE_WINDOW_MS + graceMs;
  return false;
}

/** Every string value in `v` (any depth) that starts with `prefix`: the keys an item points at. */
function collectRefs(v: AttributeValue | undefined, prefix: string, out: Set<string>): void {
  if (!v) return;
  if (v.S !== undefined) {
    if (v.S.startsWith(prefix)) out.add(v.S);
  } else if (v.M) {
    for (const x of Object.values(v.M)) collectRefs(x, prefix, out);
  } else if (v.L) {
    for (const x of v.L) collectRefs(x, prefix, out);
  } else if (v.SS) {
    for (const x of v.SS) if (x.startsWith(prefix)) out.add(x);
  }
}

/**
 * Read everything that can point into `runs/<runId>/`: the run's items with its hooks
 * (`readRunItems`: its partition, its hooks, its stream blocks). `refs`: the keys they point at;
 * `liveSteps`: the prefixes of the run's non-terminal steps (`runs/<id>/steps/<stepId>/`).
 * `liveOnly`: ignore items whose TTL passed.
 */
async function readRunRefs(ctx: StorageCtx, runId: string, now: number, liveOnly: boolean) {
  const prefix = `${runPrefix(runId)}/`;
  const { own, hooks, blocks } = await readRunItems(ctx, runId, { hooks: true });
  const refs = new Set<string>();
  const liveSteps: string[] = [];
  for (const it of [...own, ...hooks, ...blocks]) {
    if (liveOnly && expired(it, now)) continue;
    for (const v of Object.values(it)) collectRefs(v, prefix, refs);
    const sk = it.SK?.S ?? '';
    if (sk.startsWith(keys.stepSkPrefix) && !isTerminalStep(str(it, 'status')))
      liveSteps.push(`${prefix}steps/${sk.slice(keys.stepSkPrefix.length)}/`);
  }
  return { refs, liveSteps };
}

/** Sweep one run prefix into `report`. */
async function sweepRun(
  ctx: StorageCtx,
  runId: string,
  opts: Required<Pick<OrphanSweepOptions, 'graceMs' | 'dryRun' | 'recheck'>> & { now: number },
  report: OrphanSweepReport,
): Promise<void> {
  const { now, graceMs } = opts;
  report.runs.scanned++;
  const state = runState(runId, await readRunSweepState(ctx, runId), now);
  if (state.kind === 'foreign' || state.kind === 'active') {
    report.runs[state.kind]++;
    return;
  }
  if (!sweepable(state, now, graceMs)) {
    report.runs.recent++;
    return;
  }
  if (state.kind === 'terminal' && state.swept && !opts.recheck) {
    report.runs.clean++;
    return;
  }
  report.runs[state.kind]++;
  // Items first, then the listing (see the header: "Order matters").
  const { refs, liveSteps } = await readRunRefs(ctx, runId, now, state.kind === 'absent');
  const prefix = `${runPrefix(runId)}/`;
  const orphans: SweptObject[] = [];
  let kept = 0;
  for await (const page of ctx.payloads.list(prefix)) {
    for (const o of page) {
      report.objects.scanned++;
      if (refs.has(o.key)) {
        report.objects.referenced++;
        continue;
      }
      if (now - o.lastModified < graceMs) {
        report.objects.recent++;
        kept++;
        continue;
      }
      if (state.kind === 'terminal') {
        const kind = o.key.slice(prefix.length).split('/')[0];
        const guarded =
          !KNOWN_KINDS.has(kind) ||
          liveSteps.some((p) => o.key.startsWith(p)) ||
          (kind === 'streams' && liveSteps.length > 0);
        if (guarded) {
          report.objects.protected++;
          kept++;
          continue;
        }
      }
      orphans.push({
        key: o.key,
        size: o.size,
        lastModified: new Date(o.lastModified).toISOString(),
        runId,
        reason: state.kind === 'terminal' ? 'unreferenced' : 'no-run',
      });
    }
  }
  const failures = opts.dryRun ? [] : await ctx.payloads.deleteKeys(orphans.map((o) => o.key));
  const failed = new Set(failures.map((f) => f.key));
  report.failures.push(...failures);
  for (const o of orphans) {
    if (failed.has(o.key)) continue;
    report.objects.orphans++;
    report.objects.orphanBytes += o.size;
    if (report.swept.length < MAX_LISTED) report.swept.push(o);
    else report.unlisted++;
  }
  // Clean for good: every unreferenced object was an orphan and is gone (none protected by a live
  // step, none too recent to judge), so later sweeps may skip the run.
  if (state.kind === 'terminal' && !opts.dryRun && kept === 0 && failures.length === 0)
    await markRunSwept(ctx, runId, now);
}

/**
 * Sweep `runs/` (or one run's prefix) for orphaned payloads; the header says what is deleted, why.
 */
export async function sweepOrphanedPayloads(
  ctx: StorageCtx,
  options: OrphanSweepOptions = {},
): Promise<OrphanSweepReport> {
  const now = options.now ?? Date.now();
  const graceMs = options.graceMs ?? ORPHAN_GRACE_MS;
  if (!Number.isFinite(graceMs) || graceMs < 0) throw new RangeError(`graceMs must be >= 0 (got ${graceMs})`);
  const opts = { now, graceMs, dryRun: options.dryRun === true, recheck: options.recheck === true };
  const report: OrphanSweepReport = {
    dryRun: opts.dryRun,
    graceMs,
    runs: { scanned: 0, active: 0, recent: 0, terminal: 0, absent: 0, foreign: 0, clean: 0 },
    objects: { scanned: 0, referenced: 0, recent: 0, protected: 0, orphans: 0, orphanBytes: 0 },
    swept: [],
    unlisted: 0,
    failures: [],
    stopped: false,
  };
  const stop = () => {
    if (options.signal?.aborted) report.stopped = true;
    return report.stopped;
  };
  const one = async (runId: string) => {
    try {
      await sweepRun(ctx, runId, opts, report);
    } catch (err) {
      // One run's failure (e.g. throttling past the SDK's retries) keeps its objects and does not
      // stop the others; it is reported, and the next sweep tries again.
      report.failures.push({ key: `${runPrefix(runId)}/`, error: (err as Error)?.message ?? String(err) });
    }
    options.onProgress?.({
      runs: report.runs.scanned,
      objects: report.objects.scanned,
      orphans: report.objects.orphans,
    });
  };
  if (options.runId !== undefined) {
    if (!stop()) await one(options.runId);
    return report;
  }
  if (stop()) return report;
  for await (const folders of ctx.payloads.listFolders(RUNS_ROOT)) {
    const ids = folders.map((f) => f.slice(RUNS_ROOT.length, -1));
    // Checked before each run is taken: an aborted signal starts nothing new.
    await forEachLimited(ids, CONCURRENCY, one, { stop });
    if (stop()) break;
  }
  return report;
}
