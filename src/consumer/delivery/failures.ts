/**
 * Poison: a message's own failures (a failed dispatch: a handler that threw, a 4xx; a request the
 * message made unbuildable), counted in the message and dead-lettered at the queue's limit.
 *
 * SQS counts receives, and a receive that does not dispatch replaces its copy (./replace.ts), so
 * SQS's count starts over at every hold, park or early verdict: a failing message whose receives
 * alternate with holds would never reach the redrive policy's `maxReceiveCount`. So the consumer
 * counts failed dispatches itself, in the message (`eve.failures`, src/queue/encoding.ts), and
 * moves the message to the DLQ itself.
 *
 * Invariants:
 * - A failed dispatch of a decoded message replaces its copy by one counting it (`failures + 1`,
 *   visible after the failure backoff) or, when that count reaches the redrive policy's
 *   `maxReceiveCount`, moves it to the policy's DLQ: the same queue and limit SQS would use, read
 *   from the queue (src/queue/transport.ts, `deadLetterTarget`), so every consumer agrees whatever
 *   it was configured with. Every other replacement carries the count unchanged.
 * - A move loses nothing: the DLQ copy is sent before this one is deleted; a failed send keeps this
 *   copy (the failure backoff, SQS's count goes on). Applied twice (the delete failed, the copy
 *   fails once more) it leaves two DLQ copies of one message, which `redrive` delivers as an SQS
 *   duplicate. `redrive` drops the count, as SQS's own count starts over on a redriven copy.
 * - Where the count cannot be kept (a malformed message, no readable redrive policy, a replacement
 *   SQS refused) the copy is kept as before, for SQS's receive count and redrive policy to end it.
 *   A receive that never settles (the consumer crashed on it) is counted by SQS only.
 * - The failure that dead-letters a message logs exactly one `DLQ:` line.
 */
import { queueNameOf } from '../../aws/arn.js';
import { decodePayload, type Envelope } from '../../queue/encoding.js';
import type { DeadLetterTarget } from '../../queue/transport.js';
import type { Logger } from '../../telemetry/log.js';
import { failureBackoffSeconds } from './backoff.js';
import type { Copy, Received } from './deps.js';
import { quoted } from './quoted.js';
import type { DeliveryOutcome, PoisonReason } from './verdict.js';

/**
 * A failure of the copy's envelope (`dispatched`: the flow route was called): counted in a fresh
 * copy, or dead-lettered at the limit; kept for SQS to count when neither can be done.
 */
export async function failed(copy: Copy, reason: PoisonReason, detail: string): Promise<DeliveryOutcome> {
  const { msg, envelope, attempt, deps, logger, dispatched } = copy;
  const now = (deps.now ?? Date.now)();
  let target: DeadLetterTarget | undefined;
  try {
    target = await deps.transport.deadLetterTarget(now);
  } catch (err) {
    logger.warn(
      `[eve-world-aws] cannot read the queue's redrive policy (the failure is left to SQS to count): ${String(err)}`,
    );
  }
  if (!target) return keepFailed(copy, reason, detail);
  const failures = (envelope.failures ?? 0) + 1;
  // The dispatches so far: this one counts when the route was called.
  const counted: Envelope = {
    ...envelope,
    attemptOffset: dispatched ? attempt : Math.max(0, attempt - 1),
    failures,
    deliverAt: undefined,
  };
  if (failures >= target.maxReceiveCount) {
    try {
      await deps.transport.sendDeadLetter(counted, target.url, now);
    } catch (err) {
      logger.warn(
        `[eve-world-aws] could not move ${quoted(envelope.messageId)} to the DLQ (kept for retry): ${String(err)}`,
      );
      return keepFailed(copy, reason, detail);
    }
    const count = `failed ${failures}/${target.maxReceiveCount} dispatches`;
    reportDeadLetter(envelope, msg.body, queueNameOf(target.url), count, detail, logger);
    return { action: 'delete', reason: 'dead-lettered', failure: reason, messageId: envelope.messageId, detail };
  }
  const seconds = failureBackoffSeconds(failures, deps.config.visibilityTimeoutSeconds);
  try {
    await deps.transport.send(counted, seconds, { allowScheduler: false, now });
  } catch (err) {
    logger.warn(
      `[eve-world-aws] could not replace the failed copy of ${quoted(envelope.messageId)} (kept for retry): ${String(err)}`,
    );
    return keepFailed(copy, reason, detail);
  }
  return { action: 'delete', reason: 'retried', failure: reason, messageId: envelope.messageId, detail };
}

/**
 * A failure kept on its copy: hidden for the failure backoff, SQS's receive count goes on and its
 * redrive policy moves the copy after `maxReceiveCount` receives.
 */
export async function keepFailed(
  { msg, envelope, deps, logger }: Received & { envelope?: Envelope },
  reason: PoisonReason,
  detail: string,
): Promise<DeliveryOutcome> {
  if (msg.receiveCount >= deps.config.maxReceiveCount) {
    reportDeadLetter(
      envelope,
      msg.body,
      deps.config.deadLetterQueue,
      `failed ${msg.receiveCount}/${deps.config.maxReceiveCount} receives`,
      detail,
      logger,
      msg.sqsMessageId,
    );
  }
  // Back after a short backoff rather than a whole visibility timeout: most failures are transient.
  const seconds = failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
  await deps.receipts.changeVisibility(msg.receiptHandle, seconds).catch(() => undefined);
  return { action: 'keep', reason, messageId: envelope?.messageId, detail };
}

function runIdOf(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const p = decodePayload(body) as { runId?: unknown };
    return typeof p?.runId === 'string' ? p.runId : undefined;
  } catch {
    return undefined;
  }
}

/** The single DLQ line of a message (`count` says what reached the limit). */
function reportDeadLetter(
  envelope: Envelope | undefined,
  rawBody: string,
  dlq: string,
  count: string,
  detail: string,
  logger: Logger,
  sqsMessageId = '',
): void {
  const runId = runIdOf(envelope?.body ?? rawBody);
  // Names from the message are quoted (JSON): a hostile one cannot forge log lines.
  logger.error(
    `[eve-world-aws] DLQ: run ${runId === undefined ? 'unknown' : quoted(runId)} on queue ${envelope ? quoted(envelope.queueName) : 'unknown'} (message ${envelope ? quoted(envelope.messageId) : sqsMessageId}) ` +
      `${count}; it moves to ${dlq} (reason: ${JSON.stringify(detail.slice(0, 300))})`,
    { runId, messageId: envelope?.messageId ?? sqsMessageId, queue: envelope?.queueName },
  );
}
