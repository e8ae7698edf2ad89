/**
 * The World's `Queue` on one standard SQS queue (+ DLQ), with durable idempotency keys, long
 * delays (EventBridge Scheduler or SQS hops) and the in-process consumer.
 *
 * Composition (src/index.ts):
 * ```ts
 * const queue = createQueue(ctx);            // Queue members + registerHandler/start/close
 * const world = { ...storage, ...streamer,
 *   getDeploymentId: queue.getDeploymentId, queue: queue.queue, queueBatch: queue.queueBatch,
 *   createQueueHandler: queue.createQueueHandler, registerHandler: queue.registerHandler,
 *   start: async () => { await queue.start(); ... }, close: async () => { await queue.close(); ... } };
 * ```
 * All members are bound functions, so they can be spread or passed around freely.
 *
 * Invariants:
 * - Logical queue names (any length, with `/`) travel in the `eve.queue` message attribute; the
 *   SQS queue is always `config.queue`.
 * - `queue()` resolves only after SQS (or the Scheduler) accepted the message, or after finding
 *   that its idempotency key was already used (then it returns the first message's id).
 * - Message ids are `msg_<ulid>`, stable across every redelivery and re-send of the message.
 */
import type { MessageId, Queue, QueueBatchResult, QueueOptions, QueuePayload, QueuePrefix, ValidQueueName } from '@workflow/world';
import { canConnect } from '../aws/net.js';
import { monotonicFactory } from 'ulid';
import { SqsPoller } from '../consumer/poller.js';
import type { WorldContext } from '../context.js';
import { type SchedulerPort, schedulerPort } from './delays.js';
import { consoleLogger, DEFAULT_FLOW_PATH, type DeliveryOutcome, type Dispatch, type InboundMessage, type Logger } from './delivery.js';
import { encodePayload } from './encoding.js';
import { createQueueHandler } from './handler.js';
import { deliveryLeasePort } from './delivery-lease.js';
import { claimIdempotencyKey, markIdempotencyKeySent, releaseIdempotencyKey } from './idempotency.js';
import { SqsTransport } from './transport.js';

export type { SchedulerPort } from './delays.js';
export type { DeliveryOutcome, Dispatch, InboundMessage, Logger } from './delivery.js';
export { deliverMessage } from './delivery.js';
export { decodePayload, encodePayload, MSG_ATTR } from './encoding.js';
export { createQueueHandler } from './handler.js';
export { SIGNATURE_HEADER, signatureHeaders, TIMESTAMP_HEADER, verifySignature } from './signing.js';
export { SqsTransport } from './transport.js';

/** A flow route handler registered in process (same shape as world-local's). */
export type DirectHandler = (req: Request) => Promise<Response>;

export interface CreateQueueOptions {
  /**
   * Scheduler used for delays over `maxDelayHopSeconds` when `config.schedulerRoleArn` is set.
   * Default: `ctx.clients.scheduler`.
   */
  scheduler?: SchedulerPort;
  /**
   * `'poll'`: `start()` runs the in-process SQS consumer. `'none'`: `start()` does nothing (a
   * Lambda, where the SQS event source mapping consumes). Default: `'none'` inside AWS Lambda
   * (`AWS_LAMBDA_FUNCTION_NAME` set), else `'poll'`.
   */
  consumer?: 'poll' | 'none';
  logger?: Logger;
  /** Long-poll wait of the in-process consumer (s). Default 20. */
  waitTimeSeconds?: number;
  /** How long `close()` waits for running deliveries (ms). Default 30 000. */
  drainTimeoutMs?: number;
  /** Observes every delivery outcome of the in-process consumer. */
  onDeliveryOutcome?: (outcome: DeliveryOutcome, msg: InboundMessage) => void;
}

export interface QueueComponent extends Required<Pick<Queue, 'getDeploymentId' | 'queue' | 'queueBatch' | 'createQueueHandler'>> {
  /** Deliver messages of `prefix` queues to `handler` in process instead of over HTTP. */
  registerHandler(prefix: QueuePrefix | string, handler: DirectHandler): void;
  /** Starts the in-process consumer (unless `consumer: 'none'`). Idempotent. */
  start(): Promise<void>;
  /** Stops receiving and drains running deliveries. Idempotent. */
  close(): Promise<void>;
  readonly transport: SqsTransport;
}

/** Where deliveries go over HTTP: `config.flowUrl`, else the local `eve start` flow route. */
export function defaultFlowUrl(flowUrl: string | undefined, env: Record<string, string | undefined> = process.env): string {
  return flowUrl ?? `http://127.0.0.1:${env.PORT ?? '3000'}${DEFAULT_FLOW_PATH}`;
}

const PREFIX_RE = /^(__(?:[a-z][a-z0-9]*_)?wkf_workflow_)/;
const QUEUE_NAME_RE = /^__(?:[a-z][a-z0-9]*_)?wkf_workflow_.+$/;


export function createQueue(ctx: WorldContext, options: CreateQueueOptions = {}): QueueComponent {
  const { config } = ctx;
  const logger = options.logger ?? consoleLogger;
  const scheduler = options.scheduler ?? (config.schedulerRoleArn ? schedulerPort(ctx.clients) : undefined);
  const transport = new SqsTransport(ctx, scheduler);
  const nextUlid = monotonicFactory();
  const directHandlers = new Map<string, DirectHandler>();
  const consumerMode = options.consumer ?? (process.env.AWS_LAMBDA_FUNCTION_NAME ? 'none' : 'poll');
  let poller: SqsPoller | undefined;
  let closed = false;

  const dispatchFor = (queueName: string): { dispatch: Dispatch; url: string } => {
    const prefix = PREFIX_RE.exec(queueName)?.[1];
    const direct = prefix !== undefined ? directHandlers.get(prefix) : undefined;
    if (direct) return { dispatch: direct, url: `http://localhost${DEFAULT_FLOW_PATH}` };
    return { dispatch: (req) => fetch(req), url: defaultFlowUrl(config.flowUrl) };
  };

  const queue = async (queueName: ValidQueueName, payload: QueuePayload, opts?: QueueOptions): Promise<{ messageId: MessageId | null }> => {
    if (!QUEUE_NAME_RE.test(queueName)) throw new Error(`Invalid queue name: ${queueName}`);
    // Encode first: a payload that cannot be encoded must not burn its idempotency key.
    const body = encodePayload(payload);
    const key = opts?.idempotencyKey;
    // Two-phase idempotency claim (see idempotency.ts): pending -> send -> sent.
    const claim = key !== undefined ? await claimIdempotencyKey(ctx, key, `msg_${nextUlid()}`, queueName) : undefined;
    // A duplicate: the first sender's id (null if the store could not say which it was).
    if (claim && !claim.claimed) return { messageId: (claim.messageId || null) as MessageId | null };
    const messageId = claim?.messageId ?? `msg_${nextUlid()}`;
    try {
      await transport.send(
        { queueName, messageId, attemptOffset: 0, body, headers: opts?.headers && { ...opts.headers } },
        opts?.delaySeconds,
      );
    } catch (err) {
      if (key !== undefined && claim?.claimed) {
        await releaseIdempotencyKey(ctx, key, claim.owner).catch((e) =>
          logger.error(`[eve-world-aws] could not release idempotency key ${key} after a failed send: ${String(e)}`),
        );
      }
      throw err;
    }
    if (key !== undefined && claim?.claimed) {
      // The message is accepted; if this fails the claim stays pending and is re-sent after its lease (a duplicate, never a loss).
      await markIdempotencyKeySent(ctx, key, claim.owner).catch((e) =>
        logger.error(`[eve-world-aws] could not mark idempotency key ${key} as sent: ${String(e)}`),
      );
    }
    return { messageId: messageId as MessageId };
  };

  const queueBatch = async (
    queueName: ValidQueueName,
    messages: readonly { message: QueuePayload; opts?: QueueOptions }[],
  ): Promise<QueueBatchResult[]> => {
    // Per-entry sends (each with its own idempotency claim), 10 at a time; failures are reported
    // per entry, never thrown.
    const results: QueueBatchResult[] = new Array(messages.length);
    let next = 0;
    const worker = async () => {
      while (next < messages.length) {
        const i = next++;
        try {
          results[i] = await queue(queueName, messages[i].message, messages[i].opts);
        } catch (err) {
          results[i] = { messageId: null, error: String(err), retryable: true };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(10, messages.length) }, worker));
    return results;
  };

  let flowReachable = false;
  let waitingSince: number | undefined;
  const ready = async (): Promise<boolean> => {
    // In-process handlers need no network; over HTTP, wait for the flow route to listen so that
    // early receives (before `eve start` serves) do not burn receive counts.
    if (directHandlers.size > 0 || flowReachable) return true;
    const url = defaultFlowUrl(config.flowUrl);
    flowReachable = await canConnect(url);
    if (flowReachable) {
      if (waitingSince !== undefined) logger.info(`[eve-world-aws] flow route ${url} is reachable; consuming the queue`);
      waitingSince = undefined;
    } else if (waitingSince === undefined) {
      waitingSince = Date.now();
      logger.warn(
        `[eve-world-aws] waiting for the flow route at ${url} before consuming the queue ` +
          '(set EVE_WORLD_AWS_FLOW_URL or PORT, or register an in-process handler)',
      );
    }
    return flowReachable;
  };

  return {
    transport,
    getDeploymentId: async () => config.deploymentId,
    queue,
    queueBatch,
    createQueueHandler: (prefix, handler) => createQueueHandler(prefix, handler, { signingSecret: config.signingSecret }),
    registerHandler(prefix, handler) {
      directHandlers.set(prefix, handler);
    },
    async start() {
      if (closed || consumerMode === 'none' || poller) return;
      poller = new SqsPoller({
        config,
        transport,
        dispatchFor,
        signingSecret: config.signingSecret,
        logger,
        concurrency: config.consumerConcurrency,
        waitTimeSeconds: options.waitTimeSeconds,
        drainTimeoutMs: options.drainTimeoutMs,
        // One delivery at a time per logical message across processes (delivery-lease.ts). At most
        // half the visibility: an abandoned delivery's lease is gone before SQS shows its message again.
        lease: deliveryLeasePort(ctx, { ttlMs: Math.min(config.visibilityTimeoutSeconds / 2, 60) * 1000, logger }),
        ready,
        onOutcome: (outcome, msg) => {
          if (outcome.reason === 'transport') flowReachable = false;
          options.onDeliveryOutcome?.(outcome, msg);
        },
      });
      poller.start();
    },
    async close() {
      closed = true;
      await poller?.close();
    },
  };
}
