/**
 * The World's spans, by name and attribute (OpenTelemetry messaging conventions where they apply, `eve_world_aws.*` for
 * what they do not cover). Each helper runs `fn` inside its span; see ./tracing.ts for what happens without an SDK.
 *
 *   process <queue>    consumer   one SQS copy through the delivery pipeline, or one early delivery
 *                                 (before its copy; linked to the span that sent the message, with
 *                                 the id `queue()` returned); the flow route (core's
 *                                 `workflow.route.flow` / `workflow.execute`) runs inside it
 *   send <queue>       producer   one SQS send or Scheduler schedule, under core's `queue.publish`
 *   eve_world_aws.events.create   one `events.create` write (event type, retries, slot bumps,
 *                                 cancellation reasons)
 *   eve_world_aws.stream.flush    one stream write (chunks, bytes)
 *
 * Run ids appear on spans (a trace is per run anyway) and never on metrics (./metrics.ts).
 */
import { activeSpanEvent, type SpanAttributes, type SpanHandle, withSpan } from './tracing.js';

export interface DeliverySpanInfo {
  /** SQS queue name the copy was received from (`messaging.destination.name`). */
  queue: string;
  /** SQS MessageId of this copy, or an early delivery's own id (`messaging.message.id`). */
  sqsMessageId: string;
  /** SQS ApproximateReceiveCount. */
  receiveCount: number;
  /** When the copy was sent (SQS SentTimestamp, epoch ms), for the queue age. */
  sentAt?: number;
  /** When the consumer received it (epoch ms): the span starts there. */
  receivedAt?: number;
  /** Delivered early, before its SQS copy (src/consumer/delivery/early/offer.ts): there is no copy yet. */
  early?: boolean;
  /**
   * The span that sent the message (core's `queue.publish`, its `traceparent`), linked from this
   * one with the message's id: an early delivery, which runs outside the sender's trace.
   */
  sentBy?: { traceparent: string; messageId: string };
}

/** The delivery's outcome and what the envelope told, learned once decoded. */
export interface DeliverySpanResult {
  /** Logical message id (`x-vqs-message-id`, the same on every copy). */
  messageId?: string;
  /** Logical queue (`__wkf_workflow_…`). */
  logicalQueue?: string;
  attempt?: number;
  outcome?: string;
}

export function deliveryResultAttributes(r: DeliverySpanResult): SpanAttributes {
  return {
    'messaging.message.conversation_id': r.messageId,
    'eve_world_aws.queue.name': r.logicalQueue,
    'eve_world_aws.attempt': r.attempt,
    'eve_world_aws.delivery.outcome': r.outcome,
  };
}

/** One SQS copy, received, through the pipeline (or an early delivery). */
export function withDeliverySpan<T>(info: DeliverySpanInfo, fn: (span: SpanHandle) => Promise<T>): Promise<T> {
  const { sentBy } = info;
  const attributes = sentBy && { 'messaging.message.id': sentBy.messageId, 'messaging.operation.type': 'send' };
  const attrs: SpanAttributes = {
    'messaging.system': 'aws_sqs',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': info.queue,
    'messaging.message.id': info.sqsMessageId,
    'eve_world_aws.receive_count': info.receiveCount,
    'eve_world_aws.delivery.early': info.early || undefined,
    'eve_world_aws.queue_age_ms':
      info.sentAt !== undefined ? Math.max(0, (info.receivedAt ?? Date.now()) - info.sentAt) : undefined,
  };
  return withSpan(`process ${info.queue}`, attrs, fn, {
    kind: 'consumer',
    startTime: info.receivedAt,
    ...(sentBy ? { links: [{ traceparent: sentBy.traceparent, attributes }] } : {}),
  });
}

/**
 * One SQS send or Scheduler schedule (a child of core's `queue.publish` when core sends);
 * `messageId` is the logical message id.
 */
export function withSendSpan<T>(
  info: { queue: string; via: 'sqs' | 'scheduler'; messageId: string; delaySeconds?: number },
  fn: (span: SpanHandle) => Promise<T>,
): Promise<T> {
  return withSpan(
    `${info.via === 'scheduler' ? 'schedule' : 'send'} ${info.queue}`,
    {
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': info.via === 'scheduler' ? 'create' : 'send',
      'messaging.operation.name': info.via === 'scheduler' ? 'schedule' : 'send',
      'messaging.destination.name': info.queue,
      'messaging.message.conversation_id': info.messageId,
      'eve_world_aws.delay_seconds': info.delaySeconds,
    },
    fn,
    { kind: 'producer' },
  );
}

/**
 * One `events.create`. Inside it, the write's retries, slot bumps and (on a refused transaction)
 * cancellation reasons are added with {@link noteWriteRetry}, {@link noteSlotBump} and
 * {@link noteCancellation} (events on its span: ./tracing.ts `activeSpanEvent`).
 */
export function withStorageWriteSpan<T>(
  info: { eventType: string; runId?: string },
  fn: (span: SpanHandle) => Promise<T>,
): Promise<T> {
  return withSpan(
    'eve_world_aws.events.create',
    { 'db.system.name': 'aws.dynamodb', 'eve_world_aws.event.type': info.eventType, 'workflow.run.id': info.runId },
    fn,
  );
}

export function withStreamFlushSpan<T>(
  info: { chunks: number; bytes: number },
  fn: (span: SpanHandle) => Promise<T>,
): Promise<T> {
  return withSpan(
    'eve_world_aws.stream.flush',
    { 'eve_world_aws.stream.chunks': info.chunks, 'eve_world_aws.stream.bytes': info.bytes },
    fn,
  );
}

/** A retried attempt of the active write (throttled, conflicting, …): an event on its span. */
export function noteWriteRetry(reason: string): void {
  activeSpanEvent('eve_world_aws.write.retry', { 'eve_world_aws.retry.reason': reason });
}

/** The active write lost its log slot to another writer and took the next one. */
export function noteSlotBump(slot?: number): void {
  activeSpanEvent('eve_world_aws.write.slot_bump', { 'eve_world_aws.slot': slot });
}

/** DynamoDB refused the active write's transaction; `reasons` are the per-item codes. */
export function noteCancellation(reasons: readonly string[]): void {
  activeSpanEvent('eve_world_aws.write.cancelled', { 'eve_world_aws.cancellation_reasons': reasons.join(',') });
}
