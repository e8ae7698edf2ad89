/**
 * Deployment affinity with two consumers on one queue (src/consumer/delivery/affinity.ts): consumer B never
 * dispatches a message for deployment A while A is active, and never spends its receive budget
 * holding it; A's consumer then delivers each one as its first attempt. A message for a retired
 * or never-registered deployment is dispatched by B (core's guard fails its run there). A DynamoDB
 * outage that fails B's registry reads for longer than the queue's receive budget holds the message
 * (whether it is B's is unknown) without spending that budget. And the
 * send rules core's guard relies on (src/deployment/targets.ts), against the real registry.
 */
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/pipeline.js';
import { markRetired, readDeployment, registerDeployment } from '../../../src/deployment/registry.js';
import { DeploymentUnavailableError } from '../../../src/deployment/unavailable-error.js';
import { disableMetrics, enableMetrics, takeMetricDocuments } from '../../../src/telemetry/metrics.js';
import { scaled } from '../../helpers/pace.js';
import { makeWorld, receiveAll, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_affinity' as ValidQueueName;
const MESSAGES = 20;
/**
 * These Worlds are wired by hand (test/helpers/queue.ts) with affinity on, as a World on a table
 * with affinity is once it has joined (src/deployment/membership.ts).
 */
const ON = { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' };

const worlds: World[] = [];
const beaters: NodeJS.Timeout[] = [];
afterAll(async () => {
  for (const t of beaters) clearInterval(t);
  disableMetrics();
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

/** The sum of `name` over the EMF documents recorded since the last call. */
function metricSum(name: string): number {
  return takeMetricDocuments().reduce((n, d) => n + (typeof d[name] === 'number' ? (d[name] as number) : 0), 0);
}

describe('two deployments on one queue', () => {
  test("B never dispatches A's messages, nor spends their receive budget; A delivers each as attempt 1", {
    tags: ['timing'],
    timeout: scaled(240_000),
  }, async () => {
    const a = await makeWorld({ env: ON, tuning: { deploymentId: 'dep-a' }, start: false });
    worlds.push(a);
    const bOutcomes: DeliveryOutcome[] = [];
    const b = await makeWorld({
      sameAs: a,
      tuning: { deploymentId: 'dep-b' },
      queueOptions: { onDeliveryOutcome: (o) => bOutcomes.push(o) },
    });
    worlds.push(b);
    expect(await a.queue.getDeploymentId()).toBe('dep-a');
    expect(await b.queue.getDeploymentId()).toBe('dep-b');
    await registerDeployment(a.ctx, 'dep-a', 'node');
    await registerDeployment(b.ctx, 'dep-b', 'node');
    // Their heartbeats, as a running World counts them: B sees A's counter move (A is live).
    for (const [w, id] of [
      [a, 'dep-a'],
      [b, 'dep-b'],
    ] as const)
      beaters.push(setInterval(() => void registerDeployment(w.ctx, id, 'node').catch(() => undefined), 1000));
    enableMetrics({ dimensions: { Queue: 'affinity-test' } });
    metricSum('DeliveriesHeldForDeployment');

    // A sends while only B consumes: every copy reaches B first.
    const ids = new Set<string>();
    for (let i = 0; i < MESSAGES; i++) ids.add(String((await a.queue.queue(Q, { i } as never)).messageId));
    const heldAtB = () =>
      new Set(bOutcomes.filter((o) => o.action === 'delete' && o.hold === 'other-deployment').map((o) => o.messageId));
    await waitFor(() => heldAtB().size === MESSAGES, scaled(60_000), 'B to hold every message of A');
    expect(b.deliveries).toHaveLength(0);
    // Every hold replaced its copy: none was left to count toward the DLQ.
    expect(bOutcomes.every((o) => o.action === 'delete' && o.reason === 'held')).toBe(true);
    // Holds are counted (EMF, no deployment dimension): at least one per message of A.
    expect(metricSum('DeliveriesHeldForDeployment')).toBeGreaterThanOrEqual(MESSAGES);

    // B's own message is B's to deliver.
    await b.queue.queue(Q, { own: true } as never);
    await waitFor(() => b.deliveries.some((d) => d.body.own), scaled(20_000), "B to deliver B's own message");

    await a.queue.start();
    await waitFor(
      () => new Set(a.deliveries.map((d) => d.meta.messageId)).size === MESSAGES,
      scaled(90_000),
      'A to deliver all',
    );
    expect(new Set(a.deliveries.map((d) => d.meta.messageId))).toEqual(ids);
    // Holds are not dispatches: each of A's deliveries is its message's first attempt.
    expect(a.deliveries.map((d) => d.meta.attempt)).toEqual(a.deliveries.map(() => 1));
    expect(b.deliveries.filter((d) => !d.body.own)).toHaveLength(0);
    expect(await receiveAll(a, await a.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test('DynamoDB failing the registry read for longer than the receive budget: held, never dispatched nor dead-lettered; attempt 1 once it answers', {
    tags: ['timing'],
    timeout: scaled(180_000),
  }, async () => {
    // The queue dead-letters after 2 receives: a hold that counted as one would send the message
    // there within the outage.
    const env = { ...ON, EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2', EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '2' };
    const a = await makeWorld({ env, tuning: { deploymentId: 'dep-down-a' }, start: false });
    worlds.push(a);
    const bOutcomes: DeliveryOutcome[] = [];
    const b = await makeWorld({
      sameAs: a,
      tuning: { deploymentId: 'dep-down-b' },
      start: false,
      queueOptions: { onDeliveryOutcome: (o) => bOutcomes.push(o) },
    });
    worlds.push(b);
    await registerDeployment(a.ctx, 'dep-down-a', 'node');
    // B's DynamoDB answers no registry read (a 503 on every GetItem of a DEPLOY# item).
    let down = true;
    b.fixture.clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        const name = (context as { commandName?: string }).commandName;
        const key = JSON.stringify((args as { input: { Key?: unknown } }).input.Key ?? {});
        if (down && name === 'GetItemCommand' && key.includes('DEPLOY#'))
          throw Object.assign(new Error('Service Unavailable'), {
            name: 'ServiceUnavailable',
            $fault: 'server',
            $metadata: { httpStatusCode: 503 },
          });
        return next(args);
      },
      { step: 'initialize', name: 'registryDown' },
    );
    let blind = false;
    b.fixture.clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (blind && (context as { commandName?: string }).commandName === 'ReceiveMessageCommand') {
          await new Promise((r) => setTimeout(r, 200));
          return { output: { Messages: [], $metadata: {} }, response: {} } as never;
        }
        return next(args);
      },
      { step: 'initialize', name: 'blindAfterOutage' },
    );
    const { messageId } = await a.queue.queue(Q, { down: true } as never);
    await b.queue.start();
    const unreadable = () => bOutcomes.filter((o) => o.hold === 'deployment-registry-unreadable');
    // More holds than the queue allows receives.
    await waitFor(() => unreadable().length >= 3, scaled(60_000), 'B to hold the message through the outage');
    expect(b.deliveries).toHaveLength(0);
    expect(bOutcomes.every((o) => o.action === 'delete' && o.reason === 'held')).toBe(true);
    expect(await receiveAll(a, await a.queue.transport.dlqUrl())).toHaveLength(0);

    // The registry answers again and B receives no more (a receive already waiting may still
    // bring B a copy, which it holds: a fresh copy, attempt 1 again). Had B kept receiving, each
    // copy it won it would hold for a second or more, and how soon A won one would be a race of two
    // pollers that a loaded machine lost for minutes; B holding A's messages while A polls is the
    // first test's. (Not B's close(): it releases what its last receive brings, which counts a
    // receive against the budget of 2.)
    down = false;
    blind = true;
    await a.queue.start();
    await waitFor(() => a.deliveries.some((d) => d.meta.messageId === messageId), scaled(60_000), 'A to deliver it');
    expect(a.deliveries.filter((d) => d.meta.messageId === messageId).map((d) => d.meta.attempt)).toEqual([1]);
    expect(b.deliveries).toHaveLength(0);
    expect(await receiveAll(a, await a.queue.transport.dlqUrl())).toHaveLength(0);
  });

  test('a message for a retired or never-registered deployment is dispatched at once by the consumer it reaches', async () => {
    const b = await makeWorld({ env: ON, tuning: { deploymentId: 'dep-b' } });
    worlds.push(b);
    await registerDeployment(b.ctx, 'dep-b', 'node');
    await registerDeployment(b.ctx, 'dep-r', 'node');
    expect(await markRetired(b.ctx, 'dep-r', 'test')).toBe(true);
    expect(await markRetired(b.ctx, 'dep-r', 'again')).toBe(true); // applied twice: unchanged
    expect(await readDeployment(b.ctx, 'dep-r', true)).toMatchObject({ status: 'retired', reason: 'test' });
    expect(await markRetired(b.ctx, 'dep-none', 'test')).toBe(false);
    // A hook wake (no re-route, no start) for them goes out: its delivery fails the run, not the send.
    await b.queue.queue(Q, { to: 'retired' } as never, { deploymentId: 'dep-r' });
    await b.queue.queue(Q, { to: 'unknown' } as never, { deploymentId: 'dep-none' });
    await waitFor(() => b.deliveries.length === 2, scaled(30_000), 'both to be dispatched');
    expect(b.deliveries.map((d) => d.meta.attempt)).toEqual([1, 1]);
  });
});

describe('what core may send to another deployment (its guard re-routes and starts)', () => {
  test('re-routes and starts to a retired or unknown deployment are refused as unavailable; to an active one they go', async () => {
    const b = await makeWorld({ env: ON, tuning: { deploymentId: 'dep-b' }, start: false });
    worlds.push(b);
    await registerDeployment(b.ctx, 'dep-a', 'node');
    await registerDeployment(b.ctx, 'dep-r', 'node');
    await markRetired(b.ctx, 'dep-r', 'test');
    const reroute = { runId: 'wrun_x', deploymentMismatchRetryCount: 1 } as never;
    const start = { runId: 'wrun_y', runInput: { deploymentId: 'dep-r' } } as never;
    for (const [target, payload] of [
      ['dep-r', reroute],
      ['dep-r', start],
      ['dep-gone', reroute],
    ] as const) {
      const err = await b.queue.queue(Q, payload, { deploymentId: target }).catch((e) => e);
      expect(err).toBeInstanceOf(DeploymentUnavailableError);
      expect(b.ctx.config.deploymentAffinity).toBe('on');
    }
    await expect(b.queue.queue(Q, reroute, { deploymentId: 'dep-a' })).resolves.toMatchObject({
      messageId: expect.stringMatching(/^msg_/),
    });
    // Sent, stamped with its target.
    const sent = await receiveAll(b, await b.queue.transport.queueUrl());
    expect(sent.map((m) => m.MessageAttributes?.['eve.dep']?.StringValue)).toEqual(['dep-a']);
  });
});
