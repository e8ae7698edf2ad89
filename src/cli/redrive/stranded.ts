/**
 * The stranded-run classifier of `eve-world-aws redrive --stranded`: runs not terminal, with
 * nothing scheduled, no event for `--older-than`, get their continuation re-enqueued (analyzeRun).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { Event, WorkflowRun } from '@workflow/world';
import { eventIdToSlot, getQueueTopicPrefix, resolveQueueNamespace } from '@workflow/world';
import { keysOf } from '../../aws/item-codec.js';
import { createTransport } from '../../queue/transport.js';
import { eventKind } from '../../schema/event-kinds.js';
import { keys } from '../../schema/keys.js';
import { formatDuration, formatTime, plural, shortName } from '../shared/format.js';
import { colorEnabled, palette, renderTable, tableReport } from '../shared/output.js';
import type { CliWorld } from '../shared/world.js';
import { moveDlqMessages } from './dlq-mover.js';

export type StrandedVerdict = 'stranded' | 'active' | 'waiting' | 'in-dlq';

export interface Continuation {
  queueName: string;
  payload: { runId: string; stepId?: string; stepName?: string };
  idempotencyKey: string;
  result?: 'enqueued' | 'already-enqueued' | 'would-enqueue';
  messageId?: string;
}

export interface RunAnalysis {
  runId: string;
  workflowName: string;
  status: string;
  lastSlot: number;
  lastEventAt?: string;
  verdict: StrandedVerdict;
  reason: string;
  continuations: Continuation[];
}

const timeOf = (v: unknown) =>
  v instanceof Date ? v.getTime() : typeof v === 'string' || typeof v === 'number' ? new Date(v).getTime() : Number.NaN;

/**
 * Decide whether a non-terminal run is stranded and what to enqueue for it.
 *
 * There is no cheap way to ask SQS "is there a message for run X" (a delayed or in-flight message
 * cannot be seen at all), so the event log stands in for it. A live run writes events: every
 * delivery that does work appends one, and every future delivery the runtime schedules is recorded
 * as a wait (`wait_created.resumeAt`) or a step retry (`step_retrying.retryAfter`). So:
 * - last event newer than `olderThanMs` -> active (a delivery may be in flight);
 * - a wait or retry due in the future -> waiting (its message is delayed in SQS or a schedule);
 * - an open hook, and nothing received on it since the last replay -> waiting for an external
 *   resume (nothing is owed);
 * - otherwise the run is stranded: whatever message should drive it was lost (purged queue, deleted
 *   message, a consumer bug).
 * The default threshold (1 h) is above the runtime's inline-step lease (860 s) and the queue's
 * visibility timeout, so a healthy slow step is not mistaken for a lost one.
 *
 * What is enqueued: for each unfinished step, a step message `{runId, stepId, stepName}` (a
 * `{runId}` replay would not do: the runtime re-dispatches a step under the step's own idempotency
 * key, which the World's durable dedupe still holds from the lost message); with no unfinished
 * step, a `{runId}` continuation, which replays the run (completing elapsed waits, processing
 * received hook payloads, or starting a pending run). Keys are derived from (runId, last slot[,
 * stepId]), so running the command twice sends one message, and a run that progresses and strands
 * again later gets a fresh key.
 */
function analyzeRun(
  run: Pick<WorkflowRun, 'runId' | 'workflowName' | 'status'>,
  events: Event[],
  opts: { now: number; olderThanMs: number; queuePrefix: string; inDlq?: boolean },
): RunAnalysis {
  const last = events[events.length - 1];
  const lastSlot = last ? (eventIdToSlot(last.eventId) ?? events.length) : 0;
  const lastAt = last ? new Date(last.createdAt).getTime() : undefined;
  const base = {
    runId: run.runId,
    workflowName: run.workflowName,
    status: run.status,
    lastSlot,
    lastEventAt: lastAt !== undefined ? new Date(lastAt).toISOString() : undefined,
    continuations: [] as Continuation[],
  };
  if (opts.inDlq) return { ...base, verdict: 'in-dlq', reason: 'has a message in the DLQ: use `redrive --run` for it' };
  if (lastAt !== undefined && opts.now - lastAt < opts.olderThanMs)
    return { ...base, verdict: 'active', reason: `last event ${formatDuration(opts.now - lastAt)} ago` };

  const steps = new Map<string, { name?: string; done: boolean; retryAt?: number }>();
  const waits = new Map<string, { resumeAt: number; done: boolean }>();
  const hooks = new Map<string, boolean>(); // open?
  for (const e of events) {
    // What the event does to a step, hook or wait (src/schema/event-kinds.ts, `lifecycle`).
    const life = eventKind(e.eventType)?.lifecycle;
    if (!life) continue;
    const d = (e as { eventData?: Record<string, unknown> }).eventData ?? {};
    const id = e.correlationId ?? '';
    const step = steps.get(id);
    switch (life.of) {
      case 'step':
        if (life.phase === 'ends') steps.set(id, { name: step?.name, done: true });
        else
          steps.set(id, {
            name: (d.stepName as string | undefined) ?? step?.name,
            done: false,
            ...(life.phase === 'retries' ? { retryAt: timeOf(d.retryAfter) } : {}),
          });
        break;
      case 'wait':
        if (life.phase === 'opens') waits.set(id, { resumeAt: timeOf(d.resumeAt), done: false });
        else waits.set(id, { resumeAt: waits.get(id)?.resumeAt ?? 0, done: true });
        break;
      case 'hook':
        if (life.phase !== 'receives') hooks.set(id, life.phase === 'opens');
        break;
    }
  }

  const timers: number[] = [];
  for (const s of steps.values())
    if (!s.done && s.retryAt !== undefined && s.retryAt > opts.now) timers.push(s.retryAt);
  for (const w of waits.values()) if (!w.done && w.resumeAt > opts.now) timers.push(w.resumeAt);
  if (timers.length > 0)
    return { ...base, verdict: 'waiting', reason: `next timer due ${formatTime(Math.min(...timers))}` };

  const queueName = `${opts.queuePrefix}${run.workflowName}`;
  const pending = [...steps].filter(([, s]) => !s.done);
  if (pending.length > 0) {
    const unnamed = pending.find(([, s]) => !s.name);
    if (unnamed)
      return { ...base, verdict: 'stranded', reason: `step ${unnamed[0]} has no recorded name; cannot re-dispatch it` };
    return {
      ...base,
      verdict: 'stranded',
      reason: `${plural(pending.length, 'unfinished step')} and no delivery since ${formatTime(lastAt)}`,
      continuations: pending.map(([stepId, s]) => ({
        queueName,
        payload: { runId: run.runId, stepId, stepName: s.name as string },
        idempotencyKey: `eve-world-aws:stranded:${run.runId}:${lastSlot}:${stepId}`,
      })),
    };
  }
  const openHooks = [...hooks].filter(([, open]) => open).length;
  const lastLife = last ? eventKind(last.eventType)?.lifecycle : undefined;
  if (openHooks > 0 && !(lastLife?.of === 'hook' && lastLife.phase === 'receives'))
    return { ...base, verdict: 'waiting', reason: `waiting for ${plural(openHooks, 'hook')} to be resumed` };
  return {
    ...base,
    verdict: 'stranded',
    reason: last ? `no delivery since ${formatTime(lastAt)} (last event ${last.eventType})` : 'no events',
    continuations: [
      { queueName, payload: { runId: run.runId }, idempotencyKey: `eve-world-aws:stranded:${run.runId}:${lastSlot}` },
    ],
  };
}

export interface StrandedOptions {
  olderThanMs: number;
  dryRun?: boolean;
  namespace?: string;
  now?: number;
  /** Skip the DLQ peek (tests that own the DLQ elsewhere). */
  skipDlq?: boolean;
}

export interface StrandedSummary {
  dryRun: boolean;
  olderThanMs: number;
  examined: number;
  stranded: number;
  enqueued: number;
  runs: RunAnalysis[];
}

async function allEvents(w: CliWorld, runId: string): Promise<Event[]> {
  const out: Event[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await w.world.events.list({ runId, pagination: { cursor, limit: 1000 }, resolveData: 'none' });
    out.push(...page.data);
    if (!page.hasMore || page.data.length === 0) return out;
    cursor = page.cursor ?? undefined;
  }
}

/** Runs of the DLQ's messages (peeked: received, then released at once). */
async function dlqRunIds(w: CliWorld): Promise<Set<string>> {
  const transport = createTransport(w.context);
  const [dlq, queue] = await Promise.all([transport.dlqUrl(), transport.queueUrl()]);
  const runIds = new Set<string>();
  // Every message's run id through onMessage; no per-message records kept (memory bound).
  await moveDlqMessages({
    sqs: w.clients.sqs,
    sourceUrl: dlq,
    targetUrl: queue,
    dryRun: true,
    visibilityTimeoutSeconds: 60,
    payloads: w.context.payloads,
    maxRecords: 0,
    onMessage: (m) => {
      if (m.runId !== undefined) runIds.add(m.runId);
    },
  });
  return runIds;
}

export async function redriveStranded(w: CliWorld, opts: StrandedOptions): Promise<StrandedSummary> {
  const now = opts.now ?? Date.now();
  const queuePrefix = getQueueTopicPrefix('workflow', resolveQueueNamespace(opts.namespace));
  const inDlq = opts.skipDlq ? new Set<string>() : await dlqRunIds(w);
  const summary: StrandedSummary = {
    dryRun: opts.dryRun === true,
    olderThanMs: opts.olderThanMs,
    examined: 0,
    stranded: 0,
    enqueued: 0,
    runs: [],
  };
  let cursor: string | undefined;
  do {
    const page = await w.world.runs.list({
      status: ['pending', 'running'],
      resolveData: 'none',
      pagination: { cursor, limit: 100, sortOrder: 'asc' },
    });
    for (const run of page.data) {
      summary.examined++;
      const a = analyzeRun(run, await allEvents(w, run.runId), {
        now,
        olderThanMs: opts.olderThanMs,
        queuePrefix,
        inDlq: inDlq.has(run.runId),
      });
      summary.runs.push(a);
      if (a.verdict !== 'stranded') continue;
      summary.stranded++;
      for (const c of a.continuations) {
        if (opts.dryRun) {
          c.result = 'would-enqueue';
          continue;
        }
        // Read the claim first only to report it; the dedupe itself is the World's conditional
        // claim inside queue(), which holds even when two redrives race.
        const prior = await w.clients.ddb.send(
          new GetItemCommand({
            TableName: w.config.tableName,
            Key: keysOf(keys.qkey(c.idempotencyKey)),
            ConsistentRead: true,
          }),
        );
        // For the run's own deployment (deployment affinity): the CLI is none.
        const res = await w.world.queue(c.queueName as never, c.payload, {
          idempotencyKey: c.idempotencyKey,
          ...(run.deploymentId ? { deploymentId: run.deploymentId } : {}),
        });
        c.messageId = res.messageId ?? undefined;
        c.result = prior.Item ? 'already-enqueued' : 'enqueued';
        if (!prior.Item) summary.enqueued++;
      }
    }
    cursor = page.hasMore ? (page.cursor ?? undefined) : undefined;
  } while (cursor);
  return summary;
}

export function renderStranded(s: StrandedSummary, color = colorEnabled()): string {
  const p = palette(color);
  if (s.examined === 0) return 'No pending or running runs; nothing is stranded.\n';
  const verdict = (v: StrandedVerdict) => (v === 'stranded' ? p.red(v) : v === 'in-dlq' ? p.yellow(v) : v);
  const action = (a: RunAnalysis) => {
    if (a.verdict !== 'stranded') return '-';
    if (a.continuations.length === 0) return p.red('cannot resume (see reason)');
    return a.continuations
      .map(
        (c) =>
          `${c.payload.stepId ? `step ${c.payload.stepName}` : 'continue run'}: ${(c.result ?? '').replace('-', ' ')}`,
      )
      .join('\n');
  };
  const rows = s.runs.map((a) => [
    a.runId,
    shortName(a.workflowName),
    a.status,
    formatTime(a.lastEventAt),
    verdict(a.verdict),
    a.reason,
    action(a),
  ]);
  const out = [renderTable(['Run', 'Workflow', 'Status', 'Last event', 'Verdict', 'Reason', 'Action'], rows, color)];
  const older = formatDuration(s.olderThanMs);
  if (s.dryRun)
    out.push(`Dry run: ${s.stranded} of ${s.examined} active runs stranded (idle > ${older}); nothing was enqueued.`);
  else
    out.push(
      `${s.stranded} of ${s.examined} active runs stranded (idle > ${older}); enqueued ${plural(s.enqueued, 'message')}.`,
    );
  return tableReport(out);
}
