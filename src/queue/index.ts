/**
 * The send side of the World's `Queue`: `queue()` / `queueBatch()` onto one standard SQS queue,
 * with durable idempotency keys (./idempotency.ts), long delays (./delays.ts: SQS, Scheduler or
 * hops) and the wire encoding (./encoding.ts). Receiving is the consumer's job (src/consumer/).
 *
 * Invariants:
 * - Logical queue names (any length, with `/`) travel in the `eve.queue` message attribute; the
 *   SQS queue is always `config.queue`.
 * - `queue()` resolves only after SQS (or the Scheduler) accepted the message, or after finding
 *   that its idempotency key was already used (then it returns the first message's id).
 * - Message ids are `msg_<ulid>`, stable across every redelivery and re-send of the message.
 */
import {
  type MessageId,
  type Queue,
  type QueueBatchResult,
  type QueueOptions,
  type QueuePayload,
  ValidQueueName,
} from '@workflow/world';
import { monotonicFactory } from 'ulid';
import { toWorldError } from '../aws/errors.js';
import type { WorldContext } from '../context.js';
import { consoleLogger, type Logger } from '../log.js';
import { type SchedulerPort, schedulerPort } from './delays.js';
import { encodePayload } from './encoding.js';
import { claimIdempotencyKey, releaseIdempotencyKey } from './idempotency.js';
import { SqsTransport } from './transport.js';

export interface CreateQueueOptions {
  /**
   * Scheduler used for delays over `maxDelayHopSeconds` when `config.schedulerRoleArn` is set.
   * Default: `ctx.clients.scheduler`.
   */
  scheduler?: SchedulerPort;
  logger?: Logger;
}

export interface QueueSender extends Required<Pick<Queue, 'getDeploymentId' | 'queue' | 'queueBatch'>> {
  readonly transport: SqsTransport;
}

export function createQueue(ctx: WorldContext, options: CreateQueueOptions = {}): QueueSender {
  const { config } = ctx;
  const logger = options.logger ?? consoleLogger;
  const scheduler = options.scheduler ?? (config.schedulerRoleArn ? schedulerPort(ctx.clients) : undefined);
  const transport = new SqsTransport(ctx, scheduler);
  const nextUlid = monotonicFactory();

  const queue = async (
    queueName: ValidQueueName,
    payload: QueuePayload,
    opts?: QueueOptions,
  ): Promise<{ messageId: MessageId | null }> => {
    if (!ValidQueueName.safeParse(queueName).success) throw new Error(`Invalid queue name: ${queueName}`);
    // Encode first: a payload that cannot be encoded must not burn its idempotency key.
    const body = encodePayload(payload);
    const messageId = `msg_${nextUlid()}`;
    const key = opts?.idempotencyKey;
    if (key !== undefined) {
      // Throttling that outlasted the SDK's retries surfaces as the contract's ThrottleError.
      const claim = await claimIdempotencyKey(ctx, key, messageId, queueName).catch((err) => {
        throw toWorldError(err, 'queue: idempotency claim');
      });
      // A duplicate: the first sender's id (null if the store could not say which it was).
      if (!claim.claimed) return { messageId: (claim.messageId || null) as MessageId | null };
    }
    try {
      await transport.send(
        { queueName, messageId, attemptOffset: 0, body, headers: opts?.headers && { ...opts.headers } },
        opts?.delaySeconds,
      );
    } catch (err) {
      if (key !== undefined) {
        await releaseIdempotencyKey(ctx, key, messageId).catch((e) =>
          logger.error(`[eve-world-aws] could not release idempotency key ${key} after a failed send: ${String(e)}`),
        );
      }
      throw toWorldError(err, 'queue: send');
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

  return {
    transport,
    getDeploymentId: async () => config.deploymentId,
    queue,
    queueBatch,
  };
}
