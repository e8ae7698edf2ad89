/**
 * What one delivery tells the operator: its span (`process <queue>`, the parent of core's invocation, see
 * src/telemetry/spans.ts), the log fields every line inside it carries, and its metrics (outcome, queue age, latency).
 * Wraps the pipeline's {@link DeliveryOutcome} without changing it.
 *
 * Outcome -> metric (src/telemetry/metrics.ts):
 *   ack                                              DeliveriesAcked (+ DeliveryLatency)
 *   rescheduled, redelayed, deferred, held           DeliveriesDeferred
 *   held or deferred because a copy runs here        DeliveriesRefusedCopy (`hold: 'copy-running'`)
 *   held for another live deployment (affinity)      DeliveriesHeldForDeployment (`hold: 'other-deployment'`)
 *   moved to the DLQ (its failed dispatches reached the limit),
 *   or failed/malformed/unauthorized kept on the last receive DeliveriesDeadLettered
 *   a failed dispatch replaced by a copy counting it  DeliveriesRetried
 *   any other keep (an outage), parked               DeliveriesRetried
 * The metric is chosen from the outcome's structured fields (`reason`, `hold`), never its text.
 */

import { type Envelope, MSG_ATTR } from '../../queue/encoding.js';
import { withLogContext } from '../../telemetry/log.js';
import { countMetric, type MetricName, observeMetric } from '../../telemetry/metrics.js';
import { deliveryResultAttributes, withDeliverySpan } from '../../telemetry/spans.js';
import type { InboundMessage } from './deps.js';
import type { DeliveryOutcome } from './verdict.js';

export function outcomeMetric(outcome: DeliveryOutcome, receiveCount: number, maxReceiveCount: number): MetricName {
  if (outcome.hold === 'copy-running') return 'DeliveriesRefusedCopy';
  if (outcome.hold === 'other-deployment') return 'DeliveriesHeldForDeployment';
  const reason: DeliveryOutcome['reason'] = outcome.reason;
  switch (reason) {
    case 'ack':
      return 'DeliveriesAcked';
    case 'dead-lettered':
      return 'DeliveriesDeadLettered';
    case 'retried':
      return 'DeliveriesRetried';
    case 'rescheduled':
    case 'redelayed':
    case 'held':
    case 'deferred':
      return 'DeliveriesDeferred';
    case 'failed':
    case 'malformed':
    case 'unauthorized':
      return receiveCount >= maxReceiveCount ? 'DeliveriesDeadLettered' : 'DeliveriesRetried';
    case 'parked':
    case 'transport':
    case 'unavailable':
    case 'released':
      return 'DeliveriesRetried';
    default:
      // Every reason is mapped: a new one fails to compile here.
      return reason satisfies never;
  }
}

const METRIC_OUTCOME: Record<string, string> = {
  DeliveriesAcked: 'acked',
  DeliveriesRetried: 'retried',
  DeliveriesDeferred: 'deferred',
  DeliveriesDeadLettered: 'dead-lettered',
  DeliveriesRefusedCopy: 'refused-copy',
  DeliveriesHeldForDeployment: 'held-for-deployment',
};

/**
 * Run one delivery (`deliver`) inside its span and log context, and count its outcome. `queue`
 * is the SQS queue's name; `now` the pipeline's clock.
 */
export function observeDelivery(
  msg: InboundMessage,
  queue: string,
  maxReceiveCount: number,
  deliver: () => Promise<DeliveryOutcome>,
  now: () => number = Date.now,
): Promise<DeliveryOutcome> {
  const receivedAt = now();
  const messageId = msg.attributes[MSG_ATTR.id];
  const logicalQueue = msg.attributes[MSG_ATTR.queue];
  const offset = Number(msg.attributes[MSG_ATTR.attemptOffset] ?? 0) || 0;
  const attempt = messageId ? offset + Math.max(1, msg.receiveCount) : undefined;
  if (msg.sentAt !== undefined) observeMetric('QueueAge', receivedAt - msg.sentAt);
  return withDeliverySpan(
    { queue, sqsMessageId: msg.sqsMessageId, receiveCount: msg.receiveCount, sentAt: msg.sentAt, receivedAt },
    (span) =>
      withLogContext({ messageId, queue: logicalQueue, attempt }, async () => {
        const outcome = await deliver();
        const metric = outcomeMetric(outcome, msg.receiveCount, maxReceiveCount);
        countMetric(metric);
        if (metric === 'DeliveriesAcked' && msg.sentAt !== undefined) {
          const due = Number(msg.attributes[MSG_ATTR.deliverAt]);
          observeMetric('DeliveryLatency', now() - Math.max(msg.sentAt, Number.isFinite(due) ? due : 0));
        }
        span.setAttributes(
          deliveryResultAttributes({
            messageId: outcome.messageId ?? messageId,
            logicalQueue,
            attempt,
            outcome: METRIC_OUTCOME[metric],
          }),
        );
        return outcome;
      }),
  );
}

/**
 * Run an early delivery (./early/offer.ts) of the message `envelope` under its own id `earlyId`
 * inside its span and log context: both carry the message's id (the one `queue()` returned) and
 * the delivery's, and the span links to the sender's (`producer`, a `traceparent`). Its outcome is
 * counted once, by the SQS copy that takes its verdict, so nothing is counted here.
 */
export function observeEarlyDelivery<T>(
  envelope: Envelope,
  earlyId: string,
  queue: string,
  producer: string | undefined,
  deliver: () => Promise<T>,
): Promise<T> {
  const attempt = envelope.attemptOffset + 1;
  const { messageId } = envelope;
  return withDeliverySpan(
    {
      queue,
      sqsMessageId: earlyId,
      receiveCount: 0,
      receivedAt: Date.now(),
      early: true,
      ...(producer ? { sentBy: { traceparent: producer, messageId } } : {}),
    },
    (span) =>
      withLogContext({ messageId, deliveryId: earlyId, queue: envelope.queueName, attempt }, () => {
        span.setAttributes(deliveryResultAttributes({ messageId, logicalQueue: envelope.queueName, attempt }));
        return deliver();
      }),
  );
}
