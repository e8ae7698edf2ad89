/**
 * The flow route (src/consumer/route/queue-handler.ts) and `x-eve-message-id`, the id `queue()` returned
 * on a delivery dispatched under another id (an early delivery's own, src/queue/delivery-id.ts):
 * log lines inside the delivery carry it as `messageId` and the dispatched id as `deliveryId`; the
 * signature covers it, so an added, changed or removed header is refused (401) and nothing runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueHandler } from '../../../src/consumer/route/queue-handler.js';
import { MESSAGE_ID_HEADER, signatureHeaders } from '../../../src/consumer/shared/signing.js';
import { configureLogging, consoleLogger } from '../../../src/telemetry/log.js';

const SECRET = 'test-secret-0123456789abcdef';
const Q = '__wkf_workflow_demo';
const body = JSON.stringify({ runId: 'wrun_1' });
const M = 'msg_01J8ZQ4Y7W3X2V1T0S9R8Q7P6N';
const E = `${M}.early.01J8ZQ4Y7W3X2V1T0S9R8Q7P6P`;
const URL = 'http://127.0.0.1/.well-known/workflow/v1/flow';

function headers(deliveryId: string, queuedId: string | undefined, sent: Record<string, string> = {}) {
  return {
    'content-type': 'application/json',
    'x-vqs-queue-name': Q,
    'x-vqs-message-id': deliveryId,
    'x-vqs-message-attempt': '1',
    ...signatureHeaders(SECRET, {
      queueName: Q,
      messageId: deliveryId,
      attempt: 1,
      body,
      destination: URL,
      ...(queuedId ? { queuedId } : {}),
    }),
    ...(queuedId ? { [MESSAGE_ID_HEADER]: queuedId } : {}),
    ...sent,
  };
}

const post = (h: Record<string, string>) => new Request(URL, { method: 'POST', headers: h, body });

describe('x-eve-message-id on the flow route', () => {
  const lines: string[] = [];
  const info = console.info;
  beforeAll(() => {
    // JSON lines, as inside Lambda.
    configureLogging({ logLevel: 'info', inLambda: true });
    console.info = (line: string) => void lines.push(line);
  });
  afterAll(() => {
    console.info = info;
    configureLogging({ logLevel: 'info', inLambda: false });
  });

  const route = (ran: string[]) =>
    createQueueHandler(
      '__wkf_workflow_',
      async (_body, meta) => {
        ran.push(meta.messageId);
        consoleLogger.info('[eve-world-aws] inside');
      },
      { signingSecrets: [SECRET] },
    );

  it('an early delivery: core sees E; the log lines carry M as messageId and E as deliveryId', async () => {
    const ran: string[] = [];
    lines.length = 0;
    expect((await route(ran)(post(headers(E, M)))).status).toBe(200);
    expect(ran).toEqual([E]);
    expect(JSON.parse(lines[0])).toMatchObject({ message: 'inside', messageId: M, deliveryId: E, attempt: 1 });
  });

  it('an ordinary delivery: no header, the log lines carry its id as messageId only', async () => {
    const ran: string[] = [];
    lines.length = 0;
    expect((await route(ran)(post(headers(M, undefined)))).status).toBe(200);
    expect(JSON.parse(lines[0]).messageId).toBe(M);
    expect(JSON.parse(lines[0]).deliveryId).toBeUndefined();
  });

  it('the signature covers it: added, changed or removed, the request is refused and nothing runs', async () => {
    const ran: string[] = [];
    const h = route(ran);
    const added = headers(M, undefined, { [MESSAGE_ID_HEADER]: 'msg_OTHER' });
    const changed = headers(E, M, { [MESSAGE_ID_HEADER]: 'msg_OTHER' });
    const removed: Record<string, string> = headers(E, M);
    delete removed[MESSAGE_ID_HEADER];
    for (const req of [added, changed, removed]) expect((await h(post(req))).status).toBe(401);
    expect(ran).toEqual([]);
  });
});
