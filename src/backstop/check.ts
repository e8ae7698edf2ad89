/**
 * One backstop tick: find the runs whose check is due, and check each one (docs/operations.md,
 * "Liveness backstop").
 *
 * Finding: one Query per shard of GSI1 (`DUE#<s>`, sort key <= now, at most `limit` a shard). The
 * index is eventually consistent, so what it shows is only a candidate.
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
import { DeleteItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { build, when } from '../aws/record-conditions.js';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import { ATTR, GSI1, keys, LIST_SHARDS, storageKeys } from '../schema/keys.js';
import { type DueRecord, dueIndexAttrs, dueSortKey, parseDue } from '../storage/records/due.js';
import { eventsOf, lastSlotOf } from '../storage/records/event.js';
import { isTerminalStep } from '../storage/records/lifecycle.js';
import { parseRun } from '../storage/records/run.js';
import { parseStep, type StepRecord } from '../storage/records/step.js';
import { parseWait } from '../storage/records/wait.js';
import type { Attrs } from '../storage/table/codec.js';
import { keysOf } from '../storage/table/codec.js';
import { assign, condition, expression, part } from '../storage/table/expression.js';
import { queryAll } from '../storage/table/reads.js';
import type { StorageCtx } from '../storage/table/storage-ctx.js';
import { type LeaseWatchReport, leaseMark, observeStepLeases, watchPeriodMs } from '../storage/write/step-lease.js';
import type { Logger } from '../telemetry/log.js';
import { forEachLimited } from '../util/concurrency.js';
import { backlogGate, heldLogLine, type QueueBacklog } from './backlog.js';
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

const UNACKED_PAGE = 50;
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
      const res = await ctx.ddb.send(
        new QueryCommand({
          TableName: ctx.table,
          IndexName: GSI1,
          KeyConditionExpression: '#pk = :pk AND #sk <= :upto',
          ExpressionAttributeNames: { '#pk': ATTR.gsi1pk, '#sk': ATTR.gsi1sk },
          ExpressionAttributeValues: { ':pk': { S: keys.dueGsi(s) }, ':upto': { S: `${dueSortKey(now, '')}~` } },
          Limit: opts.limit ?? 25,
        }),
      );
      // A few checks of a shard at once: a check that watches a step lease waits up to its ttl.
      await forEachLimited((res.Items ?? []) as Attrs[], CHECKS_PER_SHARD, async (it) => {
        report.due++;
        const sk = it[ATTR.gsi1sk]?.S ?? '';
        const seenDueAt = Number(sk.slice(0, 13));
        const runId = sk.slice(14);
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
    // A repeat wake waits while the queue shows a backlog: the last one may be in it (./backlog.ts).
    const backlog = await gate(due.wakes);
    if (backlog !== undefined) {
      opts.logger?.info(heldLogLine(runId, due.wakes, backlog));
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

/** Move a DUE item's check from `from` to `to` (conditional on `dueAt = from`); its values after, or undefined. */
async function moveDue(
  ctx: StorageCtx,
  runId: string,
  from: number,
  to: number,
  set: { wakes?: number; seenSlot?: number },
): Promise<DueRecord | undefined> {
  const idx = dueIndexAttrs(runId, to);
  const move = expression()
    .set(
      assign('dueAt', ':to', { N: String(to) }),
      part('#sk1 = :sk1', { ':sk1': idx[ATTR.gsi1sk] }, { '#sk1': ATTR.gsi1sk }),
    )
    .when(condition(when.is('dueAt', from)));
  for (const [k, v] of Object.entries(set)) if (v !== undefined) move.set(assign(k, `:${k}`, { N: String(v) }));
  try {
    const out = await ctx.ddb.send(
      new UpdateItemCommand({ ...move.toUpdateItem(ctx.table, keysOf(keys.due(runId))), ReturnValues: 'ALL_NEW' }),
    );
    return out.Attributes ? parseDue(out.Attributes as Attrs) : undefined;
  } catch (err) {
    if (isConditionalCheckFailed(err)) return undefined;
    throw err;
  }
}

async function deleteDue(ctx: StorageCtx, runId: string, fencedAt: number): Promise<void> {
  const c = build(when.is('dueAt', fencedAt));
  try {
    await ctx.ddb.send(
      new DeleteItemCommand({
        TableName: ctx.table,
        Key: keysOf(keys.due(runId)),
        ConditionExpression: c.expr,
        ExpressionAttributeNames: c.names,
        ExpressionAttributeValues: c.values,
      }),
    );
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
  }
}

/** What {@link decide} needs; the reads past the first only when the run has been quiet. */
async function readCheck(
  ctx: StorageCtx,
  runId: string,
  due: DueRecord,
  now: number,
  quietMs: number,
): Promise<{ check: CheckInput; leased: StepRecord[]; workflowName?: string; deploymentId?: string }> {
  const pk = { ':pk': { S: keys.runPk(runId) } };
  const head = await ctx.ddb.send(
    new QueryCommand({
      TableName: ctx.table,
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :a AND :m',
      ExpressionAttributeValues: { ...pk, ':a': { S: keys.eventSkPrefix }, ':m': { S: storageKeys.runMetaSk } },
      ScanIndexForward: false,
      Limit: 2,
      ConsistentRead: true,
    }),
  );
  const items = (head.Items ?? []) as Attrs[];
  const runItem = items.find((i) => i.SK.S === storageKeys.runMetaSk);
  const last = items.find((i) => i.SK.S !== storageKeys.runMetaSk);
  const run = runItem ? parseRun(runItem) : undefined;
  const tail = last ? lastSlotOf(last) : 0;
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
  const acked = due.ackedSlot ?? 0;
  const [unacked, steps, waits] = await Promise.all([
    tail > acked
      ? ctx.ddb
          .send(
            new QueryCommand({
              TableName: ctx.table,
              KeyConditionExpression: 'PK = :pk AND SK BETWEEN :a AND :b',
              ExpressionAttributeValues: {
                ...pk,
                ':a': { S: keys.eventSk(acked) },
                ':b': { S: `${keys.eventSkPrefix}~` },
              },
              ScanIndexForward: false,
              Limit: UNACKED_PAGE,
              ConsistentRead: true,
            }),
          )
          .then((r) => eventsOf((r.Items ?? []) as Attrs[], { after: acked }, true))
      : Promise.resolve([]),
    queryAll(ctx, {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :p)',
      ExpressionAttributeValues: { ...pk, ':p': { S: keys.stepSkPrefix } },
      ConsistentRead: true,
    }),
    queryAll(ctx, {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :p)',
      ExpressionAttributeValues: { ...pk, ':p': { S: keys.waitSkPrefix } },
      ConsistentRead: true,
    }),
  ]);
  check.unacked = unacked.map((e) => ({ slot: e.slot, type: e.eventType }));
  const parsed = steps.map(parseStep);
  // A lease counts as live until watched (the decision then takes the watch's verdict).
  const leased = parsed.filter((s) => !isTerminalStep(s.status) && leaseMark(s) !== undefined);
  check.steps = parsed.map((s) => ({
    stepId: s.stepId,
    stepName: s.stepName,
    status: s.status,
    ...(leaseMark(s) ? { lease: 'live' as const } : {}),
    retryAfter: s.retryAfter?.getTime(),
  }));
  check.waits = waits.map(parseWait).map((w) => ({ status: w.status, resumeAt: w.resumeAt?.getTime() }));
  return { check, leased, workflowName: run.workflowName, deploymentId: run.deploymentId || undefined };
}
