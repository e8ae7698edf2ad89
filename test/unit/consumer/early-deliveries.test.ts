/**
 * The early-delivery registry (src/consumer/early-deliveries.ts) on its own clock: a verdict goes
 * to one copy, once; it waits for its copy only so long and only so many are kept; a rejected or
 * missing verdict means "deliver the copy as usual".
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { EARLY_MAX_ENTRIES, EARLY_RETAIN_MS, EarlyDeliveries } from '../../../src/consumer/early-deliveries.js';
import { earlyDeliveryEnabled } from '../../../src/consumer/index.js';

/** Lets settled verdicts re-age (their registry hears of them a microtask later). */
const settle = () => new Promise((r) => setImmediate(r));

describe('EarlyDeliveries', () => {
  it('hands a verdict to the first copy that asks, and to no other', async () => {
    const early = new EarlyDeliveries<string>('me', () => 0);
    early.begin('msg_a', Promise.resolve('ack'));
    expect(await early.take('msg_a')).toBe('ack');
    expect(early.take('msg_a')).toBeUndefined();
    expect(early.take('msg_b')).toBeUndefined();
    expect(early.size).toBe(0);
  });

  it('a copy that arrives while the early delivery runs waits for its verdict', async () => {
    const early = new EarlyDeliveries<string>('me', () => 0);
    let finish!: (v: string) => void;
    early.begin('msg_a', new Promise((r) => (finish = r)));
    const taken = early.take('msg_a');
    expect(taken).toBeDefined();
    let got: string | undefined;
    void taken!.then((v) => (got = v));
    await Promise.resolve();
    expect(got).toBeUndefined();
    finish('later');
    expect(await taken).toBe('later');
  });

  it('a rejected early delivery reads as "deliver the copy as usual"', async () => {
    const early = new EarlyDeliveries<string>('me', () => 0);
    early.begin('msg_a', Promise.reject(new Error('boom')));
    expect(await early.take('msg_a')).toBeUndefined();
  });

  it('a verdict older than the retention is dropped: the copy is delivered as usual', async () => {
    let now = 1_000;
    const early = new EarlyDeliveries<string>('me', () => now);
    early.begin('msg_old', Promise.resolve('ack'));
    early.begin('msg_new', Promise.resolve('ack'));
    await settle();
    now += EARLY_RETAIN_MS + 1;
    expect(early.take('msg_old')).toBeUndefined();
    // Pruned on the next begin, oldest first.
    early.begin('msg_next', Promise.resolve('ack'));
    expect(early.size).toBe(1);
    expect(await early.take('msg_next')).toBe('ack');
  });

  it('a delivery still running is never dropped, however old; its retention starts at its verdict', async () => {
    let now = 1_000;
    const early = new EarlyDeliveries<string>('me', () => now, EARLY_RETAIN_MS, 2);
    let finish!: (v: string) => void;
    early.begin('msg_long', new Promise((r) => (finish = r)));
    now += 2 * EARLY_RETAIN_MS;
    for (let i = 0; i < 4; i++) early.begin(`msg_${i}`, Promise.resolve('ack'));
    await settle();
    // Over the cap and past retention, the running one stays (its record renewals depend on it).
    expect(early.has('msg_long')).toBe(true);
    finish('ack');
    await settle();
    now += EARLY_RETAIN_MS - 1;
    early.begin('msg_after', Promise.resolve('ack'));
    expect(early.has('msg_long')).toBe(true);
    expect(await early.take('msg_long')).toBe('ack');
  });

  it('keeps at most maxEntries verdicts, dropping the oldest', async () => {
    const early = new EarlyDeliveries<number>('me', () => 0, EARLY_RETAIN_MS, 3);
    for (let i = 0; i < 5; i++) early.begin(`msg_${i}`, Promise.resolve(i));
    await settle();
    expect(early.size).toBe(3);
    expect(early.take('msg_0')).toBeUndefined();
    expect(early.take('msg_1')).toBeUndefined();
    expect(await early.take('msg_4')).toBe(4);
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
