/**
 * The DLQ mover of `eve-world-aws redrive`: moves dead-lettered messages back to the queue in the
 * order receive -> send -> delete. A crash (or error) between send and delete leaves the message in
 * both queues: the next redrive delivers it twice, harmless as every World write is idempotent,
 * whereas delete-before-send could lose it. Copy: ./redriven-copy.ts; report: ./move-summary.ts.
 */
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { describeError } from '../../aws/sdk-errors.js';
import type { PayloadStore } from '../../context/payload-store.js';
import { mapLimited } from '../../util/concurrency.js';
import { redrivenCopy, runIdOfMessage } from './redriven-copy.js';

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

/**
 * Move messages from `sourceUrl` to `targetUrl` (receive -> send -> delete). Stops at the first
 * failure and reports it; every message it holds but did not move is released back to the source at
 * the end, so nothing is hidden for longer than the pass.
 *
 * Invariants (a DLQ larger than one visibility timeout's worth of work included):
 * - Each message is looked at, and moved, at most once per pass: the pass remembers the SQS message
 *   ids it has seen; a held (skipped / dry-run) message whose visibility ran out before the pass
 *   ended comes back as a repeat and is only re-held (its newest receipt kept), never counted or
 *   moved again.
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
    rec.error = describeError(err);
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
        if (opts.runId !== undefined && info.runId !== opts.runId) {
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
            // The copy is on the queue, the original still in the DLQ: a duplicate, never a loss.
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
  await mapLimited(receipts, 10, (r) =>
    sqs
      .send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: r, VisibilityTimeout: 0 }))
      .catch(() => undefined),
  );
}
