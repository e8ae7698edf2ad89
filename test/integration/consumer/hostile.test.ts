/**
 * Hostile deliveries, property style (seeded): random queue names, message ids, pass-through
 * headers, attributes and bodies, sent through `queue()` where it accepts them and pushed straight
 * onto the SQS queue otherwise, beside ordinary traffic, through the in-process poller and through
 * the Lambda SQS handler (an event-source-mapping loop: real receives, `batchItemFailures`, deletes
 * of the rest), both delivering signed over real HTTP to a `createQueueHandler` flow route.
 *
 * Properties:
 * - what `queue()` accepts is delivered, with the queue name and message id byte for byte;
 * - what it refuses, it refuses with an error naming the problem, and nothing is sent;
 * - ordinary messages are all delivered, and the circuit never opens (poison is no outage);
 * - every poison message ends in the DLQ after `maxReceiveCount` receives with exactly one DLQ
 *   log line naming its run (when it has one), queue and reason; no copy is parked or re-sent.
 */
import {
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { DeliveryOutcome, InboundMessage } from '../../../src/consumer/delivery/pipeline.js';
import { createSqsHandler, type SQSRecord } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { encodePayload, MSG_ATTR } from '../../../src/queue/encoding.js';
import { deliveryInputProblem } from '../../../src/queue/header-values.js';
import { seededRandom } from '../../helpers/faults-proxy.js';
import { makeWorld, receiveAll, serve, sleep, type World } from '../../helpers/queue.js';
import { toRecord } from '../../lambda/esm-simulator.js';

const SECRET = 'hostile-secret-0123456789abcdefgh';
const PREFIX = '__wkf_workflow_';
const MAX_RECEIVES = 3;
const TAG = 'test.tag';

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

/** Pieces hostile strings are built from: CJK, emoji, white space, controls, the encoding marker. */
const PIECES = [
  '注文',
  '注文する',
  '/./workflows/',
  '//',
  '🙂',
  ' ',
  '\t',
  '\u00e9',
  '\u200b',
  '%',
  '%E6',
  "UTF-8''",
  '"',
  '\\',
  'é',
  'Ω',
  'a',
  'step',
  '\u00ff',
  '\u0100',
];

function hostile(rand: () => number, max = 6): string {
  let s = '';
  const n = 1 + Math.floor(rand() * max);
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(rand() * PIECES.length)];
  return s;
}

/** Strings `queue()` must refuse: characters SQS cannot carry, bad header names, lone surrogates. */
const REFUSED: Array<{ name: string; headers?: Record<string, string>; problem: RegExp }> = [
  { name: `${PREFIX}nul\u0000name`, problem: /U\+0000/ },
  { name: `${PREFIX}lone\ud800`, problem: /U\+D800/ },
  { name: `${PREFIX}ok`, headers: { 'bad name': 'v' }, problem: /not an HTTP header name/ },
  { name: `${PREFIX}ok`, headers: { 注文: 'v' }, problem: /not an HTTP header name/ },
  { name: `${PREFIX}ok`, headers: { 'x-ok': 'lone \udc00' }, problem: /lone UTF-16 surrogate/ },
];

type Expect =
  | { kind: 'deliver'; queueName: string; messageId?: string; runId: string }
  | { kind: 'poison'; tag: string; runId?: string; why: string };

const str = (v: string): MessageAttributeValue => ({ DataType: 'String', StringValue: v });

interface Traffic {
  expected: Expect[];
  refusedErrors: string[];
}

/** Sends the seeded mix; returns what each message must come to. */
async function sendTraffic(w: World, seed: number): Promise<Traffic> {
  const rand = seededRandom(seed);
  const url = await w.queue.transport.queueUrl();
  const expected: Expect[] = [];
  const push = async (attrs: Record<string, MessageAttributeValue>, body: string, e: Expect) => {
    await w.fixture.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageAttributes: attrs }),
    );
    expected.push(e);
  };

  // Ordinary traffic.
  for (let i = 0; i < 6; i++) {
    const runId = `wrun_ordinary_${seed}_${i}`;
    const { messageId } = await w.queue.queue(`${PREFIX}ordinary` as ValidQueueName, { runId });
    expected.push({ kind: 'deliver', queueName: `${PREFIX}ordinary`, messageId: messageId as string, runId });
  }
  // Hostile but valid through queue(): delivered losslessly, headers too.
  for (let i = 0; i < 6; i++) {
    const queueName = `${PREFIX}${hostile(rand)}`;
    const runId = `wrun_hostile_${seed}_${i}`;
    const headers = { 'x-custom': hostile(rand), 'x-second': ` ${hostile(rand, 2)} ` };
    if (!ValidQueueName.safeParse(queueName).success || deliveryInputProblem(queueName, headers)) continue;
    const { messageId } = await w.queue.queue(queueName as ValidQueueName, { runId }, { headers });
    expected.push({ kind: 'deliver', queueName, messageId: messageId as string, runId });
  }
  // Refused by queue(), with a clear error.
  const refusedErrors: string[] = [];
  for (const r of REFUSED) {
    const err = await w.queue
      .queue(r.name as ValidQueueName, { runId: 'wrun_refused' }, r.headers ? { headers: r.headers } : undefined)
      .then(
        () => undefined,
        (e: Error) => e.message,
      );
    expect(err, JSON.stringify(r)).toMatch(r.problem);
    refusedErrors.push(err as string);
  }
  // Pushed straight onto SQS: hostile attributes a bug or an attacker with sqs:SendMessage could write.
  for (let i = 0; i < 10; i++) {
    const tag = `t${seed}_${i}`;
    const runId = `wrun_poison_${seed}_${i}`;
    const name = `${PREFIX}${hostile(rand)}`;
    const id = `msg_${hostile(rand)}`;
    const base = { [MSG_ATTR.queue]: str(name), [MSG_ATTR.id]: str(id), [TAG]: str(tag) };
    switch (i % 7) {
      case 0: // a pass-through header name no request can carry
        await push(
          { ...base, [MSG_ATTR.headers]: str(JSON.stringify({ [hostile(rand)]: 'v' })) },
          encodePayload({ runId }),
          {
            kind: 'poison',
            tag,
            runId,
            why: 'header name',
          },
        );
        break;
      case 1: // a hostile name with a body that is not typed JSON
        await push(base, `{"runId": ${hostile(rand)}`, { kind: 'poison', tag, why: 'body' });
        break;
      case 2: // a queue of another prefix
        await push({ ...base, [MSG_ATTR.queue]: str(`__other_${hostile(rand)}`) }, encodePayload({ runId }), {
          kind: 'poison',
          tag,
          runId,
          why: 'queue',
        });
        break;
      case 3: // an attempt offset that is no number
        await push({ ...base, [MSG_ATTR.attemptOffset]: str(hostile(rand)) }, encodePayload({ runId }), {
          kind: 'poison',
          tag,
          runId,
          why: 'attempt',
        });
        break;
      case 4: // no attributes, not an envelope
        await push({ [TAG]: str(tag) }, hostile(rand), { kind: 'poison', tag, why: 'no attributes' });
        break;
      case 5: // a JSON body that is not an object
        await push(base, JSON.stringify([runId, hostile(rand)]), { kind: 'poison', tag, why: 'array' });
        break;
      case 6: // hostile name and id, valid otherwise: delivered
        await push(base, encodePayload({ runId }), { kind: 'deliver', queueName: name, messageId: id, runId });
        break;
    }
  }
  return { expected, refusedErrors };
}

/** Waits until every message came to its end; returns the DLQ copies. */
async function settleAll(
  w: World,
  traffic: Traffic,
  delivered: () => Array<{ body: any; meta: any }>,
): Promise<Message[]> {
  const dlqUrl = await w.queue.transport.dlqUrl();
  const dead: Message[] = [];
  const poison = traffic.expected.filter((e) => e.kind === 'poison');
  const deliver = traffic.expected.filter((e) => e.kind === 'deliver');
  const end = Date.now() + 60_000;
  for (;;) {
    dead.push(...(await receiveAll(w, dlqUrl)));
    const deadTags = new Set(dead.map((m) => m.MessageAttributes?.[TAG]?.StringValue));
    const runs = new Set(delivered().map((d) => d.body.runId));
    if (poison.every((p) => deadTags.has(p.tag)) && deliver.every((d) => runs.has(d.runId))) return dead;
    if (Date.now() > end) {
      throw new Error(
        `not settled after 60 s: poison missing from the DLQ ${JSON.stringify(poison.filter((p) => !deadTags.has(p.tag)))}; ` +
          `undelivered ${JSON.stringify(deliver.filter((d) => !runs.has(d.runId)).map((d) => d.runId))}`,
      );
    }
    await sleep(250);
  }
}

function checkSettled(
  w: World,
  traffic: Traffic,
  dead: Message[],
  delivered: Array<{ body: any; meta: any }>,
  outcomes: DeliveryOutcome[],
  lines: string[],
) {
  const poison = traffic.expected.filter((e): e is Extract<Expect, { kind: 'poison' }> => e.kind === 'poison');
  // Delivered exactly: queue name and message id as sent, each once (no duplicates here).
  for (const e of traffic.expected) {
    if (e.kind !== 'deliver') continue;
    const got = delivered.filter((d) => d.body.runId === e.runId);
    expect(got.length, e.runId).toBeGreaterThanOrEqual(1);
    expect(got[0].meta.queueName).toBe(e.queueName);
    if (e.messageId) expect(got[0].meta.messageId).toBe(e.messageId);
  }
  // Poison: in the DLQ once each, never delivered to the handler function.
  const deadTags = dead.map((m) => m.MessageAttributes?.[TAG]?.StringValue).filter(Boolean);
  expect(deadTags.sort()).toEqual(poison.map((p) => p.tag).sort());
  for (const p of poison) if (p.runId) expect(delivered.some((d) => d.body.runId === p.runId)).toBe(false);
  // One DLQ line per poison message, naming its run when it has one.
  const dlqLines = lines.filter((l) => l.includes('] DLQ:'));
  expect(dlqLines).toHaveLength(poison.length);
  for (const p of poison) {
    if (p.runId) expect(dlqLines.filter((l) => l.includes(p.runId as string))).toHaveLength(1);
  }
  for (const l of dlqLines) expect(l).toMatch(/on queue .* \(message .*reason: /);
  // Nothing looped: no outage verdict, no parked copy, no open circuit.
  expect(outcomes.filter((o) => ['parked', 'transport', 'unavailable'].includes(o.reason))).toEqual([]);
  expect(lines.filter((l) => l.includes('circuit open'))).toEqual([]);
  void w;
}

async function flowRoute(w: World) {
  const delivered: Array<{ body: any; meta: any }> = [];
  const server = await serve(
    w.queue.createQueueHandler(PREFIX, async (body: any, meta) => {
      delivered.push({ body, meta });
    }),
  );
  return { delivered, server };
}

const ENV = {
  EVE_WORLD_AWS_SIGNING_SECRET: SECRET,
  EVE_WORLD_AWS_MAX_RECEIVE_COUNT: String(MAX_RECEIVES),
  EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2',
};

describe('hostile deliveries beside ordinary traffic', () => {
  test('through the in-process poller: ordinary and encodable messages are delivered, poison is dead-lettered, nothing loops', async () => {
    let route: (req: Request) => Promise<Response> = async () => new Response('not ready', { status: 503 });
    const server = await serve((req) => route(req));
    const outcomes: DeliveryOutcome[] = [];
    const w = await makeWorld({
      register: false,
      start: false,
      env: { ...ENV, EVE_WORLD_AWS_FLOW_URL: server.url },
      queueOptions: { onDeliveryOutcome: (o) => void outcomes.push(o) },
    });
    worlds.push(w);
    const delivered: Array<{ body: any; meta: any }> = [];
    route = w.queue.createQueueHandler(PREFIX, async (body: any, meta) => void delivered.push({ body, meta }));
    try {
      const traffic = await sendTraffic(w, 20261201);
      await w.queue.start();
      const dead = await settleAll(w, traffic, () => delivered);
      await w.queue.close();
      checkSettled(w, traffic, dead, delivered, outcomes, w.logger.lines);
      await sleep(2500); // every hidden copy is visible again by now
      expect(await receiveAll(w, await w.queue.transport.queueUrl())).toEqual([]);
    } finally {
      await server.close();
    }
  });

  test('through the Lambda SQS handler (event-source-mapping loop): the same', async () => {
    const outcomes: DeliveryOutcome[] = [];
    const w = await makeWorld({ register: false, start: false, env: ENV });
    worlds.push(w);
    const { delivered, server } = await flowRoute(w);
    const handler = createSqsHandler({
      flowUrl: server.url,
      context: w.ctx,
      logger: w.logger,
      onOutcome: (o: DeliveryOutcome, _m: InboundMessage) => void outcomes.push(o),
    });
    const url = await w.queue.transport.queueUrl();
    let stop = false;
    // What the event source mapping does: receive a batch, invoke, delete what was not reported failed.
    const esm = (async () => {
      while (!stop) {
        const r = await w.fixture.clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const msgs = r.Messages ?? [];
        if (msgs.length === 0) continue;
        const res = await handler(
          {
            Records: msgs.map((m) => toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:q', 'us-east-1')) as SQSRecord[],
          },
          { getRemainingTimeInMillis: () => 60_000 },
        );
        const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
        for (const m of msgs) {
          if (failed.has(m.MessageId as string)) continue;
          await w.queue.transport.ctx.clients.sqs
            .send(
              new (await import('@aws-sdk/client-sqs')).DeleteMessageCommand({
                QueueUrl: url,
                ReceiptHandle: m.ReceiptHandle,
              }),
            )
            .catch(() => undefined);
        }
      }
    })();
    try {
      const traffic = await sendTraffic(w, 777);
      const dead = await settleAll(w, traffic, () => delivered);
      stop = true;
      await esm;
      checkSettled(w, traffic, dead, delivered, outcomes, w.logger.lines);
      await sleep(2500);
      expect(await receiveAll(w, url)).toEqual([]);
    } finally {
      stop = true;
      await esm.catch(() => undefined);
      await server.close();
    }
  });
});
