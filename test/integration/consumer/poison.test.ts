/**
 * Poison is dead-lettered however its receives interleave with holds (src/consumer/delivery/failures.ts):
 * failed dispatches are counted in the message, across the replacements that reset SQS's receive
 * count, and the consumer moves the message to the redrive policy's DLQ itself when they reach its
 * `maxReceiveCount`. Two deployments on one queue with affinity on: A's flow route fails the
 * message, B holds it (A's, and A is live); the receives alternate A, B, A, B, A.
 *
 * - through the pipeline the in-process poller runs, and through the Lambda SQS handler;
 * - with two real pollers racing for the copies;
 * - `redrive` replays the dead letter, with a fresh allowance of failures;
 * - the previous release's consumer (test/helpers/builds.ts) delivers a message carrying the count.
 */
import { DeleteMessageCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { moveDlqMessages } from '../../../src/cli/redrive/dlq-mover.js';
import { createDeploymentFilter } from '../../../src/consumer/delivery/affinity.js';
import { composeDelivery } from '../../../src/consumer/delivery/compose.js';
import type { DeliveryDeps } from '../../../src/consumer/delivery/deps.js';
import { type DeliveryOutcome, deliverMessage } from '../../../src/consumer/delivery/pipeline.js';
import { inboundFromSdk } from '../../../src/consumer/delivery/poller.js';
import { createSqsHandler, type SQSRecord } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { deploymentIdentity } from '../../../src/deployment/id.js';
import { registerDeployment } from '../../../src/deployment/registry.js';
import { MSG_ATTR } from '../../../src/queue/encoding.js';
import { type Build, buildRef, PREVIOUS_REF } from '../../helpers/builds.js';
import { drainQueue, eveId, makeWorld, PREFIX, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_poison' as ValidQueueName;
/** The queue's redrive policy moves a copy after 3 receives; backoffs stay at 2 s. */
const MAX = 3;
const ENV = {
  EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on',
  EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2',
  EVE_WORLD_AWS_MAX_RECEIVE_COUNT: String(MAX),
};

const worlds: World[] = [];
const beaters: NodeJS.Timeout[] = [];
afterAll(async () => {
  for (const t of beaters) clearInterval(t);
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

/** A (whose route fails every delivery) and B, both live, on one queue; neither polls. */
async function twoDeployments(tag: string): Promise<{ a: World; b: World }> {
  const a = await makeWorld({ env: ENV, tuning: { deploymentId: `${tag}-a` }, start: false });
  worlds.push(a);
  const b = await makeWorld({ sameAs: a, tuning: { deploymentId: `${tag}-b` }, start: false });
  worlds.push(b);
  a.respond = () => {
    throw new Error('poison on purpose');
  };
  await registerDeployment(a.ctx, `${tag}-a`, 'node');
  await registerDeployment(b.ctx, `${tag}-b`, 'node');
  return { a, b };
}

/** The pipeline's dependencies as a consumer of `w` composes them (its route and its affinity). */
function pipelineOf(w: World): DeliveryDeps {
  const route = w.queue.createQueueHandler(PREFIX as never, async (body: any, meta) => {
    w.deliveries.push({ body, meta, at: Date.now() });
    return w.respond({ body, meta, at: Date.now() });
  });
  const c = composeDelivery(w.ctx, w.queue.transport, { logger: w.logger, inProcess: () => route });
  return {
    ...c.deps,
    visibilitySeconds: 2,
    affinity: createDeploymentFilter(w.ctx, deploymentIdentity(w.fixture.config)),
  };
}

/** The next copy on the queue (replacements come back after their backoff). */
async function nextCopy(w: World, url: string): Promise<Message> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await w.fixture.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
      }),
    );
    if (r.Messages?.[0]) return r.Messages[0];
    if (Date.now() > end) throw new Error('no copy on the queue within 30 s');
  }
}

function recordOf(m: Message): SQSRecord {
  return {
    messageId: m.MessageId as string,
    receiptHandle: m.ReceiptHandle as string,
    body: m.Body as string,
    attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount },
    messageAttributes: Object.fromEntries(
      Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
        k,
        { stringValue: v.StringValue, dataType: 'String' },
      ]),
    ),
  };
}

const shape = (o: DeliveryOutcome) => `${o.action}:${o.reason}`;

describe('failed dispatches that alternate with holds reach the DLQ after maxReceiveCount of them', () => {
  test('through the pipeline of the in-process poller', async () => {
    const { a, b } = await twoDeployments('pp');
    const [viaA, viaB] = [pipelineOf(a), pipelineOf(b)];
    const url = await a.queue.transport.queueUrl();
    const { messageId } = await a.queue.queue(Q, { runId: 'wrun_poison_poller' } as never);
    const outcomes: string[] = [];
    for (const deps of [viaA, viaB, viaA, viaB, viaA]) {
      const m = await nextCopy(a, url);
      expect(eveId(m)).toBe(messageId);
      // Every copy is a fresh one: SQS's own count never gets past its first receive.
      expect(m.Attributes?.ApproximateReceiveCount).toBe('1');
      const outcome = await deliverMessage(inboundFromSdk(m), deps);
      outcomes.push(shape(outcome));
      if (outcome.action === 'delete')
        await a.fixture.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
    }
    expect(outcomes).toEqual([
      'delete:retried',
      'delete:held',
      'delete:retried',
      'delete:held',
      'delete:dead-lettered',
    ]);
    // Three dispatches, each the message's next attempt (holds are not attempts), all failed.
    expect(a.deliveries.map((d) => d.meta.attempt)).toEqual([1, 2, 3]);
    expect(b.deliveries).toHaveLength(0);
    const dead = await drainQueue(a.fixture.clients.sqs, await a.queue.transport.dlqUrl(), 3);
    expect(dead.map(eveId)).toEqual([messageId]);
    expect(dead[0].MessageAttributes?.[MSG_ATTR.failures]?.StringValue).toBe(String(MAX));
    expect(dead[0].MessageAttributes?.[MSG_ATTR.attemptOffset]?.StringValue).toBe('3');
    expect(await drainQueue(a.fixture.clients.sqs, url, 1)).toEqual([]);
    const dlqLines = a.logger.lines.filter((l) => l.startsWith('ERROR [eve-world-aws] DLQ:'));
    expect(dlqLines).toHaveLength(1);
    expect(dlqLines[0]).toContain(`failed ${MAX}/${MAX} dispatches`);
    expect(dlqLines[0]).toContain('run wrun_poison_poller');

    // `redrive` replays it, with the whole allowance of failures again: the next failure is
    // retried, not dead-lettered at once.
    await sleep(3500); // the dead letter visible again
    const moved = await moveDlqMessages({
      sqs: a.fixture.clients.sqs,
      sourceUrl: await a.queue.transport.dlqUrl(),
      targetUrl: url,
    });
    expect(moved).toMatchObject({ moved: 1, failed: 0 });
    const again = await nextCopy(a, url);
    expect(eveId(again)).toBe(messageId);
    expect(again.MessageAttributes?.[MSG_ATTR.failures]).toBeUndefined();
    expect(shape(await deliverMessage(inboundFromSdk(again), viaA))).toBe('delete:retried');
    expect(a.deliveries.at(-1)?.meta.attempt).toBe(4);
  }, 120_000);

  test('through the Lambda SQS handler', async () => {
    const { a, b } = await twoDeployments('lh');
    const viaB = pipelineOf(b);
    const url = await a.queue.transport.queueUrl();
    const failing = a.queue.createQueueHandler(PREFIX as never, async (body: any, meta) => {
      a.deliveries.push({ body, meta, at: Date.now() });
      throw new Error('poison on purpose');
    });
    const outcomes: string[] = [];
    const lambda = createSqsHandler({
      flow: failing,
      context: a.ctx,
      logger: a.logger,
      onOutcome: (o) => outcomes.push(shape(o)),
    });
    const { messageId } = await a.queue.queue(Q, { runId: 'wrun_poison_lambda' } as never);
    for (const turn of ['lambda', 'hold', 'lambda', 'hold', 'lambda'] as const) {
      const m = await nextCopy(a, url);
      expect(eveId(m)).toBe(messageId);
      let settled: boolean;
      if (turn === 'lambda') {
        // As the event source mapping does: a record reported as a success is deleted.
        settled = (await lambda({ Records: [recordOf(m)] })).batchItemFailures.length === 0;
      } else {
        const outcome = await deliverMessage(inboundFromSdk(m), viaB);
        outcomes.push(shape(outcome));
        settled = outcome.action === 'delete';
      }
      if (settled)
        await a.fixture.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
    }
    expect(outcomes).toEqual([
      'delete:retried',
      'delete:held',
      'delete:retried',
      'delete:held',
      'delete:dead-lettered',
    ]);
    expect(a.deliveries.map((d) => d.meta.attempt)).toEqual([1, 2, 3]);
    const dead = await drainQueue(a.fixture.clients.sqs, await a.queue.transport.dlqUrl(), 60);
    expect(dead.map(eveId)).toEqual([messageId]);
    expect(await drainQueue(a.fixture.clients.sqs, url, 1)).toEqual([]);
  }, 120_000);

  test('two live pollers racing for the copies: dead-lettered after exactly maxReceiveCount failed dispatches', async () => {
    const { a, b } = await twoDeployments('race');
    const bOutcomes: DeliveryOutcome[] = [];
    // B polls first, so the first copies meet it; A joins once B held one.
    const b2 = await makeWorld({
      sameAs: a,
      tuning: { deploymentId: 'race-b' },
      queueOptions: { onDeliveryOutcome: (o) => bOutcomes.push(o) },
    });
    worlds.push(b2);
    // A beats as a running World does, so B sees A's counter move (A is live: B's holds stay short)
    // however long the race takes (src/deployment/liveness.ts).
    beaters.push(setInterval(() => void registerDeployment(a.ctx, 'race-a', 'node').catch(() => undefined), 1000));
    const { messageId } = await a.queue.queue(Q, { runId: 'wrun_poison_race' } as never);
    await waitFor(() => bOutcomes.some((o) => o.hold === 'other-deployment'), 30_000, 'B to hold the message');
    await a.queue.start();
    const dlq = await a.queue.transport.dlqUrl();
    let dead: Message[] = [];
    const end = Date.now() + 90_000;
    while (dead.length === 0 && Date.now() < end) {
      dead = await drainQueue(a.fixture.clients.sqs, dlq, 60);
      if (dead.length === 0) await sleep(500);
    }
    expect(dead.map(eveId)).toEqual([messageId]);
    expect(a.deliveries).toHaveLength(MAX);
    expect(a.deliveries.map((d) => d.meta.attempt)).toEqual([1, 2, 3]);
    expect(b.deliveries).toHaveLength(0);
    expect(b2.deliveries).toHaveLength(0);
  }, 150_000);
});

describe('the move to the DLQ loses nothing and is safe applied twice', () => {
  test('a refused DLQ send keeps the copy (moved on the next failure); a lost delete leaves a second DLQ copy of the same message', async () => {
    const { a } = await twoDeployments('mv');
    const viaA = pipelineOf(a);
    const url = await a.queue.transport.queueUrl();
    const dlq = await a.queue.transport.dlqUrl();
    let refuse = 1;
    a.fixture.clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input: { QueueUrl?: string } }).input;
        if (
          (context as { commandName?: string }).commandName === 'SendMessageCommand' &&
          input.QueueUrl === dlq &&
          refuse > 0
        ) {
          refuse--;
          throw Object.assign(new Error('test: the DLQ refuses'), {
            name: 'InternalError',
            $metadata: { httpStatusCode: 500 },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'testRefuseDlqSend' },
    );
    const { messageId } = await a.queue.queue(Q, { runId: 'wrun_poison_move' } as never);
    const outcomes: string[] = [];
    // Failures 1 and 2 are counted in fresh copies; the third's move is refused (the copy is kept);
    // the fourth moves it, and its delete is "lost" (not done); the copy comes back, fails once
    // more and is moved again.
    for (const deleteIt of [true, true, true, false, true]) {
      const m = await nextCopy(a, url);
      const outcome = await deliverMessage(inboundFromSdk(m), viaA);
      outcomes.push(shape(outcome));
      if (outcome.action === 'delete' && deleteIt)
        await a.fixture.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
    }
    expect(outcomes).toEqual([
      'delete:retried',
      'delete:retried',
      'keep:failed',
      'delete:dead-lettered',
      'delete:dead-lettered',
    ]);
    const dead = await drainQueue(a.fixture.clients.sqs, dlq, 3);
    expect(dead.map(eveId)).toEqual([messageId, messageId]);
    expect(await drainQueue(a.fixture.clients.sqs, url, 1)).toEqual([]);
    expect(a.logger.lines.some((l) => l.includes('could not move') && l.includes('kept for retry'))).toBe(true);
  }, 120_000);
});

describe('an older consumer', () => {
  let previous: Build;
  beforeAll(async () => {
    previous = await buildRef(PREVIOUS_REF);
  }, 180_000);

  test(`the previous release (${PREVIOUS_REF}) delivers a message carrying a failure count as any other`, async () => {
    const w = await makeWorld({ env: { EVE_WORLD_AWS_MAX_RECEIVE_COUNT: String(MAX) }, start: false });
    worlds.push(w);
    // A copy as this build's consumer replaces a failed one: two failures and two dispatches so far.
    await w.queue.transport.send(
      { queueName: Q, messageId: 'msg_counted', attemptOffset: 2, failures: 2, body: '{"runId":"wrun_counted"}' },
      0,
    );
    const saved = { ...process.env };
    Object.assign(process.env, w.fixture.env);
    const { createWorld } = (await import(previous.indexUrl)) as {
      createWorld: () => {
        registerHandler(prefix: string, h: (r: Request) => Promise<Response>): void;
        createQueueHandler(
          prefix: string,
          h: (body: unknown, meta: { attempt: number; messageId: string }) => unknown,
        ): (r: Request) => Promise<Response>;
        start(): Promise<void>;
        close(): Promise<void>;
      };
    };
    const old = createWorld();
    process.env = saved;
    const got: Array<{ body: unknown; meta: { attempt: number; messageId: string } }> = [];
    old.registerHandler(
      PREFIX,
      old.createQueueHandler(PREFIX, async (body, meta) => {
        got.push({ body, meta });
      }),
    );
    await old.start();
    try {
      await waitFor(() => got.length > 0, 30_000, 'the previous build to deliver it');
    } finally {
      await old.close();
    }
    expect(got[0].meta).toMatchObject({ messageId: 'msg_counted', attempt: 3 });
    expect(got[0].body).toEqual({ runId: 'wrun_counted' });
  }, 120_000);
});
