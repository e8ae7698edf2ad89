/**
 * Pure parts of the queue: typed-JSON encoding, delay planning, and the createQueueHandler HTTP
 * contract including signatures (accepted / forged / stale / unsigned / replayed / rotated), the
 * closed default without a secret, and malformed bodies. No emulator needed (the durable replay
 * guard is tested against DynamoDB Local in security.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { copiedAttributes, redrivenCopy } from '../../../src/cli/redrive/redriven-copy.js';
import { createQueueHandler } from '../../../src/consumer/route/queue-handler.js';
import {
  computeSignature,
  LOG_TAIL_HEADER,
  processSigningKey,
  signatureHeaders,
} from '../../../src/consumer/shared/signing.js';
import { currentDelivery, decodeLogTail, encodeLogTail } from '../../../src/context/delivery-scope.js';
import { atExpression, planDelay, planHop, scheduleName } from '../../../src/queue/delays.js';
import {
  decodeEnvelope,
  decodePayload,
  encodeEnvelope,
  encodePayload,
  envelopeAttributes,
  envelopeFromMessage,
} from '../../../src/queue/encoding.js';
import { decodeHeaderValue, encodeHeaderValue } from '../../../src/queue/header-values.js';
import { MESSAGE_FORMAT } from '../../../src/schema/formats.js';

const SECRET = 'test-secret-0123456789abcdef';
const Q = '__wkf_workflow_demo';
const FLOW_URL = 'http://127.0.0.1/.well-known/workflow/v1/flow';

function request(body: string | Uint8Array, headers: Record<string, string>): Request {
  return new Request(FLOW_URL, {
    method: 'POST',
    headers,
    body: body as BodyInit,
  });
}

function deliveryHeaders(body: string, extra: Record<string, string> = {}, now = Date.now(), secret = SECRET) {
  const base = {
    'content-type': 'application/json',
    'x-vqs-queue-name': Q,
    'x-vqs-message-id': 'msg_01ABC',
    'x-vqs-message-attempt': '1',
  };
  return {
    ...base,
    ...signatureHeaders(secret, { queueName: Q, messageId: 'msg_01ABC', attempt: 1, body, destination: FLOW_URL }, now),
    ...extra,
  };
}

/** Headers as the in-process consumer sends them without a configured secret (this process's key). */
function localHeaders(body: string, meta: { id?: string; attempt?: number; queue?: string } = {}) {
  const queueName = meta.queue ?? Q;
  const messageId = meta.id ?? 'msg_1';
  const attempt = meta.attempt ?? 1;
  return {
    'x-vqs-queue-name': queueName,
    'x-vqs-message-id': messageId,
    'x-vqs-message-attempt': String(attempt),
    ...signatureHeaders(processSigningKey(), { queueName, messageId, attempt, body, destination: FLOW_URL }),
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
    // A decoded envelope says which format it was written in (src/schema/formats.ts).
    expect(decodeEnvelope(text)).toEqual({ ...env, format: MESSAGE_FORMAT });
    expect(envelopeFromMessage(text, {})).toEqual({ ...env, format: MESSAGE_FORMAT });
    const tailed = { ...env, format: MESSAGE_FORMAT, logTail: encodeLogTail('wrun_01ABC', 7) };
    expect(envelopeFromMessage(encodeEnvelope(tailed), {})).toEqual(tailed);
    const attrs = Object.fromEntries(
      Object.entries(envelopeAttributes({ ...tailed, deliverAt: undefined })).map(([k, v]) => [k, v.StringValue]),
    );
    expect(attrs['eve.tail']).toBe('7 wrun_01ABC');
    expect(envelopeFromMessage('{"a":1}', attrs)).toMatchObject({ logTail: '7 wrun_01ABC', body: '{"a":1}' });
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
  it('passes the revived payload and meta of an in-process delivery to the handler and acks', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn);
    const body = encodePayload({ runId: 'wrun_1', input: new Uint8Array([0, 1]) });
    const res = await h(request(body, localHeaders(body, { attempt: 3 })));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(r.calls[0].meta).toEqual({ attempt: 3, queueName: Q, messageId: 'msg_1' });
    expect((r.calls[0].body as any).input).toEqual(new Uint8Array([0, 1]));
  });

  it('is closed by default: unsigned requests and requests signed with another key get 401', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn);
    const body = '{"runId":"wrun_evil"}';
    const unsigned = await h(
      request(body, { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_1', 'x-vqs-message-attempt': '1' }),
    );
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toEqual({ error: 'Unauthorized' });
    // Another process's key (or a guessed secret) is not this process's key.
    expect((await h(request(body, deliveryHeaders(body)))).status).toBe(401);
    // An exact replay of an in-process delivery is refused too.
    const headers = localHeaders(body);
    expect((await h(request(body, headers))).status).toBe(200);
    expect((await h(request(body, headers))).status).toBe(401);
    expect(r.calls).toHaveLength(1);
  });

  it('accepts unsigned requests only on the explicit opt-out (allowUnsigned)', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { allowUnsigned: true });
    const res = await h(
      request('{"runId":"r"}', { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_1', 'x-vqs-message-attempt': '1' }),
    );
    expect(res.status).toBe(200);
    expect(r.calls).toHaveLength(1);
    // The opt-out never weakens a configured secret.
    const strict = createQueueHandler('__wkf_workflow_', r.fn, { allowUnsigned: true, signingSecrets: [SECRET] });
    const refused = await strict(
      request('{"runId":"r"}', { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_2', 'x-vqs-message-attempt': '1' }),
    );
    expect(refused.status).toBe(401);
    expect(r.calls).toHaveLength(1);
  });

  it('maps {timeoutSeconds}, invoke results and thrown errors; a 500 carries no internal detail', async () => {
    const h = (result: unknown, logError?: (m: string) => void) =>
      createQueueHandler('__wkf_workflow_', recorder(result).fn, { logError });
    let body = '{"runId":"r"}';
    let res = await h({ timeoutSeconds: 7 })(request(body, localHeaders(body)));
    expect(await res.json()).toEqual({ timeoutSeconds: 7 });
    body = '{"runId":"r","invoke":true}';
    res = await h({ timeoutSeconds: 7 })(request(body, localHeaders(body)));
    expect(await res.json()).toEqual({ result: { timeoutSeconds: 7 } });
    const logged: string[] = [];
    body = '{"runId":"r"}';
    res = await h(new Error('boom at /srv/app/secret-path.js'), (m) => logged.push(m))(
      request(body, localHeaders(body, { id: 'msg_boom' })),
    );
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: 'Internal error' });
    expect(text).not.toContain('boom');
    // The detail goes to the server log, with the message it belongs to.
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain('boom at /srv/app/secret-path.js');
    expect(logged[0]).toContain('msg_boom');
  });

  it('answers 400 to malformed bodies, missing headers and foreign queues, running nothing', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn);
    // Correctly signed (the signature covers the bytes as sent), so only the 400 checks decide.
    const send = (
      body: string | Uint8Array,
      meta: { id?: string; attempt?: number; queue?: string } = {},
      drop?: string,
    ) => {
      const headers: Record<string, string> = localHeaders(
        typeof body === 'string' ? body : (Buffer.from(body) as any),
        meta,
      );
      if (drop) delete headers[drop];
      return h(request(body, headers));
    };
    let n = 0;
    const id = () => `msg_${++n}`;
    expect((await send('{not json', { id: id() })).status).toBe(400);
    expect((await send('"a string"', { id: id() })).status).toBe(400);
    expect((await send(new Uint8Array([0xff, 0xfe, 0x7b]), { id: id() })).status).toBe(400);
    expect((await send('', { id: id() })).status).toBe(400);
    // Signed over an empty message id, then the header left out: authentic, but incomplete.
    expect((await send('{"runId":"r"}', { id: '' }, 'x-vqs-message-id')).status).toBe(400);
    const badAttempt = localHeaders('{"runId":"r"}', { id: id() });
    badAttempt['x-vqs-message-attempt'] = 'x';
    // The attempt header is signed, so a changed one is a forgery first.
    expect((await h(request('{"runId":"r"}', badAttempt))).status).toBe(401);
    const foreign = await send('{"runId":"r"}', { id: id(), queue: '__other_wkf_workflow_x' });
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toEqual({ error: 'Unhandled queue' });
    expect(r.calls).toHaveLength(0);
  });
});

describe('createQueueHandler with a signing secret', () => {
  const body = encodePayload({ runId: 'wrun_sig' });

  it('accepts a correctly signed request', async () => {
    const r = recorder();
    const res = await createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [SECRET] })(
      request(body, deliveryHeaders(body)),
    );
    expect(res.status).toBe(200);
    expect(r.calls).toHaveLength(1);
  });

  it('a replay store that cannot answer is an outage (503, never a 500 counted against the message)', async () => {
    const r = recorder();
    const logged: string[] = [];
    const res = await createQueueHandler('__wkf_workflow_', r.fn, {
      signingSecrets: [SECRET],
      nonces: {
        claim: async () => {
          throw Object.assign(new Error('test: DynamoDB unavailable'), { name: 'InternalServerError' });
        },
      },
      logError: (m) => logged.push(m),
    })(request(body, deliveryHeaders(body)));
    expect(res.status).toBe(503);
    expect(r.calls).toHaveLength(0);
    expect(logged.join('\n')).toMatch(/replay check failed/);
  });

  it('refuses unsigned, forged, tampered, wrong-secret, stale and replayed requests with 401', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [SECRET] });
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
          destination: FLOW_URL,
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
    expect(r.calls).toHaveLength(1);
  });

  it('every refusal is the same 401 to the caller; the reason is only logged', async () => {
    const logged: string[] = [];
    const h = createQueueHandler('__wkf_workflow_', recorder().fn, {
      signingSecrets: [SECRET],
      logError: (m) => logged.push(m),
    });
    const plain = { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_01ABC', 'x-vqs-message-attempt': '1' };
    const headers = deliveryHeaders(body);
    const cases: Array<[Request, string]> = [
      [request(body, plain), 'unsigned request'],
      [request(body, deliveryHeaders(body, {}, Date.now() - 600_000)), 'stale timestamp'],
      [request(body, deliveryHeaders(body, { 'x-eve-signature': `v2=${'0'.repeat(64)}` })), 'bad signature'],
      [request(body, headers), ''],
      [request(body, headers), 'replayed request'],
    ];
    const bodies = new Set<string>();
    for (const [req, reason] of cases) {
      const res = await h(req);
      if (!reason) {
        expect(res.status).toBe(200);
        continue;
      }
      expect(res.status).toBe(401);
      bodies.add(await res.text());
      expect(logged.at(-1)).toContain(reason);
      expect(logged.at(-1)).toContain('msg_01ABC');
    }
    expect([...bodies]).toEqual(['{"error":"Unauthorized"}']);
  });

  it('the signature covers the destination: the same delivery sent to another host or path is refused', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [SECRET] });
    const signedFor = (destination: string) => ({
      'x-vqs-queue-name': Q,
      'x-vqs-message-id': 'msg_01ABC',
      'x-vqs-message-attempt': '1',
      ...signatureHeaders(SECRET, { queueName: Q, messageId: 'msg_01ABC', attempt: 1, body, destination }),
    });
    // Signed for staging, captured and replayed to production (same secret): refused.
    expect((await h(request(body, signedFor('https://staging.example.com/.well-known/workflow/v1/flow')))).status).toBe(
      401,
    );
    // Another path on the same host: refused.
    expect((await h(request(body, signedFor('http://127.0.0.1/other/flow')))).status).toBe(401);
    // Accepted by the Host header the sender used (a Function URL: the app sees the URL's host).
    // A forwarded host is the client's to choose: taken only when the operator opted in (a proxy
    // that sets it), so a delivery signed for staging and replayed with that header is refused.
    const viaProxy = () =>
      new Request(FLOW_URL, {
        method: 'POST',
        headers: {
          ...signedFor('https://abc.lambda-url.eu-west-1.on.aws/.well-known/workflow/v1/flow'),
          'x-forwarded-host': 'abc.lambda-url.eu-west-1.on.aws',
        },
        body,
      });
    expect((await h(viaProxy())).status).toBe(401);
    const behindProxy = createQueueHandler('__wkf_workflow_', r.fn, {
      signingSecrets: [SECRET],
      trustForwardedHost: true,
    });
    expect((await behindProxy(viaProxy())).status).toBe(200);
    const hostHeader = new Request(FLOW_URL, {
      method: 'POST',
      headers: {
        ...signedFor('https://ABC.lambda-url.eu-west-1.on.aws/.well-known/workflow/v1/flow'),
        host: 'abc.lambda-url.eu-west-1.on.aws',
      },
      body,
    });
    expect((await h(hostHeader)).status).toBe(200);
    expect(r.calls).toHaveLength(2);
  });

  it('names and ids that are not plain ASCII travel encoded, signed, and reach the handler decoded', async () => {
    const r = recorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [SECRET] });
    const queueName = '__wkf_workflow_workflow//./workflows/注文//注文する';
    const messageId = 'msg_ünïcode ';
    const wire = { queueName: encodeHeaderValue(queueName), messageId: encodeHeaderValue(messageId) };
    expect(wire.queueName).toMatch(/^UTF-8''[\x21-\x7e]+$/);
    const headers = {
      'x-vqs-queue-name': wire.queueName,
      'x-vqs-message-id': wire.messageId,
      'x-vqs-message-attempt': '1',
      ...signatureHeaders(SECRET, { ...wire, attempt: 1, body, destination: FLOW_URL }),
    };
    expect((await h(request(body, headers))).status).toBe(200);
    expect(r.calls[0].meta).toEqual({ attempt: 1, queueName, messageId });
    // A plain value that happens to start with the marker is encoded too: the mapping is one to one.
    expect(decodeHeaderValue(encodeHeaderValue("UTF-8''x"))).toBe("UTF-8''x");
    expect(encodeHeaderValue('__wkf_workflow_plain/name')).toBe('__wkf_workflow_plain/name');
    expect(decodeHeaderValue("UTF-8''%E0%A4")).toBeUndefined();
  });

  it('rotation: accepts any configured secret, refuses one that was removed', async () => {
    const r = recorder();
    const next = 'next-secret-0123456789abcdef';
    // During rotation: the new secret first (senders sign with it), the old one still accepted.
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [next, SECRET] });
    expect((await h(request(body, deliveryHeaders(body, {}, Date.now(), SECRET)))).status).toBe(200);
    expect((await h(request(body, deliveryHeaders(body, {}, Date.now() - 1000, next)))).status).toBe(200);
    // After rotation: the old secret is gone.
    const after = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [next] });
    expect((await after(request(body, deliveryHeaders(body, {}, Date.now() - 2000, SECRET)))).status).toBe(401);
    expect(r.calls).toHaveLength(2);
  });
});

describe('the log tail a delivery carries', () => {
  const body = JSON.stringify({ runId: 'wrun_01ABC' });
  const tail = encodeLogTail('wrun_01ABC', 12);
  /** A handler that records the delivery scope it ran in. */
  function scopeRecorder() {
    const seen: (ReturnType<typeof currentDelivery> | 'none')[] = [];
    const fn = async () => {
      seen.push(currentDelivery() ?? 'none');
      return undefined;
    };
    return { seen, fn };
  }
  function tailedHeaders(t: string, now = Date.now()) {
    return {
      'x-vqs-queue-name': Q,
      'x-vqs-message-id': 'msg_01ABC',
      'x-vqs-message-attempt': '1',
      [LOG_TAIL_HEADER]: t,
      ...signatureHeaders(
        SECRET,
        { queueName: Q, messageId: 'msg_01ABC', attempt: 1, body, logTail: t, destination: FLOW_URL },
        now,
      ),
    };
  }

  it('parses strictly: anything but "<slot> <runId>" is no tail', () => {
    expect(decodeLogTail(tail)).toEqual({ runId: 'wrun_01ABC', slot: 12 });
    for (const bad of [
      '',
      '0 wrun_1',
      '-1 wrun_1',
      '12',
      '12 ',
      ' 12 wrun_1',
      '12 wrun 1',
      '1e3 wrun_1',
      '9'.repeat(16),
    ])
      expect(decodeLogTail(bad)).toBeUndefined();
  });

  it('runs the handler inside a scope holding the signed tail, and only the signed one', async () => {
    const r = scopeRecorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [SECRET] });
    expect((await h(request(body, tailedHeaders(tail)))).status).toBe(200);
    const scope = r.seen[0];
    expect(scope).not.toBe('none');
    expect(scope !== 'none' && [...scope!.logTails]).toEqual([['wrun_01ABC', 12]]);
    expect(scope !== 'none' && { id: scope!.messageId, attempt: scope!.attempt }).toEqual({
      id: 'msg_01ABC',
      attempt: 1,
    });
    // Outside the handler there is no scope.
    expect(currentDelivery()).toBeUndefined();

    // A changed tail, a removed tail and a tail added to a request signed without one: 401, nothing runs.
    const changed = { ...tailedHeaders(tail), [LOG_TAIL_HEADER]: encodeLogTail('wrun_01ABC', 3) };
    expect((await h(request(body, changed))).status).toBe(401);
    const removed: Record<string, string> = { ...tailedHeaders(tail) };
    delete removed[LOG_TAIL_HEADER];
    expect((await h(request(body, removed))).status).toBe(401);
    const added = { ...deliveryHeaders(body), [LOG_TAIL_HEADER]: tail };
    expect((await h(request(body, added))).status).toBe(401);
    expect(r.seen).toHaveLength(1);

    // No tail header: a scope with no tails (every read goes to DynamoDB).
    expect((await h(request(body, deliveryHeaders(body)))).status).toBe(200);
    expect(r.seen[1] !== 'none' && r.seen[1]!.logTails.size).toBe(0);
  });

  it('holds no tail on a redelivery: an earlier delivery may have written more and died', async () => {
    const r = scopeRecorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { signingSecrets: [SECRET] });
    const first = tailedHeaders(tail);
    const again = {
      ...first,
      'x-vqs-message-attempt': '3',
      ...signatureHeaders(SECRET, {
        queueName: Q,
        messageId: 'msg_01ABC',
        attempt: 3,
        body,
        logTail: tail,
        destination: FLOW_URL,
      }),
    };
    expect((await h(request(body, again))).status).toBe(200);
    expect(r.seen[0] !== 'none' && r.seen[0]!.logTails.size).toBe(0);
    expect(r.seen[0] !== 'none' && r.seen[0]!.attempt).toBe(3);
  });

  it('a redriven dead letter carries no tail, in attributes or in a Scheduler envelope body', async () => {
    const attrs = (t?: string) => ({
      'eve.queue': { DataType: 'String', StringValue: Q },
      'eve.id': { DataType: 'String', StringValue: 'msg_1' },
      ...(t ? { 'eve.tail': { DataType: 'String', StringValue: t } } : {}),
    });
    const copied = copiedAttributes({ Body: '{}', MessageAttributes: attrs(tail) });
    expect(Object.keys(copied!).sort()).toEqual(['eve.id', 'eve.queue']);
    const envelope = encodeEnvelope({ queueName: Q, messageId: 'msg_2', attemptOffset: 0, body: '{}', logTail: tail });
    const copy = await redrivenCopy({ Body: envelope }, undefined, Date.now());
    const back = envelopeFromMessage(copy.body, {});
    expect(typeof back !== 'string' && back.logTail).toBeUndefined();
    expect(typeof back !== 'string' && back.messageId).toBe('msg_2');
  });

  it('ignores a tail it cannot trust (unsigned deliveries allowed)', async () => {
    const r = scopeRecorder();
    const h = createQueueHandler('__wkf_workflow_', r.fn, { allowUnsigned: true });
    const unsigned = {
      'x-vqs-queue-name': Q,
      'x-vqs-message-id': 'msg_1',
      'x-vqs-message-attempt': '1',
      [LOG_TAIL_HEADER]: tail,
    };
    expect((await h(request(body, unsigned))).status).toBe(200);
    expect(r.seen[0] !== 'none' && r.seen[0]!.logTails.size).toBe(0);
  });
});
