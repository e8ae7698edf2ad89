/**
 * Pure parts of the queue: typed-JSON encoding, delay planning, and the createQueueHandler HTTP
 * contract including signatures (accepted / forged / stale / unsigned / replayed) and malformed
 * bodies. No emulator needed.
 */
import { describe, expect, it } from 'vitest';
import { createQueueHandler } from '../../src/consumer/handler.js';
import { computeSignature, signatureHeaders } from '../../src/consumer/signing.js';
import { atExpression, planDelay, planHop, scheduleName } from '../../src/queue/delays.js';
import {
  decodeEnvelope,
  decodePayload,
  encodeEnvelope,
  encodePayload,
  envelopeFromMessage,
} from '../../src/queue/encoding.js';

const SECRET = 'test-secret-0123456789abcdef';
const Q = '__wkf_workflow_demo';

function request(body: string | Uint8Array, headers: Record<string, string>): Request {
  return new Request('http://127.0.0.1/.well-known/workflow/v1/flow', {
    method: 'POST',
    headers,
    body: body as BodyInit,
  });
}

function deliveryHeaders(body: string, extra: Record<string, string> = {}, now = Date.now()) {
  const base = {
    'content-type': 'application/json',
    'x-vqs-queue-name': Q,
    'x-vqs-message-id': 'msg_01ABC',
    'x-vqs-message-attempt': '1',
  };
  return {
    ...base,
    ...signatureHeaders(SECRET, { queueName: Q, messageId: 'msg_01ABC', attempt: 1, body }, now),
    ...extra,
  };
}

function recorder(result: unknown = undefined) {
  const calls: { body: unknown; meta: unknown }[] = [];
  const fn = async (body: unknown, meta: unknown) => {
    calls.push({ body, meta });
    if (result instanceof Error) throw result;
    return result;
  };
  return { calls, fn };
}

describe('typed JSON encoding', () => {
  it('round-trips Uint8Array (with null bytes), Buffer and nesting exactly', () => {
    const bytes = new Uint8Array([0, 1, 2, 0, 255, 0]);
    const payload = {
      runId: 'wrun_1',
      runInput: { input: bytes, nested: [Buffer.from([0, 0, 7])] },
      s: 'x\u0000y\uffff',
    };
    const text = encodePayload(payload);
    expect(text).not.toMatch(/[\ufffe\uffff]/);
    const back = decodePayload(text) as any;
    expect(back.runInput.input).toBeInstanceOf(Uint8Array);
    expect(Array.from(back.runInput.input)).toEqual([0, 1, 2, 0, 255, 0]);
    expect(Array.from(back.runInput.nested[0])).toEqual([0, 0, 7]);
    expect(back.s).toBe('x\u0000y\uffff');
  });

  it('encodes a subarray view by its own bytes, not the whole buffer', () => {
    const whole = new Uint8Array([9, 9, 1, 2, 9]);
    const back = decodePayload(encodePayload({ v: whole.subarray(2, 4) })) as any;
    expect(Array.from(back.v)).toEqual([1, 2]);
  });

  it('scheduler envelope round-trips and attribute-less bodies are recognised', () => {
    const env = {
      queueName: Q,
      messageId: 'msg_1',
      attemptOffset: 2,
      deliverAt: 123,
      body: '{"a":1}',
      headers: { x: 'y' },
    };
    const text = encodeEnvelope(env);
    expect(decodeEnvelope(text)).toEqual(env);
    expect(envelopeFromMessage(text, {})).toEqual(env);
    expect(typeof envelopeFromMessage('{"runId":"x"}', {})).toBe('string');
    expect(typeof envelopeFromMessage('{}', { 'eve.queue': Q, 'eve.id': 'msg_1', 'eve.deliverAt': 'soon' })).toBe(
      'string',
    );
  });
});

describe('delay planning', () => {
  const now = 1_700_000_000_123;
  it('short delays use SQS DelaySeconds, rounded up', () => {
    expect(planDelay(undefined, now, 900, true)).toEqual({ kind: 'now' });
    expect(planDelay(0, now, 900, true)).toEqual({ kind: 'now' });
    expect(planDelay(2.2, now, 900, true)).toEqual({ kind: 'sqs', delaySeconds: 3 });
    expect(planDelay(900, now, 900, false)).toEqual({ kind: 'sqs', delaySeconds: 900 });
  });
  it('long delays go to the scheduler (at a whole second not before due) or to hops with deliverAt', () => {
    const s = planDelay(82_800, now, 900, true);
    expect(s.kind).toBe('schedule');
    if (s.kind !== 'schedule') return;
    expect(s.deliverAt).toBe(now + 82_800_000);
    expect(s.at.getTime()).toBeGreaterThanOrEqual(s.deliverAt);
    expect(s.at.getTime() - s.deliverAt).toBeLessThan(1000);
    expect(atExpression(new Date('2026-11-05T01:02:03.000Z'))).toBe('at(2026-11-05T01:02:03)');
    expect(planDelay(82_800, now, 900, false)).toEqual({ kind: 'sqs', delaySeconds: 900, deliverAt: now + 82_800_000 });
    expect(planHop(now + 1500, now, 900)).toEqual({ delaySeconds: 2, deliverAt: now + 1500 });
    expect(planHop(now + 5_000_000, now, 900).delaySeconds).toBe(900);
  });
  it('schedule names are valid Scheduler names and unique per message and time', () => {
    const a = scheduleName('msg_01JABCDEFGHJKMNPQRSTVWXYZ0', new Date(1000_000));
    expect(a).toMatch(/^[0-9A-Za-z_.-]{1,64}$/);
    expect(a).not.toBe(scheduleName('msg_01JABCDEFGHJKMNPQRSTVWXYZ1', new Date(1000_000)));
    expect(a).not.toBe(scheduleName('msg_01JABCDEFGHJKMNPQRSTVWXYZ0', new Date(2000_000)));
  });
});

describe('createQueueHandler without a secret', () => {
  it('passes the revived payload and meta to the handler and acks', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn);
    const body = encodePayload({ runId: 'wrun_1', input: new Uint8Array([0, 1]) });
    const res = await h(
      request(body, { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_1', 'x-vqs-message-attempt': '3' }),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(r.calls[0].meta).toEqual({ attempt: 3, queueName: Q, messageId: 'msg_1' });
    expect((r.calls[0].body as any).input).toEqual(new Uint8Array([0, 1]));
  });

  it('maps {timeoutSeconds}, invoke results and thrown errors', async () => {
    const headers = { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_1', 'x-vqs-message-attempt': '1' };
    let res = await createQueueHandler(
      '__wkf_workflow_',
      recorder({ timeoutSeconds: 7 }).fn,
    )(request('{"runId":"r"}', headers));
    expect(await res.json()).toEqual({ timeoutSeconds: 7 });
    res = await createQueueHandler(
      '__wkf_workflow_',
      recorder({ timeoutSeconds: 7 }).fn,
    )(request('{"runId":"r","invoke":true}', headers));
    expect(await res.json()).toEqual({ result: { timeoutSeconds: 7 } });
    res = await createQueueHandler(
      '__wkf_workflow_',
      recorder(new Error('boom')).fn,
    )(request('{"runId":"r"}', headers));
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('boom');
  });

  it('answers 400 to malformed bodies, missing headers and foreign queues, running nothing', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn);
    const headers = { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_1', 'x-vqs-message-attempt': '1' };
    expect((await h(request('{not json', headers))).status).toBe(400);
    expect((await h(request('"a string"', headers))).status).toBe(400);
    expect((await h(request(new Uint8Array([0xff, 0xfe, 0x7b]), headers))).status).toBe(400);
    expect((await h(request('', headers))).status).toBe(400);
    expect((await h(request('{"runId":"r"}', { 'x-vqs-queue-name': Q }))).status).toBe(400);
    expect((await h(request('{"runId":"r"}', { ...headers, 'x-vqs-message-attempt': 'x' }))).status).toBe(400);
    const foreign = await h(request('{"runId":"r"}', { ...headers, 'x-vqs-queue-name': '__other_wkf_workflow_x' }));
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toEqual({ error: 'Unhandled queue' });
    expect(r.calls).toHaveLength(0);
  });
});

describe('createQueueHandler with a signing secret', () => {
  const body = encodePayload({ runId: 'wrun_sig' });

  it('accepts a correctly signed request', async () => {
    const r = recorder();
    const res = await createQueueHandler('__wkf_workflow_', r.fn, { signingSecret: SECRET })(
      request(body, deliveryHeaders(body)),
    );
    expect(res.status).toBe(200);
    expect(r.calls).toHaveLength(1);
  });

  it('refuses unsigned, forged, tampered, wrong-secret, stale and replayed requests with 401', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecret: SECRET });
    const plain = { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_01ABC', 'x-vqs-message-attempt': '1' };
    const cases: Request[] = [
      request(body, plain),
      request(body, deliveryHeaders(body, { 'x-eve-signature': `v1=${'0'.repeat(64)}` })),
      // Signed for another body / another attempt header.
      request(encodePayload({ runId: 'wrun_evil' }), deliveryHeaders(body)),
      request(body, deliveryHeaders(body, { 'x-vqs-message-attempt': '2' })),
      // Signed with another secret.
      request(body, {
        ...plain,
        'x-eve-timestamp': String(Math.floor(Date.now() / 1000)),
        'x-eve-signature': computeSignature('another-secret-0123456789', {
          timestamp: Math.floor(Date.now() / 1000),
          queueName: Q,
          messageId: 'msg_01ABC',
          attempt: 1,
          body,
        }),
      }),
      // Correctly signed, but 10 minutes old / 10 minutes in the future.
      request(body, deliveryHeaders(body, {}, Date.now() - 600_000)),
      request(body, deliveryHeaders(body, {}, Date.now() + 600_000)),
    ];
    for (const req of cases) {
      const res = await h(req);
      expect(res.status).toBe(401);
    }
    expect(r.calls).toHaveLength(0);

    // A replay of an accepted request inside the window.
    const headers = deliveryHeaders(body);
    expect((await h(request(body, headers))).status).toBe(200);
    const replay = await h(request(body, headers));
    expect(replay.status).toBe(401);
    expect(await replay.json()).toEqual({ error: 'Unauthorized: replayed request' });
    expect(r.calls).toHaveLength(1);
  });
});
