/**
 * Copies that go back to the queue without counting toward the DLQ: a replacement (a fresh copy
 * carrying the dispatches so far, then this one deleted), a park (an outage: hidden for the
 * cool-down, re-sent on its last allowed receive), a newer format (parked verbatim for its reader).
 *
 * Invariants:
 * - The attempt core sees (`x-vqs-message-attempt`) counts dispatches only: a receive that does not
 *   dispatch never leaves its copy to be received again; it is replaced by a fresh copy whose
 *   offset is the dispatches so far (`replace`). The count may run over by one (a replacement SQS
 *   refused), never under (see docs/design.md).
 * - A message of a newer format than this build reads (src/schema/formats.ts) is never decoded nor
 *   delivered: it is parked (hidden, or re-sent verbatim on its last allowed receive, so it never
 *   counts toward the DLQ) with a log line naming both versions, for a newer consumer to take.
 */
import { SQS_MAX_VISIBILITY_SECONDS } from '../../config/limits.js';
import { type Envelope, MSG_ATTR } from '../../queue/encoding.js';
import { jittered } from '../../util/jitter.js';
import { failureBackoffSeconds } from './backoff.js';
import type { Copy, Received } from './deps.js';
import { quoted } from './quoted.js';
import type { DeliveryOutcome, HoldCause, OutageReason } from './verdict.js';

/**
 * A receive that did not dispatch, and the message is to be delivered again in `seconds`: the copy
 * is replaced by a fresh one (same logical id) that SQS shows after `seconds`, carrying the
 * dispatches so far (`attempt - 1`) as its offset, and this copy is deleted. If the send fails the
 * copy is hidden for `seconds` instead (this receive then counts: never fewer than the dispatches).
 *
 * Two copies of one message can exist for a moment (the send succeeded, the delete failed): the old
 * one is received again after its visibility. That is an SQS duplicate like any other, which the
 * in-flight set and the step lease make safe (./decide.ts).
 */
export async function replace(
  { msg, envelope, attempt, deps, logger }: Copy,
  seconds: number,
  outcome: { reason: 'held' | 'parked' | 'rescheduled'; hold?: HoldCause; detail?: string },
): Promise<DeliveryOutcome> {
  const fresh: Envelope = { ...envelope, attemptOffset: Math.max(0, attempt - 1), deliverAt: undefined };
  const wait = Math.max(0, Math.ceil(seconds));
  const info = {
    messageId: envelope.messageId,
    ...(outcome.hold ? { hold: outcome.hold } : {}),
    ...(outcome.detail ? { detail: outcome.detail } : {}),
  };
  try {
    await deps.transport.send(fresh, wait, { now: (deps.now ?? Date.now)() });
    return { action: 'delete', reason: outcome.reason, ...info };
  } catch (err) {
    logger.warn(
      `[eve-world-aws] could not replace the copy of ${quoted(envelope.messageId)} (hidden ${wait} s instead): ${String(err)}`,
    );
    await deps.receipts
      .changeVisibility(msg.receiptHandle, Math.min(SQS_MAX_VISIBILITY_SECONDS, wait))
      .catch(() => undefined);
    const reason = outcome.reason === 'parked' ? 'unavailable' : 'deferred';
    return { action: 'keep', reason, ...info };
  }
}

/**
 * An outage: the copy waits for the breaker's cool-down (or the failure backoff; at most
 * `dependencyParkSeconds` when S3 or the secret source failed), with jitter. When the route may
 * have been reached (`reached`), the receive was a dispatch: the copy is hidden, and on its last
 * allowed receive replaced by a fresh one (same logical id, attempt carried), so an outage of any
 * length never moves a message to the DLQ. When nothing reached the route, the copy is replaced at
 * once (`replace`): the park does not raise the attempt.
 */
export async function park(
  copy: Copy,
  reason: OutageReason,
  detail: string,
  how: { reached: boolean; dependency?: boolean },
): Promise<DeliveryOutcome> {
  const { msg, envelope, attempt, deps } = copy;
  const base = deps.breaker?.isOpen
    ? deps.breaker.cooldownSeconds
    : how.dependency
      ? Math.max(1, Math.min(deps.config.dependencyParkSeconds, deps.config.visibilityTimeoutSeconds))
      : failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
  const seconds = Math.min(SQS_MAX_VISIBILITY_SECONDS, jittered(base));
  if (!how.reached) return replace(copy, seconds, { reason: 'parked', detail });
  if (msg.receiveCount >= deps.config.maxReceiveCount - 1) {
    await deps.transport.send({ ...envelope, attemptOffset: attempt }, seconds, {
      allowScheduler: false,
      now: (deps.now ?? Date.now)(),
    });
    return { action: 'delete', reason: 'parked', messageId: envelope.messageId };
  }
  await deps.receipts.changeVisibility(msg.receiptHandle, seconds).catch(() => undefined);
  return { action: 'keep', reason, messageId: envelope.messageId, detail };
}

/**
 * A message of a newer format: hidden for the failure backoff and, on its last allowed receive,
 * replaced by a verbatim copy (its format kept), so it never reaches the DLQ here. Not a verdict
 * on the flow route (the breaker is told neutral).
 */
export async function parkNewerFormat({ msg, deps, logger }: Received, reason: string): Promise<DeliveryOutcome> {
  deps.breaker?.neutral();
  const messageId = msg.attributes[MSG_ATTR.id];
  logger.warn(
    `[eve-world-aws] SQS message ${msg.sqsMessageId}${messageId ? ` (message ${quoted(messageId)})` : ''}: ${reason}; not delivered, not counted toward the DLQ`,
  );
  const seconds = jittered(failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds));
  if (msg.receiveCount >= deps.config.maxReceiveCount - 1) {
    await deps.transport.sendVerbatim(msg.body, msg.attributes, seconds);
    return { action: 'delete', reason: 'parked', messageId };
  }
  await deps.receipts.changeVisibility(msg.receiptHandle, seconds).catch(() => undefined);
  return { action: 'keep', reason: 'deferred', messageId, detail: reason };
}
