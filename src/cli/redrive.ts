/**
 * `eve-world-aws redrive`: put work back on the queue.
 *
 * 1. DLQ -> queue (default): every dead-lettered message, or only those of `--run <id>`, is moved
 *    back in the order receive -> send -> delete. A crash (or error) between send and delete
 *    leaves the message in both queues: the next redrive delivers it twice, which is harmless
 *    because every World write is idempotent, whereas delete-before-send could lose it.
 * 2. `--stranded`: runs that are not terminal, have nothing scheduled and have not written an
 *    event for `--older-than` get their continuation re-enqueued (see {@link analyzeRun}).
 */
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { Event, WorkflowRun } from '@workflow/world';
import { eventIdToSlot, getQueueTopicPrefix, resolveQueueNamespace } from '@workflow/world';
import { Command, InvalidArgumentError } from 'commander';
import { keys } from '../ddb.js';
import type { PayloadStore } from '../payloads.js';
import { decodePayload, envelopeFromMessage } from '../queue/encoding.js';
import { SqsTransport } from '../queue/transport.js';
import { queueNameOf } from '../resources.js';
import { formatDuration, formatTime, parseDuration, parsePositiveInt } from './format.js';
import { CliError, colorEnabled, EXIT_FAILURE, palette, printJson, renderTable } from './output.js';
import { type CliWorld, withWorld } from './world.js';

// ------------------------------------------------------------------ DLQ -> queue

export type MoveResult = 'moved' | 'would-move' | 'skipped' | 'send-failed' | 'delete-failed';

export interface MovedMessage {
  sqsMessageId: string;
  /** Logical id (`eve.id`) and queue name (`eve.queue`), when the message carries them. */
  messageId?: string;
  queueName?: string;
  runId?: string;
  /** When the message was first sent (SQS SentTimestamp, kept across the dead-lettering). */
  sentAt?: string;
  result: MoveResult;
  /** SQS id of the copy sent to the queue. */
  newSqsMessageId?: string;
  error?: string;
}

export interface MoveSummary {
  source: string;
  target: string;
  dryRun: boolean;
  runId?: string;
  moved: number;
  matched: number;
  skipped: number;
  failed: number;
  /**
   * One record per message, up to `maxRecords`; `unlisted` counts the records left out (the
   * counters above always cover every message).
   */
  messages: MovedMessage[];
  unlisted: number;
  /** Why the pass ended: the DLQ had nothing more, `--limit`, a failure, or `maxMessages`. */
  ended: 'empty' | 'nothing-new' | 'limit' | 'failure' | 'max-messages';
}

export interface MoveOptions {
  sqs: SQSClient;
  sourceUrl: string;
  targetUrl: string;
  /** Only messages of this run (others stay in the DLQ untouched). */
  runId?: string;
  dryRun?: boolean;
  /** Stop after this many matching messages. */
  limit?: number;
  /**
   * How long received messages stay hidden while the pass runs (s). Messages are released
   * (made visible) at the end; after a crash they reappear by themselves after this long.
   */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait of each receive (s); one empty receive ends the pass. */
  waitTimeSeconds?: number;
  /** Reads S3-offloaded bodies to find their run id. */
  payloads?: Pick<PayloadStore, 'getBytes'>;
  /** Called after a message's copy was sent and before the original is deleted (tests). */
  onSent?: (msg: MovedMessage) => Promise<void> | void;
  /** Called once per message of the pass (also those left out of `messages`). */
  onMessage?: (msg: MovedMessage) => void;
  /** Per-message records kept in the summary (memory bound). Default 1000. */
  maxRecords?: number;
  /**
   * Distinct messages one pass looks at (memory bound: the pass keeps each one's id and receipt
   * handle). Default 100 000; the pass then ends with `ended: 'max-messages'`; run it again.
   */
  maxMessages?: number;
}

/** Receives in a row that bring no message new to the pass before it ends (see moveDlqMessages). */
const NOTHING_NEW_RECEIVES = 3;

const stringAttrs = (m: Message): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]));

/** Run id of a World message: from the payload body (inline, envelope or S3), else undefined. */
export async function runIdOfMessage(m: Message, payloads?: Pick<PayloadStore, 'getBytes'>): Promise<{ runId?: string; queueName?: string; messageId?: string }> {
  const env = envelopeFromMessage(m.Body ?? '', stringAttrs(m));
  if (typeof env === 'string') return {};
  let text = env.body;
  if (text === undefined && env.s3Key !== undefined && payloads) {
    try {
      text = Buffer.from(await payloads.getBytes(env.s3Key)).toString('utf8');
    } catch {
      text = undefined; // a missing body object does not stop the redrive; the run is just unknown
    }
  }
  let runId: string | undefined;
  if (text !== undefined) {
    try {
      const p = decodePayload(text) as { runId?: unknown };
      if (typeof p?.runId === 'string') runId = p.runId;
    } catch {
      // not a World payload
    }
  }
  return { runId, queueName: env.queueName, messageId: env.messageId };
}

/**
 * The World's own attributes, unchanged. Anything else on a dead-lettered message (e.g. the
 * diagnostics EventBridge Scheduler adds to the messages it dead-letters) describes the failure,
 * not the message, and is not copied.
 */
export function copiedAttributes(m: Message): Record<string, MessageAttributeValue> | undefined {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
    if (!k.startsWith('eve.')) continue;
    out[k] = { DataType: v.DataType, ...(v.StringValue !== undefined ? { StringValue: v.StringValue } : {}), ...(v.BinaryValue !== undefined ? { BinaryValue: v.BinaryValue } : {}) };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function errText(err: unknown): string {
  const e = err as { name?: string; message?: string };
  return `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}`;
}

/**
 * Move messages from `sourceUrl` to `targetUrl` (receive -> send -> delete). Stops at the first
 * failure and reports it; every message it holds but did not move is released back to the
 * source at the end, so nothing is hidden for longer than the pass.
 *
 * Invariants (a DLQ larger than one visibility timeout's worth of work included):
 * - Each message is looked at, and moved, at most once per pass: the pass remembers the SQS
 *   message ids it has seen; a held (skipped / dry-run) message whose visibility ran out before the
 *   pass ended comes back as a repeat and is only re-held, never counted or moved again.
 * - The pass ends: on an empty receive, or after {@link NOTHING_NEW_RECEIVES} receives in a row
 *   with no message new to the pass (only repeats left), or at `limit`, a failure or `maxMessages`.
 * - Memory is bounded: at most `maxMessages` ids + receipt handles and `maxRecords` records.
 */
export async function moveDlqMessages(opts: MoveOptions): Promise<MoveSummary> {
  const { sqs } = opts;
  const vt = opts.visibilityTimeoutSeconds ?? 300;
  const summary: MoveSummary = {
    source: opts.sourceUrl,
    target: opts.targetUrl,
    dryRun: opts.dryRun === true,
    runId: opts.runId,
    moved: 0,
    matched: 0,
    skipped: 0,
    failed: 0,
    messages: [],
    unlisted: 0,
    ended: 'empty',
  };
  const maxRecords = opts.maxRecords ?? 1000;
  const maxMessages = opts.maxMessages ?? 100_000;
  // SQS id -> latest receipt handle of every message held (not moved): released at the end.
  const held = new Map<string, string>();
  const hold = (m: Message) => {
    if (m.ReceiptHandle) held.set(m.MessageId ?? m.ReceiptHandle, m.ReceiptHandle);
  };
  const seen = new Set<string>();
  let stop = false;
  let nothingNew = 0;
  try {
    while (!stop) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: opts.sourceUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: opts.waitTimeSeconds ?? 1,
          VisibilityTimeout: vt,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['SentTimestamp'],
        }),
      );
      const batch = out.Messages ?? [];
      if (batch.length === 0) break;
      if (batch.every((m) => seen.has(m.MessageId ?? ''))) {
        // Only repeats: held messages whose visibility ran out during a long pass.
        for (const m of batch) hold(m);
        if (++nothingNew >= NOTHING_NEW_RECEIVES) {
          summary.ended = 'nothing-new';
          break;
        }
        continue;
      }
      nothingNew = 0;
      for (const m of batch) {
        const sqsMessageId = m.MessageId ?? '';
        // A repeat, past the limit or a failure: hold it only to release it untouched.
        if (stop || seen.has(sqsMessageId)) {
          hold(m);
          continue;
        }
        if (seen.size >= maxMessages) {
          summary.ended = 'max-messages';
          stop = true;
          hold(m);
          continue;
        }
        seen.add(sqsMessageId);
        const info = await runIdOfMessage(m, opts.payloads);
        const sent = m.Attributes?.SentTimestamp;
        const rec: MovedMessage = {
          sqsMessageId,
          ...info,
          sentAt: sent ? new Date(Number(sent)).toISOString() : undefined,
          result: 'skipped',
        };
        if (summary.messages.length < maxRecords) summary.messages.push(rec);
        else summary.unlisted++;
        const matches = opts.runId === undefined || info.runId === opts.runId;
        if (!matches) {
          summary.skipped++;
          hold(m);
          opts.onMessage?.(rec);
          continue;
        }
        summary.matched++;
        if (opts.dryRun) {
          rec.result = 'would-move';
          hold(m);
        } else {
          try {
            const res = await sqs.send(
              new SendMessageCommand({ QueueUrl: opts.targetUrl, MessageBody: m.Body ?? '', MessageAttributes: copiedAttributes(m) }),
            );
            rec.newSqsMessageId = res.MessageId;
          } catch (err) {
            rec.result = 'send-failed';
            rec.error = errText(err);
            summary.failed++;
            hold(m);
            summary.ended = 'failure';
            stop = true;
            opts.onMessage?.(rec);
            continue;
          }
          try {
            await opts.onSent?.(rec);
            await sqs.send(new DeleteMessageCommand({ QueueUrl: opts.sourceUrl, ReceiptHandle: m.ReceiptHandle }));
            rec.result = 'moved';
            summary.moved++;
          } catch (err) {
            // The copy is on the queue and the original is still in the DLQ: a duplicate, never a loss.
            rec.result = 'delete-failed';
            rec.error = errText(err);
            summary.failed++;
            hold(m);
            summary.ended = 'failure';
            stop = true;
            opts.onMessage?.(rec);
            continue;
          }
        }
        opts.onMessage?.(rec);
        if (opts.limit !== undefined && summary.matched >= opts.limit) {
          summary.ended = 'limit';
          stop = true;
        }
      }
    }
  } finally {
    await release(sqs, opts.sourceUrl, [...held.values()]);
  }
  return summary;
}

/** Make held messages visible again at once (best effort: they reappear after the timeout anyway). */
async function release(sqs: SQSClient, url: string, receipts: string[]): Promise<void> {
  // 10 at a time: a large pass must not open thousands of requests at once.
  for (let i = 0; i < receipts.length; i += 10) {
    await Promise.all(
      receipts
        .slice(i, i + 10)
        .map((r) => sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: r, VisibilityTimeout: 0 })).catch(() => undefined)),
    );
  }
}

const RESULT_LABEL: Record<MoveResult, string> = {
  moved: 'moved',
  'would-move': 'would move',
  skipped: 'skipped (other run)',
  'send-failed': 'FAILED to send (left in the DLQ)',
  'delete-failed': 'sent, NOT deleted (duplicate)',
};

export function renderMoveSummary(s: MoveSummary, color = colorEnabled()): string {
  const p = palette(color);
  const from = queueNameOf(s.source);
  const to = queueNameOf(s.target);
  if (s.messages.length === 0) return `The DLQ ${from} is empty; nothing to redrive.\n`;
  const paint = (r: MoveResult) =>
    r === 'moved' ? p.green(RESULT_LABEL[r]) : r === 'would-move' ? p.yellow(RESULT_LABEL[r]) : r === 'skipped' ? p.dim(RESULT_LABEL[r]) : p.red(RESULT_LABEL[r]);
  const rows = s.messages.map((m) => [m.messageId ?? m.sqsMessageId, m.queueName ?? '?', m.runId ?? '?', formatTime(m.sentAt), paint(m.result)]);
  const out = [renderTable(['Message', 'Queue (logical)', 'Run', 'First sent', 'Result'], rows, color)];
  const filter = s.runId ? ` of run ${s.runId}` : '';
  if (s.dryRun) out.push(`Dry run: would move ${s.matched} message${s.matched === 1 ? '' : 's'}${filter} from ${from} to ${to}; nothing was changed.`);
  else out.push(`Moved ${s.moved} message${s.moved === 1 ? '' : 's'}${filter} from ${from} to ${to}.`);
  if (s.unlisted > 0) out.push(`(${s.unlisted} more message${s.unlisted === 1 ? '' : 's'} not listed; the counts include them.)`);
  if (s.ended === 'max-messages') out.push(p.yellow(`Stopped after ${s.messages.length + s.unlisted} messages (one pass's memory bound); run redrive again for the rest.`));
  for (const m of s.messages.filter((x) => x.error)) {
    out.push(
      p.red(`x ${m.messageId ?? m.sqsMessageId}: ${m.error}`) +
        (m.result === 'delete-failed'
          ? '\n  The copy was sent but the original is still in the DLQ; a second redrive delivers it twice (harmless: the World is idempotent).'
          : '\n  Nothing was sent; the message is still in the DLQ. Fix the error and run redrive again.'),
    );
  }
  return `${out.join('\n')}\n`;
}

// ------------------------------------------------------------------ stranded runs

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

const eventData = (e: Event) => ((e as { eventData?: Record<string, unknown> }).eventData ?? {}) as Record<string, unknown>;
const timeOf = (v: unknown) => (v instanceof Date ? v.getTime() : typeof v === 'string' || typeof v === 'number' ? new Date(v).getTime() : Number.NaN);

/**
 * Decide whether a non-terminal run is stranded and what to enqueue for it.
 *
 * There is no cheap way to ask SQS "is there a message for run X" (a delayed or in-flight message
 * cannot be seen at all), so the event log stands in for it. A live run writes events: every
 * delivery that does work appends one, and every future delivery the runtime schedules is
 * recorded as a wait (`wait_created.resumeAt`) or a step retry (`step_retrying.retryAfter`). So:
 * - last event newer than `olderThanMs` -> active (a delivery may be in flight);
 * - a wait or retry due in the future -> waiting (its message is delayed in SQS or a schedule);
 * - an open hook, and nothing received on it since the last replay -> waiting for an external
 *   resume (nothing is owed);
 * - otherwise the run is stranded: whatever message should drive it was lost (purged queue,
 *   deleted message, a consumer bug).
 * The default threshold (1 h) is above the runtime's inline-step lease (860 s) and the queue's
 * visibility timeout, so a healthy slow step is not mistaken for a lost one.
 *
 * What is enqueued: for each unfinished step, a step message `{runId, stepId, stepName}` (a
 * `{runId}` replay would not do: the runtime re-dispatches a step under the step's own
 * idempotency key, which the World's durable dedupe still holds from the lost message); with no
 * unfinished step, a `{runId}` continuation, which replays the run (completing elapsed waits,
 * processing received hook payloads, or starting a pending run). Keys are derived from
 * (runId, last slot[, stepId]), so running the command twice sends one message, and a run that
 * progresses and strands again later gets a fresh key.
 */
export function analyzeRun(
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
  if (lastAt !== undefined && opts.now - lastAt < opts.olderThanMs) {
    return { ...base, verdict: 'active', reason: `last event ${formatDuration(opts.now - lastAt)} ago` };
  }

  const steps = new Map<string, { name?: string; done: boolean; retryAt?: number }>();
  const waits = new Map<string, { resumeAt: number; done: boolean }>();
  const hooks = new Map<string, boolean>(); // open?
  for (const e of events) {
    const d = eventData(e);
    const id = e.correlationId ?? '';
    const step = steps.get(id);
    switch (e.eventType) {
      case 'step_created':
      case 'step_started':
        steps.set(id, { name: (d.stepName as string | undefined) ?? step?.name, done: false });
        break;
      case 'step_retrying':
        steps.set(id, { name: (d.stepName as string | undefined) ?? step?.name, done: false, retryAt: timeOf(d.retryAfter) });
        break;
      case 'step_completed':
      case 'step_failed':
        steps.set(id, { name: step?.name, done: true });
        break;
      case 'wait_created':
        waits.set(id, { resumeAt: timeOf(d.resumeAt), done: false });
        break;
      case 'wait_completed':
        waits.set(id, { resumeAt: waits.get(id)?.resumeAt ?? 0, done: true });
        break;
      case 'hook_created':
        hooks.set(id, true);
        break;
      case 'hook_disposed':
        hooks.set(id, false);
        break;
    }
  }

  const timers: number[] = [];
  for (const s of steps.values()) if (!s.done && s.retryAt !== undefined && s.retryAt > opts.now) timers.push(s.retryAt);
  for (const w of waits.values()) if (!w.done && w.resumeAt > opts.now) timers.push(w.resumeAt);
  if (timers.length > 0) {
    return { ...base, verdict: 'waiting', reason: `next timer due ${formatTime(Math.min(...timers))}` };
  }

  const queueName = `${opts.queuePrefix}${run.workflowName}`;
  const pending = [...steps].filter(([, s]) => !s.done);
  if (pending.length > 0) {
    const unnamed = pending.filter(([, s]) => !s.name);
    if (unnamed.length > 0) {
      return { ...base, verdict: 'stranded', reason: `step ${unnamed[0][0]} has no recorded name; cannot re-dispatch it` };
    }
    return {
      ...base,
      verdict: 'stranded',
      reason: `${pending.length} unfinished step${pending.length === 1 ? '' : 's'} and no delivery since ${formatTime(lastAt)}`,
      continuations: pending.map(([stepId, s]) => ({
        queueName,
        payload: { runId: run.runId, stepId, stepName: s.name as string },
        idempotencyKey: `eve-world-aws:stranded:${run.runId}:${lastSlot}:${stepId}`,
      })),
    };
  }
  const openHooks = [...hooks].filter(([, open]) => open).length;
  if (openHooks > 0 && last?.eventType !== 'hook_received') {
    return { ...base, verdict: 'waiting', reason: `waiting for ${openHooks} hook${openHooks === 1 ? '' : 's'} to be resumed` };
  }
  return {
    ...base,
    verdict: 'stranded',
    reason: last ? `no delivery since ${formatTime(lastAt)} (last event ${last.eventType})` : 'no events',
    continuations: [{ queueName, payload: { runId: run.runId }, idempotencyKey: `eve-world-aws:stranded:${run.runId}:${lastSlot}` }],
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
  const transport = new SqsTransport(w.world.context);
  const [dlq, queue] = await Promise.all([transport.dlqUrl(), transport.queueUrl()]);
  const runIds = new Set<string>();
  await moveDlqMessages({
    sqs: w.clients.sqs,
    sourceUrl: dlq,
    targetUrl: queue,
    dryRun: true,
    visibilityTimeoutSeconds: 60,
    payloads: w.world.context.payloads,
    maxRecords: 0,
    onMessage: (m) => {
      if (m.runId !== undefined) runIds.add(m.runId);
    },
  });
  return runIds;
}

export async function redriveStranded(w: CliWorld, opts: StrandedOptions): Promise<StrandedSummary> {
  const now = opts.now ?? Date.now();
  const namespace = resolveQueueNamespace(opts.namespace);
  const queuePrefix = getQueueTopicPrefix('workflow', namespace);
  const inDlq = opts.skipDlq ? new Set<string>() : await dlqRunIds(w);
  const summary: StrandedSummary = { dryRun: opts.dryRun === true, olderThanMs: opts.olderThanMs, examined: 0, stranded: 0, enqueued: 0, runs: [] };
  let cursor: string | undefined;
  do {
    const page = await w.world.runs.list({ status: ['pending', 'running'], resolveData: 'none', pagination: { cursor, limit: 100, sortOrder: 'asc' } });
    for (const run of page.data) {
      summary.examined++;
      const a = analyzeRun(run, await allEvents(w, run.runId), { now, olderThanMs: opts.olderThanMs, queuePrefix, inDlq: inDlq.has(run.runId) });
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
        const prior = await w.clients.ddb.send(new GetItemCommand({ TableName: w.config.tableName, Key: qkeyAttrs(c.idempotencyKey), ConsistentRead: true }));
        const res = await w.world.queue(c.queueName as never, c.payload, { idempotencyKey: c.idempotencyKey });
        c.messageId = res.messageId ?? undefined;
        c.result = prior.Item ? 'already-enqueued' : 'enqueued';
        if (!prior.Item) summary.enqueued++;
      }
    }
    cursor = page.hasMore ? (page.cursor ?? undefined) : undefined;
  } while (cursor);
  return summary;
}

function qkeyAttrs(key: string) {
  const k = keys.qkey(key);
  return { PK: { S: k.PK }, SK: { S: k.SK } };
}

export function renderStranded(s: StrandedSummary, color = colorEnabled()): string {
  const p = palette(color);
  if (s.examined === 0) return 'No pending or running runs; nothing is stranded.\n';
  const verdict = (v: StrandedVerdict) => (v === 'stranded' ? p.red(v) : v === 'in-dlq' ? p.yellow(v) : v);
  const action = (a: RunAnalysis) => {
    if (a.verdict !== 'stranded') return '-';
    if (a.continuations.length === 0) return p.red('cannot resume (see reason)');
    return a.continuations
      .map((c) => `${c.payload.stepId ? `step ${c.payload.stepName}` : 'continue run'}: ${(c.result ?? '').replace('-', ' ')}`)
      .join('\n');
  };
  const rows = s.runs.map((a) => [a.runId, a.workflowName, a.status, formatTime(a.lastEventAt), verdict(a.verdict), a.reason, action(a)]);
  const out = [renderTable(['Run', 'Workflow', 'Status', 'Last event', 'Verdict', 'Reason', 'Action'], rows, color)];
  const older = formatDuration(s.olderThanMs);
  if (s.dryRun) out.push(`Dry run: ${s.stranded} of ${s.examined} active runs stranded (idle > ${older}); nothing was enqueued.`);
  else out.push(`${s.stranded} of ${s.examined} active runs stranded (idle > ${older}); enqueued ${s.enqueued} message${s.enqueued === 1 ? '' : 's'}.`);
  return `${out.join('\n')}\n`;
}

// ------------------------------------------------------------------ command

interface RedriveOptions {
  run?: string;
  dryRun?: boolean;
  limit?: number;
  json?: boolean;
  stranded?: boolean;
  olderThan: number;
  namespace?: string;
}

function parseNamespace(v: string): string {
  if (!/^[a-z][a-z0-9]*$/.test(v)) throw new InvalidArgumentError('must be lowercase letters and digits, starting with a letter (e.g. eve6576652d64656d6f).');
  return v;
}

export function redriveCommand(): Command {
  return new Command('redrive')
    .description('Move dead-lettered messages back to the queue, or re-enqueue stranded runs (--stranded)')
    .option('--run <runId>', 'only messages of this run')
    .option('--dry-run', 'show what would be moved or enqueued and change nothing')
    .option('--limit <n>', 'move at most this many messages', parsePositiveInt)
    .option('--json', 'print the result as JSON')
    .option('--stranded', 'instead of the DLQ: find active runs that nothing will wake and re-enqueue their continuation')
    .option('--older-than <duration>', 'with --stranded: only runs idle (no new event) for this long', parseDuration, 3_600_000)
    .option('--namespace <ns>', 'with --stranded: queue namespace of the app (default: $WORKFLOW_QUEUE_NAMESPACE; eve agents use eve<hex of the agent name>)', parseNamespace)
    .addHelpText(
      'after',
      `
DLQ mode moves each message receive -> send -> delete: a failure between send and delete leaves a
duplicate (harmless: the World is idempotent), never a loss. The message attributes (eve.*) are
copied unchanged. A pass ends on a DLQ of any size: each message is looked at and moved at
most once (skipped and dry-run messages that reappear during a long pass are recognised), and one
pass handles at most 100,000 messages (run it again for the rest).

--stranded looks at pending/running runs whose last event is older than --older-than, with no
wait or retry due in the future, no hook waiting for a resume and no message in the DLQ, and
enqueues their continuation with an idempotency key derived from (run, last event), so running it
twice sends one message.

Examples:
  eve-world-aws redrive --dry-run
  eve-world-aws redrive --run wrun_01JD...
  eve-world-aws redrive --stranded --older-than 2h

Exit codes: 0 done; 1 a message could not be moved or an AWS error; 2 bad usage or configuration.`,
    )
    .action(async (opts: RedriveOptions) => {
      if (opts.stranded && (opts.run || opts.limit)) throw new CliError('--run and --limit apply to the DLQ mode, not --stranded', 2);
      await withWorld({}, async (w) => {
        if (opts.stranded) {
          const s = await redriveStranded(w, { olderThanMs: opts.olderThan, dryRun: opts.dryRun, namespace: opts.namespace });
          if (opts.json) printJson({ mode: 'stranded', ...s });
          else process.stdout.write(renderStranded(s));
          return;
        }
        const transport = new SqsTransport(w.world.context);
        const [sourceUrl, targetUrl] = await Promise.all([transport.dlqUrl(), transport.queueUrl()]);
        const s = await moveDlqMessages({
          sqs: w.clients.sqs,
          sourceUrl,
          targetUrl,
          runId: opts.run,
          dryRun: opts.dryRun,
          limit: opts.limit,
          payloads: w.world.context.payloads,
        });
        if (opts.json) printJson({ mode: 'dlq', ...s });
        else process.stdout.write(renderMoveSummary(s));
        if (s.failed > 0) throw new CliError('', EXIT_FAILURE);
      });
    });
}
