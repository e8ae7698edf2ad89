/**
 * Two copies of one logical message decided at the same time in one process (SQS standard queues
 * occasionally deliver twice): at most one is dispatched (src/consumer/delivery/decide.ts,
 * `inFlight`), also while the first copy's flow request is still being built. The signing secret
 * is read through a gate both copies wait at, so the copies overlap by construction, not timing.
 */
import type { ValidQueueName } from '@workflow/world';
import { afterAll, test } from 'vitest';
import { deliverMessage } from '../../../src/consumer/delivery/pipeline.js';
import { inboundFromSdk } from '../../../src/consumer/delivery/poller.js';
import { SqsReceipts } from '../../../src/consumer/delivery/receipts.js';
import { makeWorld, receiveAll, type World } from '../../helpers/queue.js';

const Q = '__wkf_workflow_inflight' as ValidQueueName;
const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

test('a second copy arriving while the first one is being built is held, never dispatched', async ({ expect }) => {
  const world = await makeWorld({ register: false, start: false });
  worlds.push(world);
  const { messageId } = await world.queue.queue(Q, { runId: 'wrun_inflight' });
  const url = await world.queue.transport.queueUrl();
  const [m] = await receiveAll(world, url);
  expect(m).toBeDefined();

  // The secret is handed out only once a copy has asked for it: until then a copy that got past
  // the in-flight check is still building its request.
  let askedOnce: () => void = () => undefined;
  const asked = new Promise<void>((r) => {
    askedOnce = r;
  });
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const dispatched: string[] = [];
  const receipts = new SqsReceipts(world.queue.transport);
  const deps = {
    config: world.ctx.config,
    transport: world.queue.transport,
    receipts,
    route: () => ({
      url: 'http://localhost/.well-known/workflow/v1/flow',
      handler: async (req: Request) => {
        dispatched.push(req.headers.get('x-vqs-message-id') ?? '');
        return new Response('{"ok":true}');
      },
    }),
    signingSecret: async () => {
      askedOnce();
      await gate;
      return 'a'.repeat(64);
    },
    visibilitySeconds: 30,
    logger: world.logger,
    inFlight: new Set<string>(),
  };
  const first = deliverMessage(inboundFromSdk(m), deps);
  await asked;
  const second = deliverMessage(inboundFromSdk(m), deps);
  // The second copy's decision is made (held) or it waits at the gate too: release both.
  await new Promise((r) => setImmediate(r));
  release();
  const outcomes = await Promise.all([first, second]);

  expect(dispatched).toEqual([messageId]);
  expect(outcomes[0]).toMatchObject({ action: 'delete', reason: 'ack', messageId });
  expect(outcomes[1]).toMatchObject({ action: 'delete', reason: 'held', hold: 'copy-running', messageId });
  expect(deps.inFlight.size).toBe(0);
});
