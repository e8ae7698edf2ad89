/**
 * The early-delivery registry (src/consumer/delivery/early/verdict-registry.ts) on its own clock: a verdict goes
 * to one copy, once, with the early delivery's own id; it waits for its copy only so long and
 * only so many are kept; a rejected or missing verdict means "deliver the copy as usual". And the
 * offer (src/consumer/delivery/early/offer.ts), the one place deciding what is delivered early.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { createEarlyOffer } from '../../../src/consumer/delivery/early/offer.js';
import {
  EARLY_MAX_ENTRIES,
  EARLY_RETAIN_MS,
  EarlyDeliveries,
} from '../../../src/consumer/delivery/early/verdict-registry.js';
import { earlyDeliveryEnabled } from '../../../src/consumer/index.js';

/** Lets settled verdicts re-age (their registry hears of them a microtask later). */
const settle = () => new Promise((r) => setImmediate(r));

describe('EarlyDeliveries', () => {
  it('hands a verdict to the first copy that asks, and to no other', async () => {
    const early = new EarlyDeliveries<string>(() => 0);
    early.begin('msg_a', 'E_msg_a', Promise.resolve('ack'));
    expect(await early.take('msg_a')?.verdict).toBe('ack');
    expect(early.take('msg_a')).toBeUndefined();
    expect(early.take('msg_b')).toBeUndefined();
    expect(early.size).toBe(0);
  });

  it('a copy that arrives while the early delivery runs waits for its verdict', async () => {
    const early = new EarlyDeliveries<string>(() => 0);
    let finish!: (v: string) => void;
    early.begin('msg_a', 'E_msg_a', new Promise((r) => (finish = r)));
    const taken = early.take('msg_a');
    expect(taken?.earlyId).toBe('E_msg_a');
    let got: string | undefined;
    void taken!.verdict.then((v) => (got = v));
    await Promise.resolve();
    expect(got).toBeUndefined();
    finish('later');
    expect(await taken?.verdict).toBe('later');
  });

  it('a rejected early delivery reads as "deliver the copy as usual"', async () => {
    const early = new EarlyDeliveries<string>(() => 0);
    early.begin('msg_a', 'E_msg_a', Promise.reject(new Error('boom')));
    expect(await early.take('msg_a')?.verdict).toBeUndefined();
  });

  it('a verdict older than the retention is dropped: the copy is delivered as usual', async () => {
    let now = 1_000;
    const early = new EarlyDeliveries<string>(() => now);
    early.begin('msg_old', 'E_msg_old', Promise.resolve('ack'));
    early.begin('msg_new', 'E_msg_new', Promise.resolve('ack'));
    await settle();
    now += EARLY_RETAIN_MS + 1;
    expect(early.take('msg_old')).toBeUndefined();
    // Pruned on the next begin, oldest first.
    early.begin('msg_next', 'E_msg_next', Promise.resolve('ack'));
    expect(early.size).toBe(1);
    expect(await early.take('msg_next')?.verdict).toBe('ack');
  });

  it('a delivery still running is never dropped, however old; its retention starts at its verdict', async () => {
    let now = 1_000;
    const early = new EarlyDeliveries<string>(() => now, EARLY_RETAIN_MS, 2);
    let finish!: (v: string) => void;
    early.begin('msg_long', 'E_msg_long', new Promise((r) => (finish = r)));
    now += 2 * EARLY_RETAIN_MS;
    for (let i = 0; i < 4; i++) early.begin(`msg_${i}`, `E_${i}`, Promise.resolve('ack'));
    await settle();
    // Over the cap and past retention, the running one stays.
    expect(early.has('msg_long')).toBe(true);
    finish('ack');
    await settle();
    now += EARLY_RETAIN_MS - 1;
    early.begin('msg_after', 'E_msg_after', Promise.resolve('ack'));
    expect(early.has('msg_long')).toBe(true);
    expect(await early.take('msg_long')?.verdict).toBe('ack');
  });

  it('keeps at most maxEntries verdicts, dropping the oldest', async () => {
    const early = new EarlyDeliveries<number>(() => 0, EARLY_RETAIN_MS, 3);
    for (let i = 0; i < 5; i++) early.begin(`msg_${i}`, `E_${i}`, Promise.resolve(i));
    await settle();
    expect(early.size).toBe(3);
    expect(early.take('msg_0')).toBeUndefined();
    expect(early.take('msg_1')).toBeUndefined();
    expect(await early.take('msg_4')?.verdict).toBe(4);
    expect(EARLY_MAX_ENTRIES).toBeGreaterThanOrEqual(1000);
  });
});

describe('earlyDeliveryEnabled', () => {
  it('on by default where the in-process consumer polls; off with earlyDelivery: false, consumer: none, or in a Lambda', () => {
    const host = loadConfig({});
    const lambda = loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'worker' });
    expect(earlyDeliveryEnabled(host)).toBe(true);
    expect(earlyDeliveryEnabled(host, { earlyDelivery: true })).toBe(true);
    expect(earlyDeliveryEnabled(host, { earlyDelivery: false })).toBe(false);
    expect(earlyDeliveryEnabled(host, { consumer: 'none' })).toBe(false);
    expect(earlyDeliveryEnabled(lambda)).toBe(false);
    expect(earlyDeliveryEnabled(lambda, { consumer: 'poll' })).toBe(true);
  });
});

describe('createEarlyOffer', () => {
  const copy = { queueName: '__wkf_workflow_x', messageId: 'msg_M', attemptOffset: 0, body: '{}' };
  function offer(over: { enabled?: boolean; handler?: boolean; running?: boolean; free?: boolean } = {}) {
    const started: string[] = [];
    const o = createEarlyOffer({
      enabled: over.enabled ?? true,
      hasHandler: () => over.handler ?? true,
      poller: () => ({
        running: over.running ?? true,
        hasFreeSlot: () => over.free ?? true,
        deliverEarly: (c, earlyId) => void started.push(`${c.messageId}>${earlyId}`),
      }),
    });
    return { o, started };
  }

  it('takes a plain send and starts it under its own id', () => {
    const { o, started } = offer();
    expect(o(copy, 'msg_E', { runId: 'wrun_1' } as never)).toBe(true);
    expect(started).toEqual(['msg_M>msg_E']);
  });

  it('refuses a delayed send, a step execution, no handler, no running poller, no free slot, or off', () => {
    const cases: Array<[ReturnType<typeof offer>, unknown, number | undefined]> = [
      [offer(), { runId: 'r' }, 5],
      [offer(), { runId: 'r', stepId: 'step_1' }, undefined],
      [offer({ handler: false }), { runId: 'r' }, undefined],
      [offer({ running: false }), { runId: 'r' }, undefined],
      [offer({ free: false }), { runId: 'r' }, undefined],
      [offer({ enabled: false }), { runId: 'r' }, undefined],
    ];
    for (const [{ o, started }, payload, delay] of cases) {
      expect(o(copy, 'msg_E', payload as never, delay)).toBe(false);
      expect(started).toEqual([]);
    }
    // A zero delay is no delay.
    expect(offer().o(copy, 'msg_E', { runId: 'r' } as never, 0)).toBe(true);
  });
});
