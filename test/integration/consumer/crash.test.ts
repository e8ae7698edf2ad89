/**
 * Crash-safe delivery of the in-process consumer (issue #12), on the emulator stack with DEFAULT
 * consumer settings unless a test says otherwise:
 * - a consumer SIGKILLed mid-delivery loses nothing: the message comes back to another consumer
 *   (within the consumer's own 30 s visibility, not the queue's 900 s);
 * - `close()` does not strand a message in an abandoned long poll: the next World gets it;
 * - a flow-route outage (5xx / 429) pauses consumption and dead-letters nothing;
 * - the poller loop survives an error thrown by `ready()`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, test } from 'vitest';
import { SqsPoller } from '../../../src/consumer/delivery/poller.js';
import { SqsReceipts } from '../../../src/consumer/delivery/receipts.js';
import type { Fixture } from '../../helpers/aws.js';
import { createFixture } from '../../helpers/aws.js';
import { MemoryLogger, makeWorld, PREFIX, receiveAll, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_crash' as ValidQueueName;
const worlds: World[] = [];
const children: ChildProcess[] = [];
async function world(opts: Parameters<typeof makeWorld>[0] = {}): Promise<World> {
  const w = await makeWorld(opts);
  worlds.push(w);
  return w;
}
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

/** Runs a .ts file in a child Node process (jiti transpiles it; no build step). */
function spawnTs(file: string, env: Record<string, string>): { child: ChildProcess; lines: string[] } {
  const jiti = path.join(
    path.dirname(createRequire(import.meta.url).resolve('jiti/package.json')),
    'lib',
    'jiti-cli.mjs',
  );
  const child = spawn(process.execPath, [jiti, file], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: string[] = [];
  let buf = '';
  child.stdout?.on('data', (d) => {
    buf += String(d);
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.on('data', () => undefined);
  return { child, lines };
}

describe.concurrent('crash-safe consumer', () => {
  test('SIGKILL mid-delivery with default settings: the message is redelivered to another consumer', {
    timeout: 120_000,
  }, async ({ expect }) => {
    const fixture: Fixture = await createFixture({}, 'kill'); // default visibility (900 s queue, 30 s consumer)
    const { child, lines } = spawnTs(path.join(__dirname, 'fixtures', 'hanging-consumer.ts'), fixture.env);
    await waitFor(() => lines.includes('started'), 30_000, 'child consumer start');
    const sender = await world({ sameAs: { fixture } as World, register: false, start: false });
    const { messageId } = await sender.queue.queue(Q, { runId: 'wrun_sigkill' });
    await waitFor(() => lines.find((l) => l.startsWith(`received ${messageId}`)), 30_000, 'delivery to the child');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const next = await world({ sameAs: { fixture } as World });
    // Generous bound: the copy reappears within the consumer visibility (30 s) after the last heartbeat.
    const d = await waitFor(
      () => next.deliveries.find((x) => x.meta.messageId === messageId),
      75_000,
      'redelivery after SIGKILL',
    );
    expect(d.meta.attempt).toBe(2);
    expect(d.body.runId).toBe('wrun_sigkill');
  });

  test('close() during a long poll strands nothing: the next World gets a new message', { timeout: 60_000 }, async ({
    expect,
  }) => {
    // Default long-poll wait (5 s): close() lets the poll finish and releases what it returns.
    const a = await world({ queueOptions: { waitTimeSeconds: undefined } });
    await sleep(1000); // a is inside a long poll now
    await a.queue.close();
    const b = await world({ sameAs: a });
    await b.queue.queue(Q, { runId: 'wrun_after_close' });
    const d = await waitFor(
      () => b.deliveries.find((x) => x.body.runId === 'wrun_after_close'),
      10_000,
      'delivery to the next World',
    );
    expect(d.meta.attempt).toBe(1);
    expect(a.deliveries).toHaveLength(0);
  });

  test('a flow-route outage (5xx, 429) pauses consumption and dead-letters nothing', { timeout: 120_000 }, async ({
    expect,
  }) => {
    const w = await world({
      env: { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2', EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' },
      register: false,
      queueOptions: { breakerCooldownMs: 300 },
    });
    const statuses = [503, 502, 500, 429, 504];
    let down = true;
    const outageAttempts: number[] = [];
    const flow = w.queue.createQueueHandler(PREFIX as never, async (body, meta) => {
      w.deliveries.push({ body, meta, at: Date.now() });
    });
    w.queue.registerHandler(PREFIX, async (req) => {
      if (!down) return flow(req);
      outageAttempts.push(Number(req.headers.get('x-vqs-message-attempt')));
      return new Response('flow route down', { status: statuses[outageAttempts.length % statuses.length] });
    });
    const sent = await Promise.all([1, 2, 3, 4].map((i) => w.queue.queue(Q, { runId: `wrun_outage_${i}` })));
    await waitFor(() => outageAttempts.length >= 10, 30_000, 'ten failed deliveries');
    down = false;
    await waitFor(() => w.deliveries.length >= 4, 60_000, 'every message after the outage');

    // More failed attempts than the DLQ budget allows, yet nothing was dead-lettered.
    expect(Math.max(...outageAttempts)).toBeGreaterThan(2);
    expect(w.deliveries.map((d) => d.meta.messageId).sort()).toEqual(sent.map((s) => s.messageId).sort());
    expect(await receiveAll(w, await w.queue.transport.dlqUrl())).toHaveLength(0);
    expect(w.logger.lines.filter((l) => l.includes('circuit open')).length).toBeGreaterThanOrEqual(1);
    expect(w.logger.lines.some((l) => l.includes('circuit closed'))).toBe(true);
    expect(w.logger.lines.some((l) => l.includes('DLQ:'))).toBe(false);
  });

  test('the poller loop survives an error thrown by ready() (e.g. an invalid PORT) and goes on', async ({ expect }) => {
    const w = await world({ start: false });
    const logger = new MemoryLogger();
    let readyCalls = 0;
    const flow = w.queue.createQueueHandler(PREFIX as never, async (body, meta) => {
      w.deliveries.push({ body, meta, at: Date.now() });
    });
    const poller = new SqsPoller({
      config: w.ctx.config,
      transport: w.queue.transport,
      receipts: new SqsReceipts(w.queue.transport),
      route: () => ({ handler: flow, url: 'http://localhost/flow' }),
      logger,
      concurrency: 2,
      waitTimeSeconds: 1,
      visibilitySeconds: 30,
      ready: async () => {
        if (++readyCalls <= 2) throw new TypeError('Invalid URL: http://127.0.0.1:not-a-port/');
        return true;
      },
    });
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_ready_throws' });
    poller.start();
    try {
      await waitFor(
        () => w.deliveries.find((d) => d.meta.messageId === messageId),
        20_000,
        'delivery after ready() threw',
      );
    } finally {
      await poller.close();
    }
    expect(readyCalls).toBeGreaterThan(2);
    expect(logger.lines.some((l) => l.includes('consumer loop failed') && l.includes('Invalid URL'))).toBe(true);
  });
});
