/**
 * One message, one id to follow (src/queue/delivery-id.ts): the delivery `queue()` caused carries
 * the id `queue()` returned, M, even when it runs early under its own id E (core must see an id no
 * SQS copy carries):
 *
 * - E is minted from M, so M shows wherever E does;
 * - the flow route gets M as `x-eve-message-id`, covered by the signature (changing it breaks it);
 *   the copy dispatched as E after a failed early delivery carries it too; an ordinary delivery
 *   does not need it (its id is M);
 * - every log line inside the delivery carries `messageId` M and `deliveryId` E;
 * - the early delivery's span links to the span that sent the message, with M.
 */
import type { ValidQueueName } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { processSigningKey, verifySignature } from '../../../src/consumer/shared/signing.js';
import { messageIdOfDelivery } from '../../../src/queue/delivery-id.js';
import { createLogger, type Logger } from '../../../src/telemetry/log.js';
import { withSpan } from '../../../src/telemetry/tracing.js';
import { type InMemoryTracing, registerInMemoryTracing } from '../../helpers/otel.js';
import { makeWorld, PREFIX, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_oneid' as ValidQueueName;

let otel: InMemoryTracing;
const worlds: World[] = [];
beforeAll(() => {
  otel = registerInMemoryTracing();
});
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
  await otel.shutdown();
});

interface Seen {
  headers: Headers;
  body: Uint8Array;
  url: string;
  /** The JSON log line the handler wrote inside the delivery. */
  line: Record<string, unknown>;
}

/** A world whose in-process route records each request and one JSON log line written inside it. */
async function recordingWorld(earlyDelivery: boolean, fail?: (attempt: number) => boolean) {
  const w = await makeWorld({ register: false, start: false, queueOptions: { earlyDelivery } });
  worlds.push(w);
  const seen: Seen[] = [];
  let lines: string[] = [];
  const json: Logger = createLogger({ format: 'json', level: 'info', write: (_l, line) => lines.push(line) });
  const route = w.queue.createQueueHandler(PREFIX as never, async (body: any, meta) => {
    w.deliveries.push({ body, meta, at: Date.now() });
    json.info('[eve-world-aws] inside the delivery');
    if (fail?.(meta.attempt)) throw new Error('fails on purpose');
  });
  w.queue.registerHandler(PREFIX, async (req) => {
    const copy = req.clone();
    lines = [];
    const res = await route(req);
    seen.push({
      headers: copy.headers,
      body: new Uint8Array(await copy.arrayBuffer()),
      url: copy.url,
      line: JSON.parse(lines[0] ?? '{}'),
    });
    return res;
  });
  await w.queue.start();
  return { w, seen };
}

describe('the delivery queue() caused carries the id it returned', () => {
  test('an early delivery: E names M; x-eve-message-id is M, signed; its log lines and span carry M', async () => {
    const { w, seen } = await recordingWorld(true);
    otel.reset();
    // As core sends: inside its producer span.
    let producer = '';
    const { messageId } = await withSpan(
      'queue.publish',
      {},
      async () => {
        const span = (await import('@opentelemetry/api')).trace.getActiveSpan();
        producer = span?.spanContext().spanId ?? '';
        return w.queue.queue(Q, { runId: 'wrun_one_id' } as never);
      },
      { kind: 'producer' },
    );
    await waitFor(() => seen.length >= 1, 10_000, 'the early delivery');
    const early = seen[0];
    const E = early.headers.get('x-vqs-message-id') as string;
    expect(E).not.toBe(messageId);
    expect(E.startsWith(`${messageId}.early.`)).toBe(true);
    expect(messageIdOfDelivery(E)).toBe(messageId);
    expect(early.headers.get('x-eve-message-id')).toBe(messageId);

    // The signature covers it: the request verifies as sent, and not with the header changed.
    const verify = (headers: Headers) =>
      verifySignature(processSigningKey(), { url: early.url, headers }, early.body).ok;
    expect(verify(early.headers)).toBe(true);
    const forged = new Headers(early.headers);
    forged.set('x-eve-message-id', 'msg_SOMETHING_ELSE');
    expect(verify(forged)).toBe(false);
    const stripped = new Headers(early.headers);
    stripped.delete('x-eve-message-id');
    expect(verify(stripped)).toBe(false);

    // Logs: the message's id, and the delivery's own.
    expect(early.line).toMatchObject({ messageId, deliveryId: E, queue: Q, attempt: 1 });

    // The span: the early delivery's, linked to the sender's with M.
    await waitFor(
      () => otel.spans().find((s) => s.attributes['eve_world_aws.delivery.early'] === true),
      10_000,
      'the early delivery span',
    );
    const span = otel.spans().find((s) => s.attributes['eve_world_aws.delivery.early'] === true)!;
    expect(span.attributes['messaging.message.id']).toBe(E);
    expect(span.attributes['messaging.message.conversation_id']).toBe(messageId);
    expect(span.links).toHaveLength(1);
    expect(span.links[0].context.spanId).toBe(producer);
    expect(span.links[0].attributes?.['messaging.message.id']).toBe(messageId);
  });

  test('the copy dispatched as E after a failed early delivery carries M too; the SQS copy M needs no header', async () => {
    const { w, seen } = await recordingWorld(true, (attempt) => attempt === 1);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_one_id_again' } as never);
    await waitFor(() => seen.length >= 2, 20_000, 'the redelivery as E');
    const [first, second] = seen;
    const E = first.headers.get('x-vqs-message-id') as string;
    expect(second.headers.get('x-vqs-message-id')).toBe(E);
    expect(second.headers.get('x-vqs-message-attempt')).toBe('2');
    expect(second.headers.get('x-eve-message-id')).toBe(messageId);
    expect(second.line).toMatchObject({ messageId, deliveryId: E, attempt: 2 });
  });

  test('a key another process sent first: the early delivery ran under the id minted here, one log line joins it to the id queue() returned', async () => {
    const { w, seen } = await recordingWorld(true);
    const other = await makeWorld({ sameAs: w, start: false, register: false });
    worlds.push(other);
    const { messageId: first } = await other.queue.queue(Q, { runId: 'wrun_one_id_key' } as never, {
      idempotencyKey: 'k-one-id',
    });
    // This process has not sent the key: offered before its claim, delivered early at once.
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_one_id_key' } as never, { idempotencyKey: 'k-one-id' });
    expect(messageId).toBe(first);
    await waitFor(() => seen.find((x) => x.headers.has('x-eve-message-id')), 10_000, 'the early delivery');
    const early = seen.find((x) => x.headers.has('x-eve-message-id')) as Seen;
    const offered = early.headers.get('x-eve-message-id') as string;
    expect(offered).not.toBe(first);
    expect(messageIdOfDelivery(early.headers.get('x-vqs-message-id') as string)).toBe(offered);
    expect(w.logger.lines).toContain(
      `INFO [eve-world-aws] message ${offered} was delivered early, then its idempotency key was sent already: queue() returned ${first}`,
    );
  });

  test('an ordinary delivery is dispatched under M: no x-eve-message-id, its log lines carry M only', async () => {
    const { w, seen } = await recordingWorld(false);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_one_id_plain' } as never);
    await waitFor(() => seen.length >= 1, 20_000, 'the delivery');
    expect(seen[0].headers.get('x-vqs-message-id')).toBe(messageId);
    expect(seen[0].headers.has('x-eve-message-id')).toBe(false);
    expect(seen[0].line).toMatchObject({ messageId, attempt: 1 });
    expect(seen[0].line.deliveryId).toBeUndefined();
  });
});
