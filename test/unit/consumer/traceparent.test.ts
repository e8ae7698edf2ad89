/**
 * The flow route (src/consumer/route/queue-handler.ts) runs core's callback under the consumer's delivery span
 * named by the signed `traceparent` header, and the signature covers that header: a changed,
 * removed or added `traceparent` is refused (401) and nothing runs.
 */
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueHandler } from '../../../src/consumer/route/queue-handler.js';
import { signatureHeaders } from '../../../src/consumer/shared/signing.js';
import { TRACEPARENT_HEADER } from '../../../src/telemetry/tracing.js';
import { type InMemoryTracing, registerInMemoryTracing } from '../../helpers/otel.js';

const SECRET = 'test-secret-0123456789abcdef';
const Q = '__wkf_workflow_demo';
const body = JSON.stringify({ runId: 'wrun_1' });
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const tp = (span = PARENT) => `00-${TRACE}-${span}-01`;

function headers(traceparent: string | undefined, sent: Record<string, string> = {}) {
  return {
    'content-type': 'application/json',
    'x-vqs-queue-name': Q,
    'x-vqs-message-id': 'msg_1',
    'x-vqs-message-attempt': '1',
    ...signatureHeaders(SECRET, {
      queueName: Q,
      messageId: 'msg_1',
      attempt: 1,
      body,
      destination: 'http://127.0.0.1/.well-known/workflow/v1/flow',
      ...(traceparent ? { traceparent } : {}),
    }),
    ...(traceparent ? { [TRACEPARENT_HEADER]: traceparent } : {}),
    ...sent,
  };
}

const post = (h: Record<string, string>) =>
  new Request('http://127.0.0.1/.well-known/workflow/v1/flow', { method: 'POST', headers: h, body });

describe('signed traceparent', () => {
  let otel: InMemoryTracing;
  beforeAll(() => {
    otel = registerInMemoryTracing();
  });
  afterAll(() => otel.shutdown());

  it('runs the handler with the delivery span as its parent', async () => {
    const seen: (string | undefined)[] = [];
    const h = createQueueHandler(
      '__wkf_workflow_',
      async () => {
        const span = trace.getActiveSpan()?.spanContext();
        seen.push(span && `${span.traceId}/${span.spanId}`);
      },
      { signingSecrets: [SECRET] },
    );
    expect((await h(post(headers(tp())))).status).toBe(200);
    expect(seen).toEqual([`${TRACE}/${PARENT}`]);
    // Without the header: no parent (core starts its own trace).
    expect((await h(post(headers(undefined)))).status).toBe(200);
    expect(seen[1]).toBeUndefined();
  });

  it('refuses a changed, removed or added traceparent, running nothing', async () => {
    let ran = 0;
    const h = createQueueHandler(
      '__wkf_workflow_',
      async () => {
        ran++;
      },
      { signingSecrets: [SECRET] },
    );
    const changed = headers(tp(), { [TRACEPARENT_HEADER]: tp('1111111111111111') });
    expect((await h(post(changed))).status).toBe(401);
    const removed: Record<string, string> = headers(tp());
    delete removed[TRACEPARENT_HEADER];
    expect((await h(post(removed))).status).toBe(401);
    const added = headers(undefined, { [TRACEPARENT_HEADER]: tp() });
    expect((await h(post(added))).status).toBe(401);
    expect(ran).toBe(0);
  });
});
