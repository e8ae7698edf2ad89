/**
 * A message carries how far its sender had seen its run's log (`eve.tail`), and the delivery that
 * runs it sees that tail in its scope: SQS attribute → consumer → signed `x-eve-log-tail` header →
 * the flow route's AsyncLocalStorage scope (src/context/delivery-scope.ts). Real SQS emulator, real
 * consumer, real signed flow route.
 */
import type { ValidQueueName } from '@workflow/world';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { MSG_ATTR } from '../../../src/queue/encoding.js';
import { makeWorld, PREFIX, receiveAll, type World, waitFor } from '../../helpers/queue.js';

const Q = `${PREFIX}tail` as ValidQueueName;
const known: Record<string, number> = { wrun_TAILED: 9 };
let w: World;
let raw: World;

beforeAll(async () => {
  w = await makeWorld({ queueOptions: { logTail: (runId) => known[runId] } });
  // A sender whose queue nobody consumes, to read the raw message.
  raw = await makeWorld({ queueOptions: { logTail: (runId) => known[runId] }, start: false, register: false });
});
afterAll(async () => {
  await w?.close();
  await raw?.close();
});

test('the sender attaches the tail it has seen for the payload run, as eve.tail', async () => {
  await raw.queue.queue(Q, { runId: 'wrun_TAILED' } as never);
  await raw.queue.queue(Q, { runId: 'wrun_UNKNOWN' } as never);
  const msgs: Awaited<ReturnType<typeof receiveAll>> = [];
  const url = await raw.queue.transport.queueUrl();
  for (let i = 0; i < 10 && msgs.length < 2; i++) msgs.push(...(await receiveAll(raw, url)));
  const tails = msgs.map((m) => [JSON.parse(m.Body!).runId, m.MessageAttributes?.[MSG_ATTR.logTail]?.StringValue]);
  expect(tails.sort()).toEqual([
    ['wrun_TAILED', '9 wrun_TAILED'],
    ['wrun_UNKNOWN', undefined],
  ]);
});

test('the delivery runs inside a scope holding the tail; a caller header cannot pose as it', async () => {
  await w.queue.queue(Q, { runId: 'wrun_TAILED', n: 1 } as never);
  // Step messages name their run `workflowRunId`.
  await w.queue.queue(Q, { workflowRunId: 'wrun_TAILED', n: 2 } as never);
  await w.queue.queue(Q, { runId: 'wrun_UNKNOWN', n: 3 } as never);
  // QueueOptions.headers are passed through, but never the names the World signs or reads itself.
  await w.queue.queue(Q, { runId: 'wrun_UNKNOWN', n: 4 } as never, {
    headers: { 'x-eve-log-tail': '99 wrun_UNKNOWN', 'x-app': 'a' },
  });
  await waitFor(() => w.deliveries.length >= 4);
  const byN = new Map(w.deliveries.map((d) => [(d.body as { n: number }).n, d.scope]));
  expect([...byN.get(1)!.logTails]).toEqual([['wrun_TAILED', 9]]);
  expect([...byN.get(2)!.logTails]).toEqual([['wrun_TAILED', 9]]);
  expect(byN.get(3)!.logTails.size).toBe(0);
  expect(byN.get(4)!.logTails.size).toBe(0);
  for (const s of byN.values()) expect(s!.messageId).toMatch(/^msg_/);
});
