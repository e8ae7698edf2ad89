/**
 * The pure parts of delivery by Lambda Invoke (src/consumer/delivery/invoke.ts) and its signature binding
 * (src/consumer/shared/signing.ts): which deployment ids are host versions, what a delivery to one is
 * signed for, which host accepts it, and how an Invoke answer becomes an HTTP response (the
 * Function URL shape, and the streamed HTTP-integration framing of a RESPONSE_STREAM host).
 */
import { describe, expect, it } from 'vitest';
import { lambdaFlowUrl, parseLambdaDeployment, responseOf } from '../../../src/consumer/delivery/invoke.js';
import {
  destinationOf,
  requestDestinations,
  signatureHeaders,
  verifySignature,
} from '../../../src/consumer/shared/signing.js';

const SECRET = 'f'.repeat(64);

describe('delivery by Lambda Invoke', () => {
  it('names a published version of a function only', () => {
    expect(parseLambdaDeployment('lambda:host-A_1:12')).toEqual({ functionName: 'host-A_1', version: '12' });
    for (const id of [
      undefined,
      'lambda:host:$LATEST',
      'lambda:host:live',
      'build:abc',
      'eve-world-aws',
      'lambda:a:b:1',
    ])
      expect(parseLambdaDeployment(id)).toBeUndefined();
    expect(lambdaFlowUrl({ functionName: 'host', version: '3' })).toBe('lambda:host:3/.well-known/workflow/v1/flow');
    expect(destinationOf('lambda:host:3/.well-known/workflow/v1/flow')).toBe(
      'lambda:host:3/.well-known/workflow/v1/flow',
    );
  });

  it('a delivery signed for lambda:<fn>:<ver> passes only at that function and version', () => {
    const body = new TextEncoder().encode('{"runId":"r"}');
    const headers = new Headers({
      'x-vqs-queue-name': '__wkf_workflow_x',
      'x-vqs-message-id': 'msg_1',
      'x-vqs-message-attempt': '1',
      ...signatureHeaders(SECRET, {
        queueName: '__wkf_workflow_x',
        messageId: 'msg_1',
        attempt: 1,
        body,
        destination: lambdaFlowUrl({ functionName: 'host', version: '3' }),
      }),
      host: '127.0.0.1:8080',
    });
    const req = { url: 'http://127.0.0.1:8080/.well-known/workflow/v1/flow', headers };
    const at = (self?: string) => verifySignature(SECRET, req, body, Date.now(), 300, false, self).ok;
    expect(at('lambda:host:3')).toBe(true);
    expect(at('lambda:host:4')).toBe(false);
    expect(at('lambda:other:3')).toBe(false);
    expect(at(undefined)).toBe(false);
    expect(requestDestinations(req.url, headers, false, 'lambda:host:3')).toContain(
      'lambda:host:3/.well-known/workflow/v1/flow',
    );
  });

  it('reads the Function URL response shape, text or base64, with cookies', async () => {
    const res = responseOf(
      new TextEncoder().encode(
        JSON.stringify({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }),
      ),
    );
    expect(res?.status).toBe(200);
    expect(await res?.json()).toEqual({ ok: true });
    const b64 = responseOf(
      new TextEncoder().encode(
        JSON.stringify({
          statusCode: 401,
          body: Buffer.from('no').toString('base64'),
          isBase64Encoded: true,
          cookies: ['a=1'],
        }),
      ),
    );
    expect(b64?.status).toBe(401);
    expect(await b64?.text()).toBe('no');
    expect(b64?.headers.getSetCookie()).toEqual(['a=1']);
  });

  it('reads the streamed HTTP-integration framing: JSON prelude, 8 NUL bytes, body', async () => {
    const prelude = Buffer.from(JSON.stringify({ statusCode: 503, headers: { 'x-a': 'b' } }));
    const res = responseOf(Buffer.concat([prelude, Buffer.alloc(8), Buffer.from('{"timeoutSeconds":5}')]));
    expect(res?.status).toBe(503);
    expect(res?.headers.get('x-a')).toBe('b');
    expect(await res?.text()).toBe('{"timeoutSeconds":5}');
  });

  it('is undefined for an answer that is neither', () => {
    expect(responseOf(new TextEncoder().encode('not json'))).toBeUndefined();
    expect(responseOf(new TextEncoder().encode('{"statusCode":"200"}'))).toBeUndefined();
    expect(responseOf(new TextEncoder().encode('null'))).toBeUndefined();
  });
});
