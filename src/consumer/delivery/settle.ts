/**
 * The settle step: the settle policy, one verdict -> the SQS calls for the received copy and the
 * breaker's news, and the outcome the caller acts on (delete or keep). Replacements and parks are
 * in ./replace.ts, the backoffs in ./backoff.ts.
 *
 * Invariants:
 * - A copy is deleted only after its handler acked it, or after its replacement (next hop, long
 *   `timeoutSeconds`, a copy held or parked without a dispatch) has been accepted by SQS or the
 *   Scheduler.
 * - Outages never push a message into the DLQ: of the flow route (unreachable, 502/503/504, 429,
 *   408, or any 5xx while the circuit is open), of S3 reading an offloaded body, or of the
 *   signing-secret source. A copy the route may have received is parked (hidden for the cool-down)
 *   and, on its last allowed receive, replaced by a fresh copy; a copy the route never received is
 *   replaced at once. Only the message's own fault counts: malformed, 4xx, a handler that keeps
 *   failing, an offloaded body that is gone (src/aws/sdk-errors.ts, `isObjectFault`).
 * - A `timeoutSeconds` is not a failure and never pushes a message into the DLQ (`defer`).
 * - Poison (malformed, 4xx, a handler that keeps failing) is retried with backoff and dead-lettered
 *   after the redrive policy's `maxReceiveCount` failed dispatches, counted in the message across
 *   replacements (./failures.ts); the failure that dead-letters it logs exactly one DLQ line.
 */
import { SQS_MAX_VISIBILITY_SECONDS } from '../../config/limits.js';
import type { Copy } from './deps.js';
import { failed } from './failures.js';
import { quoted } from './quoted.js';
import { park, replace } from './replace.js';
import type { DeliveryOutcome, Verdict } from './verdict.js';

/**
 * Turns a verdict on a decoded copy into SQS calls. `dispatched`: this receive handed the request
 * to the flow route. A receive that did not (a hold, a park before the route was reached, a copy
 * settled by its early delivery's verdict) and leaves the message to be delivered again replaces
 * the copy (./replace.ts states the attempt count's rule). Undispatched poison is always found
 * before the breaker was asked (`early`: decode, build; an early delivery's failure is not taken as
 * this copy's verdict but dispatched again, see ./decide.ts), so it is kept like any failure and
 * counts toward the DLQ.
 */
export async function settle(copy: Copy, verdict: Verdict): Promise<DeliveryOutcome> {
  const { msg, envelope, attempt, deps, logger, dispatched } = copy;
  const messageId = envelope.messageId;
  const where = `message ${quoted(envelope.messageId)} on ${quoted(envelope.queueName)}`;
  switch (verdict.kind) {
    case 'ack':
      deps.breaker?.succeeded();
      return { action: 'delete', reason: 'ack', messageId };

    case 'hop':
      // sendPlanned re-homes an offloaded body that would expire before this hop can be received.
      await deps.transport.sendPlanned(
        envelope,
        { kind: 'sqs', delaySeconds: verdict.delaySeconds, deliverAt: verdict.deliverAt },
        (deps.now ?? Date.now)(),
      );
      deps.breaker?.neutral();
      return { action: 'delete', reason: 'redelayed', messageId };

    case 'later':
      deps.breaker?.succeeded();
      if (!dispatched) {
        // An early delivery's `timeoutSeconds`: a fresh copy (its own id) delayed that long.
        return replace(copy, verdict.seconds, { reason: 'rescheduled' });
      }
      return defer(copy, verdict.seconds);

    case 'hold':
      // Not a verdict on the route.
      deps.breaker?.neutral();
      return replace(copy, verdict.seconds, { reason: 'held', hold: verdict.cause, detail: verdict.detail });

    case 'paused':
      // The circuit is open: the route was not called, the copy waits out the cool-down.
      return park(copy, 'unavailable', 'circuit open: the flow route is failing', { reached: false });

    case 'aborted':
      deps.breaker?.neutral();
      // Shutdown or deadline: hand the copy back at once instead of hiding it for the visibility.
      await deps.receipts.release(msg.receiptHandle).catch(() => undefined);
      return { action: 'keep', reason: 'released', messageId };

    case 'outage': {
      // Unreachable, 502-504, 429 and 408 are always an outage; a plain 500 only while the circuit
      // is open (several messages failing in a row), otherwise it is the handler failing. S3 or the
      // secret source failing is an outage of neither route nor message: the breaker is not told.
      let open = false;
      if (verdict.of === 'route') {
        open = deps.breaker?.failed(messageId, verdict.detail, verdict.ambiguous) ?? false;
      } else {
        deps.breaker?.neutral();
      }
      const outage = open || !verdict.ambiguous;
      // Only a dispatch can be ambiguous (an answer of the route): an outage found before one
      // (a request that could not be built) is never, so it always parks.
      if (!outage) return failed(copy, 'failed', verdict.detail);
      logger.warn(
        `[eve-world-aws] ${where}: ${verdict.detail}; kept for retry (an outage does not count toward the DLQ)`,
      );
      return park(copy, verdict.reason, verdict.detail, {
        reached: dispatched && verdict.reached,
        dependency: verdict.of === 'dependency',
      });
    }

    case 'poison':
      // A poison copy that was the probe gives the slot back at once; one found before the
      // breaker was asked never touches it.
      if (!verdict.early) deps.breaker?.neutral();
      if (verdict.reason === 'unauthorized') {
        logger.error(
          `[eve-world-aws] flow route refused ${where} as unauthorized; check EVE_WORLD_AWS_SIGNING_SECRET is the same on both sides (${verdict.detail})`,
        );
      } else if (verdict.reason !== 'malformed') {
        logger.warn(`[eve-world-aws] ${where} attempt ${attempt} failed: ${verdict.detail}`);
      }
      return failed(copy, verdict.reason, verdict.detail);
  }
}

/**
 * Redeliver the same logical message after `seconds`. Preferred: keep the SQS copy and change its
 * visibility (same copy, receive count continues). A re-send (same logical id, attempt offset
 * carried) is used when the wait exceeds SQS's 12 h visibility cap, when SQS refuses the change, or
 * when the receive count has reached maxReceiveCount: a `timeoutSeconds` is not a failure and must
 * never push the message into the DLQ.
 */
async function defer({ msg, envelope, attempt, deps, logger }: Copy, timeoutSeconds: number): Promise<DeliveryOutcome> {
  const seconds = Math.ceil(timeoutSeconds);
  if (seconds <= SQS_MAX_VISIBILITY_SECONDS && msg.receiveCount < deps.config.maxReceiveCount) {
    try {
      await deps.receipts.changeVisibility(msg.receiptHandle, seconds);
      return { action: 'keep', reason: 'deferred', messageId: envelope.messageId };
    } catch (err) {
      logger.warn(
        `[eve-world-aws] ChangeMessageVisibility(${seconds}) failed for ${envelope.messageId}, re-sending instead: ${String(err)}`,
      );
    }
  }
  await deps.transport.send({ ...envelope, attemptOffset: attempt, deliverAt: undefined }, seconds, {
    now: (deps.now ?? Date.now)(),
  });
  return { action: 'delete', reason: 'rescheduled', messageId: envelope.messageId };
}
