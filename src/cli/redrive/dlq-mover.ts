/**
 * The DLQ mover of `eve-world-aws redrive`: moves dead-lettered messages back to the queue in the
 * order receive -> send -> delete. A crash (or error) between send and delete leaves the message in
 * both queues: the next redrive delivers it twice, which is harmless because every World write is
 * idempotent, whereas delete-before-send could lose it. The World's `eve.*` attributes are copied
 * unchanged, except that an S3-offloaded body that could expire under the redriven copy (dead
 * letters are up to 14 days old, the bucket keeps `queue/` for 30) is first copied to a fresh key
 * and the copy points there (src/queue/body-lifetime.ts). Dropped: the log tail, and the failure count
 * (`eve.failures`, src/consumer/delivery/failures.ts), so a redriven message gets the queue's whole
 * allowance of failures again, as SQS's receive count starts over.
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
import { queueNameOf } from '../../aws/arn.js';
import type { PayloadStore } from '../../context/payload-store.js';
import { bodyNeededUntil, ensureBodyLifetime } from '../../queue/body-lifetime.js';
import {
  decodePayload,
  encodeEnvelope,
  envelopeFromMessage,
  MSG_ATTR,
  s3PlaceholderBody,
} from '../../queue/encoding.js';
import { formatTime } from '../format.js';
import { colorEnabled, palette, renderTable } from '../output.js';

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
  /** Reads S3-offloaded bodies to find their run id, and re-homes those that would expire. */
  payloads?: Pick<PayloadStore, 'getBytes' | 'putBlob'>;
  /** The clock a body's remaining lifetime is judged by (tests move it). */
  now?: () => number;
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
export async function runIdOfMessage(
  m: Message,
  payloads?: Pick<PayloadStore, 'getBytes'>,
): Promise<{ runId?: string; queueName?: string; messageId?: string }> {
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
    // The log tail vouches only for a first delivery; a dead letter had earlier ones. The failure
    // count starts over, as SQS's receive count does on a redriven copy.
    if (!k.startsWith('eve.') || k === MSG_ATTR.logTail || k === MSG_ATTR.failures) continue;
    out[k] = {
      DataType: v.DataType,
      ...(v.StringValue !== undefined ? { StringValue: v.StringValue } : {}),
      ...(v.BinaryValue !== undefined ? { BinaryValue: v.BinaryValue } : {}),
    };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Body and attributes of the redriven copy: the dead letter's, with an offloaded body re-homed
 * when its key would not outlive the new copy. If the body cannot be read (already expired), the
 * copy is sent unchanged: the redrive never stops on it, and the consumer reports the body.
 */
export async function redrivenCopy(
  m: Message,
  payloads: Pick<PayloadStore, 'getBytes' | 'putBlob'> | undefined,
  now: number,
): Promise<{ body: string; attributes: Record<string, MessageAttributeValue> | undefined }> {
  const body = m.Body ?? '';
  const attributes = copiedAttributes(m);
  let env = envelopeFromMessage(body, stringAttrs(m));
  if (typeof env === 'string') return { body, attributes };
  // A Scheduler envelope carries its tail and failure count in the body: drop them there too.
  const tailInBody = !attributes?.[MSG_ATTR.queue] && (env.logTail !== undefined || env.failures !== undefined);
  if (tailInBody) env = { ...env, logTail: undefined, failures: undefined };
  if (env.s3Key === undefined || !payloads) return { body: tailInBody ? encodeEnvelope(env) : body, attributes };
  let moved = env;
  try {
    moved = await ensureBodyLifetime(payloads, env, bodyNeededUntil({ kind: 'now' }, now), now);
  } catch {
    return { body: tailInBody ? encodeEnvelope(env) : body, attributes };
  }
  if (moved.s3Key === env.s3Key || moved.s3Key === undefined)
    return { body: tailInBody ? encodeEnvelope(env) : body, attributes };
  if (attributes?.[MSG_ATTR.s3]) {
    attributes[MSG_ATTR.s3] = { DataType: 'String', StringValue: moved.s3Key };
    return { body: s3PlaceholderBody(moved.s3Key), attributes };
  }
  // A Scheduler envelope (no attributes): the pointer lives in the body.
  return { body: encodeEnvelope(moved), attributes };
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
 *   pass ended comes back as a repeat and is only re-held (its newest receipt kept), never counted
 *   or moved again.
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
  /** A send or delete failed: record it, hold the message and end the pass (the rest is held). */
  const fail = (rec: MovedMessage, m: Message, result: 'send-failed' | 'delete-failed', err: unknown) => {
    rec.result = result;
    rec.error = errText(err);
    summary.failed++;
    hold(m);
    summary.ended = 'failure';
    stop = true;
    opts.onMessage?.(rec);
  };
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
            const copy = await redrivenCopy(m, opts.payloads, (opts.now ?? Date.now)());
            const res = await sqs.send(
              new SendMessageCommand({
                QueueUrl: opts.targetUrl,
                MessageBody: copy.body,
                MessageAttributes: copy.attributes,
              }),
            );
            rec.newSqsMessageId = res.MessageId;
          } catch (err) {
            fail(rec, m, 'send-failed', err);
            continue;
          }
          try {
            await opts.onSent?.(rec);
            await sqs.send(new DeleteMessageCommand({ QueueUrl: opts.sourceUrl, ReceiptHandle: m.ReceiptHandle }));
            rec.result = 'moved';
            summary.moved++;
          } catch (err) {
            // The copy is on the queue and the original is still in the DLQ: a duplicate, never a loss.
            fail(rec, m, 'delete-failed', err);
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
        .map((r) =>
          sqs
            .send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: r, VisibilityTimeout: 0 }))
            .catch(() => undefined),
        ),
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
  if (s.messages.length === 0 && s.unlisted === 0) return `The DLQ ${from} is empty; nothing to redrive.\n`;
  const paint = (r: MoveResult) =>
    r === 'moved'
      ? p.green(RESULT_LABEL[r])
      : r === 'would-move'
        ? p.yellow(RESULT_LABEL[r])
        : r === 'skipped'
          ? p.dim(RESULT_LABEL[r])
          : p.red(RESULT_LABEL[r]);
  const rows = s.messages.map((m) => [
    m.messageId ?? m.sqsMessageId,
    m.queueName ?? '?',
    m.runId ?? '?',
    formatTime(m.sentAt),
    paint(m.result),
  ]);
  const out = [renderTable(['Message', 'Queue (logical)', 'Run', 'First sent', 'Result'], rows, color)];
  const filter = s.runId ? ` of run ${s.runId}` : '';
  if (s.dryRun)
    out.push(
      `Dry run: would move ${s.matched} message${s.matched === 1 ? '' : 's'}${filter} from ${from} to ${to}; nothing was changed.`,
    );
  else out.push(`Moved ${s.moved} message${s.moved === 1 ? '' : 's'}${filter} from ${from} to ${to}.`);
  if (s.unlisted > 0)
    out.push(`(${s.unlisted} more message${s.unlisted === 1 ? '' : 's'} not listed; the counts include them.)`);
  if (s.ended === 'max-messages')
    out.push(
      p.yellow(
        `Stopped after ${s.messages.length + s.unlisted} messages (one pass's memory bound); run redrive again for the rest.`,
      ),
    );
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
