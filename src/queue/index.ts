/**
 * The send side of the World's `Queue`: `queue()` / `queueBatch()` onto one standard SQS queue,
 * with durable idempotency keys (./idempotency.ts), long delays (./delays.ts: SQS, Scheduler or
 * hops) and the wire encoding (./encoding.ts). Receiving is the consumer's job (src/consumer/).
 *
 * Invariants:
 * - Logical queue names (any length, with `/`) travel in the `eve.queue` message attribute; the SQS
 *   queue is always `config.queue`.
 * - `queue()` resolves only after SQS (or the Scheduler) accepted the message, or after finding
 *   that its idempotency key was already used (then it returns the first message's id).
 * - Message ids are `msg_<ulid>`, stable across every redelivery and re-send of the message:
 *   `queue()` returns it (./delivery-id.ts says who uses it for what).
 * - Every message is offered for early delivery (`early`, src/consumer/delivery/early/offer.ts
 *   decides) before it is sent: before its claim the first time this process sends its key (or when
 *   it has none), after a successful claim otherwise. The offer changes nothing of the claim or
 *   what `queue()` returns. A taken offer is delivered under its own id E (`<M>.early.<ulid>`,
 *   minted here from the id M it is offered under, ./delivery-id.ts), which no SQS copy or schedule
 *   ever carries; the copy's offset counts that delivery, so the copy is never attempt 1 beside it
 *   (docs/design.md, "Early delivery"). M is what `queue()` returns, except when a key offered
 *   before its claim turns out sent or taken over: one log line then joins the two ids.
 * - With deployment affinity on (src/deployment/), every message names its deployment (`eve.dep`):
 *   `QueueOptions.deploymentId`, else this process's own (sends from inside a delivery are for the
 *   run's own deployment: core's guard let the delivery run here). A client's send names none
 *   unless core gives one (the CLI is no deployment). Only a message for this process's deployment
 *   is offered for early delivery. A send core's guard makes to a retired or unknown deployment is
 *   refused (src/deployment/targets.ts), and so is a start on this process's own deployment once it
 *   is retired (src/deployment/membership.ts).
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
import { toWorldError } from '../aws/sdk-errors.js';
import { encodeLogTail } from '../context/delivery-scope.js';
import type { WorldContext } from '../context/world-context.js';
import { type DeploymentIdentity, deploymentIdentity } from '../deployment/id.js';
import type { Membership } from '../deployment/membership.js';
import { assertTargetReachable } from '../deployment/targets.js';
import { consoleLogger, type Logger } from '../telemetry/log.js';
import { currentTraceparent } from '../telemetry/tracing.js';
import { mapLimited } from '../util/concurrency.js';
import { RecentKeys } from '../util/recent-keys.js';
import type { SchedulerPort } from './delays.js';
import { earlyDeliveryId } from './delivery-id.js';
import { type Envelope, encodePayload } from './encoding.js';
import { deliveryInputProblem } from './header-values.js';
import { claimIdempotencyKey, markIdempotencyKeySent, releaseIdempotencyKey } from './idempotency.js';
import { createTransport, type SqsTransport } from './transport.js';

/** Idempotency keys remembered as offered for early delivery (a retry of one is not offered first). */
const OFFERED_KEYS = 10_000;

export interface CreateQueueOptions {
  /**
   * Scheduler used for delays over `maxDelayHopSeconds` when `config.schedulerRoleArn` is set.
   * Default: `ctx.clients.scheduler`.
   */
  scheduler?: SchedulerPort;
  logger?: Logger;
  /**
   * The highest slot of a run's log this process has seen committed (storage's slot hints). Sent
   * with each message for that run as `eve.tail`, so the receiver knows how fresh its read of the
   * log must be (src/context/delivery-scope.ts). Absent: messages carry no tail.
   */
  logTail?: (runId: string) => number | undefined;
  /**
   * The send side of an existing transport (the World builds it first and hands it to its
   * consumer too). Default: a new one.
   */
  transport?: SqsTransport;
  /**
   * Offered each message about to be sent (the in-process consumer's early delivery,
   * src/consumer/delivery/early/offer.ts), before its send; see the invariants above for when
   * relative to its claim. `producer`: the `traceparent` of the span the send runs in. True when it
   * took the message. It must not throw or wait.
   */
  early?: (copy: Envelope, earlyId: string, payload: QueuePayload, delaySeconds?: number, producer?: string) => boolean;
  /**
   * Awaited by each `queue()` once its input is validated, before anything is offered, claimed or
   * sent (the World's preflight, src/preflight/resources.ts): a rejection fails that `queue()` call
   * (and is that entry's error in `queueBatch`).
   */
  beforeSend?: () => Promise<void>;
  /**
   * This process's deployment (src/deployment/id.ts), with what the table decided for it
   * (src/deployment/membership.ts). Default: from `ctx.config`.
   */
  identity?: DeploymentIdentity & Partial<Pick<Membership, 'role' | 'retired' | 'assertMayStart'>>;
}

export interface QueueSender extends Required<Pick<Queue, 'getDeploymentId' | 'queue' | 'queueBatch'>> {
  readonly transport: SqsTransport;
}

export function createQueue(ctx: WorldContext, options: CreateQueueOptions = {}): QueueSender {
  const { config } = ctx;
  const logger = options.logger ?? consoleLogger;
  const transport = options.transport ?? createTransport(ctx, options.scheduler);
  const nextUlid = monotonicFactory();
  const identity: NonNullable<CreateQueueOptions['identity']> = options.identity ?? deploymentIdentity(config);
  const offeredKeys = new RecentKeys(OFFERED_KEYS);
  const tailOf = (payload: QueuePayload): string | undefined => {
    const p = payload as { runId?: unknown; workflowRunId?: unknown };
    const runId =
      typeof p.runId === 'string' ? p.runId : typeof p.workflowRunId === 'string' ? p.workflowRunId : undefined;
    const slot = runId === undefined ? undefined : options.logTail?.(runId);
    return runId !== undefined && slot !== undefined && slot > 0 ? encodeLogTail(runId, slot) : undefined;
  };

  const queue = async (
    queueName: ValidQueueName,
    payload: QueuePayload,
    opts?: QueueOptions,
  ): Promise<{ messageId: MessageId | null }> => {
    if (!ValidQueueName.safeParse(queueName).success) throw new Error(`Invalid queue name: ${queueName}`);
    // Refused before anything is claimed or sent; any other name or header value travels encoded.
    const problem = deliveryInputProblem(queueName, opts?.headers);
    if (problem) throw new Error(`queue(): ${problem}`);
    // Encode first: a payload that cannot be encoded must not burn its idempotency key.
    const body = encodePayload(payload);
    await options.beforeSend?.();
    // With affinity on: the message's deployment; a send core's guard must not make throws here.
    let deploymentId: string | undefined;
    let own = true;
    if (identity.affinity) {
      const self = identity.role === 'client' ? undefined : await identity.id();
      deploymentId = opts?.deploymentId ?? self;
      own = deploymentId !== undefined && deploymentId === self;
      if ((payload as { runInput?: unknown }).runInput !== undefined) await identity.assertMayStart?.(deploymentId);
      if (!own && deploymentId !== undefined) await assertTargetReachable(ctx, self, deploymentId, payload);
    }
    const key = opts?.idempotencyKey;
    const minted = `msg_${nextUlid()}`;
    // Read after core's writes for this message, so the tail covers everything they committed.
    const logTail = tailOf(payload);
    const envelope: Envelope = {
      queueName,
      messageId: minted,
      attemptOffset: 0,
      body,
      headers: opts?.headers && { ...opts.headers },
      ...(logTail ? { logTail } : {}),
      ...(deploymentId !== undefined ? { deploymentId } : {}),
    };
    // When the offer comes relative to the claim: the header (a key this process sent before, core
    // republishing after an error, is offered only once claimed, so a retry never starts a second
    // early delivery). A key another process also sends, or a failed send, leaves it one more
    // delivery of the message. A retired deployment's messages are left to other deployments'
    // consumers.
    const early = options.early !== undefined && own && !identity.retired;
    // The early delivery's own id names the message (./delivery-id.ts), and its span links to the
    // span this send runs in (core's `queue.publish`).
    const offer = (messageId: string) =>
      options.early?.(
        { ...envelope, messageId },
        earlyDeliveryId(messageId, nextUlid()),
        payload,
        opts?.delaySeconds,
        currentTraceparent(),
      ) === true;
    const offeredFirst = early && (key === undefined || offeredKeys.add(key));
    let taken = offeredFirst && offer(minted);
    // Two-phase idempotency claim (see idempotency.ts): pending -> send -> sent. Throttling that
    // outlasted the SDK's retries surfaces as the contract's ThrottleError.
    const claim =
      key !== undefined
        ? await claimIdempotencyKey(ctx, key, minted, queueName).catch((err) => {
            throw toWorldError(err, 'queue: idempotency claim');
          })
        : undefined;
    // A duplicate: the first sender's id (null if the store could not say which it was).
    if (claim && !claim.claimed) {
      if (taken) joinEarly(minted, claim.messageId, 'its idempotency key was sent already');
      return { messageId: (claim.messageId || null) as MessageId | null };
    }
    // A claim taken over from a dead sender keeps that sender's id.
    const messageId = claim?.messageId ?? minted;
    if (taken && messageId !== minted) joinEarly(minted, messageId, 'its idempotency claim was taken over');
    if (early && !offeredFirst) taken = offer(messageId);
    try {
      // The copy's offset counts its early delivery (a dispatch), even under a claim taken over
      // (not the id offered): never attempt 1 beside it (src/consumer/delivery/pipeline.ts).
      const offset = taken ? { attemptOffset: envelope.attemptOffset + 1 } : {};
      await transport.send({ ...envelope, messageId, ...offset }, opts?.delaySeconds);
    } catch (err) {
      if (key !== undefined && claim?.claimed) {
        await releaseIdempotencyKey(ctx, key, claim.owner).catch((e) =>
          logger.error(`[eve-world-aws] could not release idempotency key ${key} after a failed send: ${String(e)}`),
        );
      }
      throw toWorldError(err, 'queue: send');
    }
    if (key !== undefined && claim?.claimed) {
      // The message is accepted; if this fails the claim stays pending and is re-sent after its
      // lease (a duplicate, never a loss).
      await markIdempotencyKeySent(ctx, key, claim.owner).catch((e) =>
        logger.error(`[eve-world-aws] could not mark idempotency key ${key} as sent: ${String(e)}`),
      );
    }
    return { messageId: messageId as MessageId };
  };

  /**
   * An early delivery offered before the claim, under the id minted then, whose `queue()` returns
   * another (the key's first message): one line joins the two, the only case where the early
   * delivery does not carry the id `queue()` returned.
   */
  const joinEarly = (offered: string, returned: string, why: string) =>
    logger.info(
      `[eve-world-aws] message ${offered} was delivered early, then ${why}: queue() returned ${returned || '(unknown)'}`,
      { messageId: returned || offered },
    );

  const queueBatch = async (
    queueName: ValidQueueName,
    messages: readonly { message: QueuePayload; opts?: QueueOptions }[],
  ): Promise<QueueBatchResult[]> =>
    // Per-entry sends (each with its own idempotency claim), 10 at a time; failures are reported
    // per entry, never thrown.
    mapLimited(messages, 10, async (m): Promise<QueueBatchResult> => {
      try {
        return await queue(queueName, m.message, m.opts);
      } catch (err) {
        return { messageId: null, error: String(err), retryable: true };
      }
    });

  return { transport, getDeploymentId: () => identity.id(), queue, queueBatch };
}
