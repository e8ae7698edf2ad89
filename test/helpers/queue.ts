/**
 * Shared helpers for the queue tests: a World queue on a fresh emulator fixture, a recording flow
 * handler, an HTTP server for Web handlers, and small waits.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { MessageId, ValidQueueName } from '@workflow/world';
import { destroyClients } from '../../src/aws/clients.js';
import { loadConfig, TUNING, type WorldConfig, type WorldTuning } from '../../src/config/index.js';
import { createDeploymentFilter } from '../../src/consumer/delivery/affinity.js';
import { type DeliveryOutcome, deliverMessage } from '../../src/consumer/delivery/pipeline.js';
import { inboundFromSdk } from '../../src/consumer/delivery/poller.js';
import { SqsReceipts } from '../../src/consumer/delivery/receipts.js';
import { type Consumer, type CreateConsumerOptions, createConsumer } from '../../src/consumer/index.js';
import { currentDelivery, type DeliveryScope } from '../../src/context/delivery-scope.js';
import { createContext, type WorldContext } from '../../src/context/world-context.js';
import { deploymentIdentity } from '../../src/deployment/id.js';
import { type CreateQueueOptions, createQueue, type QueueSender } from '../../src/queue/index.js';
import { createTransport } from '../../src/queue/transport.js';
import type { Logger } from '../../src/telemetry/log.js';
import { createFixture, type Fixture } from './aws.js';

export const PREFIX = '__wkf_workflow_';
/** An eve-style namespaced logical queue name, with `/`. */
export const EVE_QUEUE = '__eve6d79206167656e74_wkf_workflow_workflows/agent.ts/run' as ValidQueueName;
export const EVE_PREFIX = '__eve6d79206167656e74_wkf_workflow_';

export interface Delivery {
  /** The delivery scope the handler ran in (src/context/delivery-scope.ts). */
  scope?: DeliveryScope;
  body: any;
  meta: { attempt: number; queueName: ValidQueueName; messageId: MessageId };
  at: number;
}

export class MemoryLogger implements Logger {
  lines: string[] = [];
  info = (m: string) => void this.lines.push(`INFO ${m}`);
  warn = (m: string) => void this.lines.push(`WARN ${m}`);
  error = (m: string) => void this.lines.push(`ERROR ${m}`);
}

/** The World's queue as the runtime sees it: the send side and the receive side together. */
export type QueueUnderTest = QueueSender & Omit<Consumer, 'receipts'>;

export interface World {
  fixture: Fixture;
  ctx: WorldContext;
  queue: QueueUnderTest;
  logger: MemoryLogger;
  deliveries: Delivery[];
  /** Decides what the handler does with each delivery (default: ack). */
  respond: (d: Delivery) => unknown | Promise<unknown>;
  close(): Promise<void>;
}

/**
 * A queue on a fresh fixture with a recording handler registered in process (unless
 * `register: false`). `extraEnv` tunes config; `sameAs` reuses another world's resources (a
 * second World instance on the same table and queue, with its own clients).
 */
/** The tuning options `config` was built with. */
export function tuningOf(config: WorldConfig): Partial<WorldTuning> {
  return Object.fromEntries(Object.keys(TUNING).map((k) => [k, config[k as keyof WorldTuning]]));
}

export async function makeWorld(
  opts: {
    env?: Record<string, string>;
    /** Options (not variables), e.g. `{ maxDelayHopSeconds: 1 }`; `sameAs` keeps the other world's. */
    tuning?: Partial<WorldTuning>;
    sameAs?: World;
    register?: boolean;
    start?: boolean;
    queueOptions?: CreateConsumerOptions & CreateQueueOptions;
  } = {},
): Promise<World> {
  const fixture = opts.sameAs
    ? (() => {
        const env = { ...opts.sameAs.fixture.env, ...opts.env };
        const config = loadConfig(env, { ...tuningOf(opts.sameAs.fixture.config), ...opts.tuning });
        return { config, clients: createContext(config).clients, env } as Fixture;
      })()
    : await createFixture(opts.env ?? {}, 'q', opts.tuning);
  const ctx = createContext(fixture.config, fixture.clients);
  const logger = new MemoryLogger();
  // Wired as createWorld wires them: the transport, the consumer on it, then the queue offering its
  // sends to the consumer for early delivery.
  const transport = createTransport(ctx, opts.queueOptions?.scheduler);
  const consumer = createConsumer(
    ctx,
    transport,
    {
      consumer: 'poll',
      waitTimeSeconds: 1,
      drainTimeoutMs: 2000,
      logger,
      ...opts.queueOptions,
    },
    // With EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on, as createWorld wires it (src/consumer/delivery/affinity.ts).
    createDeploymentFilter(ctx, deploymentIdentity(fixture.config)),
  );
  const sender = createQueue(ctx, {
    transport,
    logger,
    logTail: opts.queueOptions?.logTail,
    early: consumer.earlyOffer,
  });
  const queue: QueueUnderTest = {
    transport: sender.transport,
    getDeploymentId: sender.getDeploymentId,
    queue: sender.queue,
    queueBatch: sender.queueBatch,
    createQueueHandler: consumer.createQueueHandler,
    registerHandler: consumer.registerHandler,
    start: consumer.start,
    close: consumer.close,
    earlyOffer: consumer.earlyOffer,
  };
  const world: World = {
    fixture,
    ctx,
    queue,
    logger,
    deliveries: [],
    respond: () => undefined,
    async close() {
      await queue.close();
      destroyClients(fixture.clients);
    },
  };
  if (opts.register !== false) {
    const flow = (prefix: string) =>
      queue.createQueueHandler(prefix as any, async (body, meta) => {
        const d: Delivery = { body, meta, at: Date.now(), scope: currentDelivery() };
        world.deliveries.push(d);
        return world.respond(d);
      });
    queue.registerHandler(PREFIX, flow(PREFIX));
    queue.registerHandler(EVE_PREFIX, flow(EVE_PREFIX));
  }
  if (opts.start !== false) await queue.start();
  return world;
}

export async function waitFor<T>(fn: () => T | undefined | false, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Receive everything currently visible on a queue URL (drains until an empty poll). */
export async function receiveAll(world: World, url: string, waitSeconds = 1): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const r = await world.fixture.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: waitSeconds,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        VisibilityTimeout: 30,
      }),
    );
    if (!r.Messages?.length) return out;
    out.push(...r.Messages);
  }
}

/**
 * Everything visible on a queue now, with all message attributes (received, then left to reappear
 * after `visibilityTimeout` seconds).
 */
export async function drainQueue(sqs: SQSClient, url: string, visibilityTimeout = 60): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const r = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: visibilityTimeout,
        MessageAttributeNames: ['All'],
      }),
    );
    if (!r.Messages?.length) return out;
    out.push(...r.Messages);
  }
}

/** The World message id an SQS message carries ('' if none). */
export const eveId = (m: Message) => m.MessageAttributes?.['eve.id']?.StringValue ?? '';

/** Serve a Web `(Request) => Response` handler on 127.0.0.1:<free port>. */
export async function serve(
  handler: (req: Request) => Promise<Response>,
  /** The port to listen on (127.0.0.1); default a free one. */
  port = 0,
): Promise<{ url: string; requests: number; close(): Promise<void> }> {
  const state = { requests: 0 };
  const server: Server = createServer(async (req, res) => {
    state.requests++;
    const chunks: Uint8Array[] = [];
    for await (const c of req) chunks.push(new Uint8Array(c as Buffer));
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : (Buffer.concat(chunks) as unknown as BodyInit),
    });
    const response = await handler(request);
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((v, k) => {
      outHeaders[k] = v;
    });
    res.writeHead(response.status, outHeaders);
    res.end(new Uint8Array(await response.arrayBuffer()));
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/.well-known/workflow/v1/flow`,
    get requests() {
      return state.requests;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Run one received copy through the real delivery pipeline with the clock at `now` (a long wait
 * is tested by moving the clock, not by waiting days). The flow route is a plain recorder: it
 * answers 200 and keeps the request body it got (what the pipeline read, from S3 if offloaded).
 * A settled copy (delete) is deleted, as the poller would.
 */
export async function deliverAtClock(
  world: World,
  m: Message,
  now: number,
): Promise<{ outcome: DeliveryOutcome; delivered?: string }> {
  const receipts = new SqsReceipts(world.queue.transport);
  let delivered: string | undefined;
  const outcome = await deliverMessage(inboundFromSdk(m), {
    config: world.ctx.config,
    transport: world.queue.transport,
    receipts,
    route: () => ({
      url: 'http://localhost/.well-known/workflow/v1/flow',
      handler: async (req) => {
        delivered = await req.text();
        return new Response('{"ok":true}');
      },
    }),
    visibilitySeconds: 30,
    logger: world.logger,
    now: () => now,
  });
  if (outcome.action === 'delete') await receipts.delete(m.ReceiptHandle ?? '');
  return { outcome, delivered };
}
