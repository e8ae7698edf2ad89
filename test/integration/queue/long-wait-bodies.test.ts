/**
 * Long waits keep their body (src/queue/body-lifetime.ts) on the SQS-hop path, against fauxqs:
 * an offloaded body lives under `queue/<id>/<createdSec>` (30-day lifecycle); the consumer's hops
 * move it to a fresh key before it would expire under the next copy, and the message finally
 * delivers the original bytes. The clock is moved with the pipeline's `now`, not waited for.
 */
import type { Message } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, expect, test } from 'vitest';
import { bodyAliveUntil } from '../../../src/queue/body-lifetime.js';
import { decodePayload } from '../../../src/queue/encoding.js';
import { deliverAtClock, makeWorld, receiveAll, sleep, type World } from '../../helpers/queue.js';

const Q = '__wkf_workflow_longwait' as ValidQueueName;
const DAY = 86_400_000;

let w: World;
afterAll(async () => {
  await w?.close();
});

async function bodyKeys(messageId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const page of w.ctx.payloads.list(`queue/${messageId}/`)) out.push(...page.map((o) => o.key));
  return out.sort();
}

/** The one copy on the queue now (hops are 1 s here). */
async function nextCopy(): Promise<Message> {
  await sleep(1100);
  const got = await receiveAll(w, await w.queue.transport.queueUrl());
  expect(got).toHaveLength(1);
  return got[0];
}

const s3KeyOf = (m: Message) => m.MessageAttributes?.['eve.s3']?.StringValue ?? '';

test('a 40-day wait on SQS hops re-homes its body before the lifecycle could expire it, and delivers it intact', async () => {
  w = await makeWorld({
    tuning: { maxDelayHopSeconds: 1, payloadThresholdBytes: 1000 },
    start: false,
  });
  const input = new Uint8Array(20_000).map((_, i) => (i * 7) % 251);
  const t0 = Date.now();
  const { messageId: id } = await w.queue.queue(Q, { runId: 'wrun_long', input } as never, {
    delaySeconds: 40 * 86_400,
  });

  const messageId = String(id);
  // First copy: body offloaded under queue/<id>/<now>, alive for the 30-day lifecycle window.
  let copy = await nextCopy();
  const first = s3KeyOf(copy);
  expect(first).toMatch(new RegExp(`^queue/${messageId}/\\d+$`));
  expect(bodyAliveUntil(first)).toBeGreaterThanOrEqual(t0 + 29 * DAY);
  const deliverAt = Number(copy.MessageAttributes?.['eve.deliverAt']?.StringValue);
  expect(deliverAt).toBeGreaterThanOrEqual(t0 + 40 * DAY);

  // A hop on day 1: the body lives long enough for the next copy; same key, no new object.
  let r = await deliverAtClock(w, copy, t0 + DAY);
  expect(r.outcome).toMatchObject({ action: 'delete', reason: 'redelayed' });
  copy = await nextCopy();
  expect(s3KeyOf(copy)).toBe(first);
  expect(await bodyKeys(messageId)).toEqual([first]);

  // A hop on day 20: the next copy could outlive the body (20 + 14 days of SQS retention > 30),
  // so the hop first copies the body to a fresh key and the new copy points there.
  const day20 = t0 + 20 * DAY;
  r = await deliverAtClock(w, copy, day20);
  expect(r.outcome).toMatchObject({ action: 'delete', reason: 'redelayed' });
  copy = await nextCopy();
  const second = s3KeyOf(copy);
  expect(second).not.toBe(first);
  expect(second).toMatch(new RegExp(`^queue/${messageId}/\\d+$`));
  expect(bodyAliveUntil(second)).toBeGreaterThanOrEqual(day20 + 29 * DAY);
  // The old key is left to expire (a duplicate copy may still point at it).
  expect(await bodyKeys(messageId)).toEqual([first, second].sort());
  expect(Buffer.compare(await w.ctx.payloads.getBytes(second), await w.ctx.payloads.getBytes(first))).toBe(0);

  // Due: delivered with the original bytes, read from the re-homed key.
  r = await deliverAtClock(w, copy, deliverAt + 1);
  expect(r.outcome).toMatchObject({ action: 'delete', reason: 'ack', messageId });
  const body = decodePayload(r.delivered ?? '') as { runId: string; input: Uint8Array };
  expect(body.runId).toBe('wrun_long');
  expect(Array.from(body.input)).toEqual(Array.from(input));
});
