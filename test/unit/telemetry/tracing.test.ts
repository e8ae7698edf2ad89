/**
 * Spans through the optional OpenTelemetry API (src/telemetry/tracing.ts, spans.ts) with an
 * in-memory SDK registered: parentage, error status, W3C traceparent out and back in; and without
 * an SDK, that nothing is carried.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withDeliverySpan, withSendSpan } from '../../../src/telemetry/spans.js';
import {
  currentTraceparent,
  parseTraceparent,
  tracingAvailable,
  withRemoteParent,
  withSpan,
} from '../../../src/telemetry/tracing.js';
import { type InMemoryTracing, parentOf, registerInMemoryTracing } from '../../helpers/otel.js';

describe('without an SDK', () => {
  it('runs the function and carries no traceparent', async () => {
    expect(await tracingAvailable()).toBe(true); // the peer is installed here, no SDK registered yet
    const seen = await withSpan('x', { a: 1 }, async () => currentTraceparent());
    expect(seen).toBeUndefined();
  });
});

describe('with an in-memory SDK', () => {
  let otel: InMemoryTracing;
  beforeAll(() => {
    otel = registerInMemoryTracing();
  });
  beforeEach(() => otel.reset());
  afterAll(() => otel.shutdown());

  it('a send span inside a delivery span is its child, in the same trace', async () => {
    await withDeliverySpan(
      { queue: 'eve-world-queue', sqsMessageId: 'sqs-1', receiveCount: 2, sentAt: 1000, receivedAt: 1500 },
      async (span) => {
        span.setAttributes({ 'eve_world_aws.delivery.outcome': 'acked' });
        await withSendSpan({ queue: 'eve-world-queue', via: 'sqs', messageId: 'm-2' }, async () => undefined);
      },
    );
    const spans = otel.spans();
    const delivery = spans.find((s) => s.name === 'process eve-world-queue');
    const send = spans.find((s) => s.name === 'send eve-world-queue');
    expect(delivery?.attributes).toMatchObject({
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'eve-world-queue',
      'messaging.message.id': 'sqs-1',
      'eve_world_aws.receive_count': 2,
      'eve_world_aws.queue_age_ms': 500,
      'eve_world_aws.delivery.outcome': 'acked',
    });
    expect(send?.spanContext().traceId).toBe(delivery?.spanContext().traceId);
    expect(parentOf(send!)).toBe(delivery?.spanContext().spanId);
  });

  it('records the error name (not the message) and rethrows', async () => {
    class PayloadError extends Error {
      override name = 'PayloadError';
    }
    await expect(
      withSpan('boom', undefined, async () => Promise.reject(new PayloadError('secret contents'))),
    ).rejects.toThrow('secret contents');
    const [s] = otel.spans();
    expect(s.status).toEqual({ code: 2, message: 'PayloadError' });
    expect(s.attributes['error.type']).toBe('PayloadError');
    expect(JSON.stringify({ a: s.attributes, e: s.events, st: s.status })).not.toContain('secret contents');
  });

  it('traceparent out of one span and back in parents the next span', async () => {
    let header: string | undefined;
    await withSpan('consumer side', undefined, async () => {
      header = currentTraceparent();
    });
    expect(parseTraceparent(header)).toMatchObject({ traceFlags: 1 });
    await withRemoteParent(header, () => withSpan('flow route side', undefined, async () => undefined));
    const [consumer, route] = otel.spans();
    expect(route.spanContext().traceId).toBe(consumer.spanContext().traceId);
    expect(parentOf(route)).toBe(consumer.spanContext().spanId);
  });

  it('a malformed or all-zero traceparent is ignored (a new root)', async () => {
    for (const bad of [
      'garbage',
      `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`,
      `01-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
      await withRemoteParent(bad, () => withSpan('root', undefined, async () => undefined));
    }
    expect(otel.spans().map(parentOf)).toEqual([undefined, undefined, undefined]);
  });
});
