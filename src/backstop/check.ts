/**
 * One backstop tick: find the runs whose check is due, and check each one (docs/operations.md,
 * "Liveness backstop").
 *
 * Finding: one Query per shard of GSI1 (`DUE#<s>`, sort key <= now, at most `limit` a shard). The
 * index is eventually consistent, so what it shows is only a candidate. Every table read and write
 * is storage's (src/storage/read/run-check.ts, write/due-moves.ts), through src/storage/index.ts.
 *
 * The fence first: a check starts with a conditional UpdateItem that moves the item's `dueAt` from
 * the value the index showed to `now + B`, conditional on `dueAt` still being that value. Of two
 * sweepers (or a sweeper and a `hook_received` that moved the item), one passes and the other does
 * nothing; no clock decides who acts. A checker that dies after the fence leaves the run to the
 * check B later. Its last write (the decision's `dueAt`, or the delete) is conditional on the
 * `dueAt` it fenced, so it never overwrites a `hook_received` that came meanwhile.
 *
 * Reads (only for a run that has been quiet since the last check): the run view and the log's last
 * item (one Query), the events after `ackedSlot` (one Query, newest 50), the steps and the waits.
 *
 * A quiet run's open steps that hold a step lease are watched before the decision
 * (src/storage/write/step-lease.ts, `observeStepLeases`): on this process's monotonic clock, until
 * the holder is seen to heartbeat or its lease has stood still for the holder's ttl (then revoked,
 * conditioned on what was seen). A watch longer than what the fence holds the check for (B) first
 * moves the fence that much further, so no other checker starts the same check meanwhile.
 */
import { LIST_SHARDS } from '../schema/keys.js';
import {
  type DueRecord,
  deleteDue,
  dueRuns,
  isTerminalStep,
  type LeaseWatchReport,
  leaseMark,
  moveDue,
  observeStepLeases,
  readQuietRun,
  readRunHead,
  type StepRecord,
  type StorageCtx,
  watchPeriodMs,
} from '../storage/index.js';
import type { Logger } from '../telemetry/log.js';
import { forEachLimited } from '../util/concurrency.js';
import { backlogGate, type QueueBacklog } from './backlog.js';
import { type CheckInput, type Decision, decide } from './decide.js';

/** Sends a run's wake (./wake.ts); injected so the tick needs no queue of its own in tests. */
export type WakeRun = (
  run: { runId: string; workflowName: string; deploymentId?: string; queueName?: string },
  stranded: ReadonlyArray<{ stepId: string; stepName: string }>,
  wakes: number,
) => Promise<void>;

export interface TickOptions {
  wake: WakeRun;
  /** The queue's backlog, which holds repeat wakes (./backlog.ts); absent: no gate. */
  backlog?: QueueBacklog;
  now?: () => number;
  /** Due items taken per shard per tick (default 25). */
  limit?: number;
  logger?: Logger;
  /** Called between the fence and the reads (tests: stall one checker). */
  afterFence?: (runId: string) => Promise<void>;
}

export interface TickReport {
  /** Due items the index showed. */
  due: number;
  /** Checks whose fence this tick won. */
  checked: number;
  woken: number;
  deleted: number;
  /** Checks another checker or a write got to first. */
  fencedOut: number;
  /** Repeat wakes held because the queue shows a backlog (./backlog.ts). */
  held: number;
  failed: number;
}

/** Checks of one shard run at once (16 shards). */
const CHECKS_PER_SHARD = 4;
/** Slack on top of a lease watch when the fence must be moved to cover it. */
const WATCH_SLACK_MS = 5000;

/** The line every decision logs at debug level (test/e2e/step-lease-skew.test.ts reads them). */
const checkLogLine = (runId: string, d: Decision) =>
  `[eve-world-aws] backstop: checked run ${runId}: ${d.kind} (${d.why})`;

/** The line each watch of a step lease logs at debug level. */
const leaseLogLine = (runId: string, stepId: string, w: LeaseWatchReport) =>
  w.verdict === 'lapsed'
    ? `[eve-world-aws] backstop: run ${runId}: the lease of step ${stepId} stood still for ${Math.round(w.quietMs)} ms (${w.reads} reads): revoked`
    : `[eve-world-aws] backstop: run ${runId}: the lease of step ${stepId} is live (${w.why}, after ${Math.round(w.quietMs)} ms unchanged, ${w.reads} reads)`;

/** The line a wake logs (the fault suite counts them: test/helpers/faults-backstop.ts). */
export const wakeLogLine = (runId: string, wakes: number, why: string) =>
  `[eve-world-aws] backstop: waking run ${runId} (wake ${wakes}): ${why}`;

export async function backstopTick(ctx: StorageCtx, opts: TickOptions): Promise<TickReport> {
  const now = (opts.now ?? Date.now)();
  const report: TickReport = { due: 0, checked: 0, woken: 0, deleted: 0, fencedOut: 0, held: 0, failed: 0 };
  const gate = backlogGate(opts.backlog, (m) => opts.logger?.warn(m));
  const shards = Array.from({ length: LIST_SHARDS }, (_, s) => s);
  await Promise.all(
    shards.map(async (s) => {
      const due = await dueRuns(ctx, s, now, opts.limit ?? 25);
      // A few checks of a shard at once: a check that watches a step lease waits up to its ttl.
      await forEachLimited(due, CHECKS_PER_SHARD, async ({ runId, seenDueAt }) => {
        report.due++;
        try {
          const outcome = await checkRun(ctx, runId, seenDueAt, now, opts, gate);
          if (outcome === 'fenced') report.fencedOut++;
          else {
            report.checked++;
            if (outcome === 'wake') report.woken++;
            if (outcome === 'held') report.held++;
            if (outcome === 'delete') report.deleted++;
          }
        } catch (err) {
          report.failed++;
          opts.logger?.error(`[eve-world-aws] backstop: check of run ${runId} failed: ${String(err)}`);
        }
      });
    }),
  );
  return report;
}

/** Check one run whose item the index showed due at `seenDueAt`. */
export async function checkRun(
  ctx: StorageCtx,
  runId: string,
  seenDueAt: number,
  now: number,
  opts: TickOptions,
  gate: ReturnType<typeof backlogGate> = backlogGate(opts.backlog, (m) => opts.logger?.warn(m)),
): Promise<'fenced' | 'held' | Decision['kind']> {
  const B = ctx.config.backstopSeconds * 1000;
  const fencedAt = now + B;
  const due = await moveDue(ctx, runId, seenDueAt, fencedAt, {});
  if (!due) return 'fenced';
  await opts.afterFence?.(runId);
  const input = await readCheck(ctx, runId, due, now, B);
  let fence = fencedAt;
  if (input.leased.length > 0) {
    // Watch the leases (up to the longest holder's ttl); hold the check that long if B does not.
    const longest = Math.max(...input.leased.map(watchPeriodMs)) + WATCH_SLACK_MS;
    if (longest > B) {
      const held = now + longest;
      if (!(await moveDue(ctx, runId, fencedAt, held, {}))) return 'fenced';
      fence = held;
    }
    const t0 = performance.now();
    const watched = await observeStepLeases(ctx, input.leased);
    for (const [stepId, w] of watched) opts.logger?.debug?.(leaseLogLine(runId, stepId, w));
    input.check.steps = input.check.steps.map((s) => ({ ...s, lease: watched.get(s.stepId)?.verdict ?? s.lease }));
    input.check.now = now + Math.round(performance.now() - t0);
  }
  const d = decide(input.check);
  opts.logger?.debug?.(checkLogLine(runId, d));
  if (d.kind === 'delete') {
    await deleteDue(ctx, runId, fence);
    return 'delete';
  }
  if (d.kind === 'wake' && input.workflowName) {
    // A repeat wake waits while the queue shows a backlog, which may hold the last (./backlog.ts).
    const backlog = await gate(due.wakes);
    if (backlog !== undefined) {
      opts.logger?.info(
        `[eve-world-aws] backstop: run ${runId} still owes work after wake ${due.wakes}; ${backlog} messages wait in the queue, so the wake may be among them: not woken again until the queue shows none`,
      );
      // Counted in the backoff as a sent wake: a backlog costs no more checks than before.
      await moveDue(ctx, runId, fence, d.next, { wakes: d.wakes, seenSlot: input.check.tail });
      return 'held';
    }
    opts.logger?.info(wakeLogLine(runId, d.wakes, d.why));
    const run = { runId, workflowName: input.workflowName, deploymentId: input.deploymentId };
    await opts.wake(due.queueName ? { ...run, queueName: due.queueName } : run, d.stranded, d.wakes);
  }
  await moveDue(ctx, runId, fence, d.next, { wakes: d.wakes, seenSlot: input.check.tail });
  return d.kind;
}

/** What {@link decide} needs; the reads past the first only when the run has been quiet. */
async function readCheck(
  ctx: StorageCtx,
  runId: string,
  due: DueRecord,
  now: number,
  quietMs: number,
): Promise<{ check: CheckInput; leased: StepRecord[]; workflowName?: string; deploymentId?: string }> {
  const { run, tail } = await readRunHead(ctx, runId);
  const check: CheckInput = {
    run: run && { status: run.status },
    tail,
    unacked: [],
    steps: [],
    waits: [],
    due: { seenSlot: due.seenSlot, wakes: due.wakes },
    now,
    quietMs,
  };
  if (!run || due.seenSlot !== tail)
    return { check, leased: [], workflowName: run?.workflowName, deploymentId: run?.deploymentId || undefined };
  const { unacked, steps: parsed, waits } = await readQuietRun(ctx, runId, due.ackedSlot ?? 0, tail);
  check.unacked = unacked.map((e) => ({ slot: e.slot, type: e.eventType }));
  // A lease counts as live until watched (the decision then takes the watch's verdict).
  const leased = parsed.filter((s) => !isTerminalStep(s.status) && leaseMark(s) !== undefined);
  check.steps = parsed.map((s) => ({
    stepId: s.stepId,
    stepName: s.stepName,
    status: s.status,
    ...(leaseMark(s) ? { lease: 'live' as const } : {}),
    retryAfter: s.retryAfter?.getTime(),
  }));
  check.waits = waits.map((w) => ({ status: w.status, resumeAt: w.resumeAt?.getTime() }));
  return { check, leased, workflowName: run.workflowName, deploymentId: run.deploymentId || undefined };
}
