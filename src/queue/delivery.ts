/**
 * Deliver one received SQS message: the core shared by the in-process poller and the Lambda handler.
 *
 * decode (attributes or envelope) -> not due yet? re-send the next hop -> fetch an S3 body ->
 * build the signed Request in the `createQueueHandler` wire format -> call the flow route (in
 * process or over HTTP) -> map the Response to what should happen to the SQS message.
 *
 * The caller owns the message's fate: `delete` means "remove it from SQS" (the poller deletes it;
 * Lambda reports success), `keep` means "leave it" (the poller does nothing; Lambda reports a batch
 * item failure). Invariants:
 * - A message is deleted only after its handler acked it, or after its replacement (next hop or a
 *   long `timeoutSeconds` re-send) has been accepted by SQS or the Scheduler. Nothing is dropped.
 * - The handler never sees a message before its `deliverAt` (by this process's clock).
 * - `x-vqs-message-id` is the logical id from the message, identical on every SQS copy; the attempt
 *   is the carried attempt offset plus SQS's ApproximateReceiveCount.
 * - A failed delivery on the last receive before the DLQ logs exactly one line naming run and queue.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorldConfig } from '../config.js';
import type { DeliveryLeasePort } from './delivery-lease.js';
import { SQS_MAX_VISIBILITY_SECONDS, planHop } from './delays.js';
import { decodePayload, type Envelope, envelopeFromMessage } from './encoding.js';
import { signatureHeaders } from './signing.js';
import type { SqsTransport } from './transport.js';

/** A received SQS message, normalised from the SDK's `Message` or a Lambda `SQSRecord`. */
export interface InboundMessage {
  sqsMessageId: string;
  receiptHandle: string;
  body: string;
  /** String values of the message attributes. */
  attributes: Record<string, string | undefined>;
  /** SQS ApproximateReceiveCount (1 on first receive). */
  receiveCount: number;
}

/** The flow route: a registered in-process handler, or `fetch` to its URL. */
export type Dispatch = (req: Request) => Promise<Response>;

export type DeliveryOutcome =
  | { action: 'delete'; reason: 'ack' | 'rescheduled' | 'redelayed'; messageId?: string }
  | {
      action: 'keep';
      reason: 'deferred' | 'failed' | 'malformed' | 'unauthorized' | 'transport';
      messageId?: string;
      detail?: string;
    };

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export const consoleLogger: Logger = {
  info: (m) => console.info(m),
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};

export interface DeliveryDeps {
  config: WorldConfig;
  transport: SqsTransport;
  /** Chooses the flow route for a logical queue name. */
  dispatchFor(queueName: string): { dispatch: Dispatch; url: string };
  signingSecret?: string;
  logger?: Logger;
  /** Aborts an HTTP delivery (shutdown, Lambda deadline). */
  signal?: AbortSignal;
  /**
   * Logical message ids this consumer is handling right now. Core treats a delivery that carries
   * the message id of a step's inline owner as that owner's crash-redelivery and re-runs the
   * step, so two copies of one message (SQS standard queues occasionally deliver twice) must not
   * be handled at the same time: the second copy waits and then replays what the first committed.
   */
  inFlight?: Set<string>;
  /**
   * The same guard across processes: a durable in-progress lease per logical message
   * (delivery-lease.ts). A copy whose lease another live delivery holds is deferred, not run.
   */
  lease?: DeliveryLeasePort;
  now?: () => number;
}

export const DEFAULT_FLOW_PATH = '/.well-known/workflow/v1/flow';

/** Largest "not yet due" gap that is waited out in process instead of re-sent (ms). */
const MAX_INLINE_WAIT_MS = 1000;

/** How long a copy of a message that is already being handled in this process waits (s). */
const BUSY_RETRY_SECONDS = 5;


/** Backoff before SQS shows a failed delivery again: 2, 4, 8 … 64 s, never above visibility. */
export function failureBackoffSeconds(receiveCount: number, visibilityTimeoutSeconds: number): number {
  return Math.min(visibilityTimeoutSeconds, 2 ** Math.min(Math.max(1, receiveCount), 6));
}

export async function deliverMessage(msg: InboundMessage, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  const outcome = await deliverOnce(msg, deps);
  // A failed delivery comes back after a short backoff rather than a whole visibility timeout
  // (900 s by default): most failures are transient (throttling, a restarting flow route).
  if (outcome.action === 'keep' && outcome.reason !== 'deferred' && msg.receiptHandle) {
    const seconds = failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
    await deps.transport.changeVisibility(msg.receiptHandle, seconds).catch(() => {});
  }
  return outcome;
}

async function deliverOnce(msg: InboundMessage, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  const { config, transport } = deps;
  const logger = deps.logger ?? consoleLogger;
  const now = deps.now ?? Date.now;

  const decoded = envelopeFromMessage(msg.body, msg.attributes);
  if (typeof decoded === 'string') {
    logger.error(`[eve-world-aws] SQS message ${msg.sqsMessageId} cannot be delivered: ${decoded}; it is kept (SQS retries it, then dead-letters it)`);
    reportLastReceive(msg, undefined, undefined, config, logger, decoded);
    return { action: 'keep', reason: 'malformed', detail: decoded };
  }
  const env = decoded;

  // Long wait not over yet: send the next hop, then let the caller delete this copy.
  if (env.deliverAt !== undefined) {
    const remaining = env.deliverAt - now();
    if (remaining > MAX_INLINE_WAIT_MS) {
      const hop = planHop(env.deliverAt, now(), config.maxDelayHopSeconds);
      await transport.sendPlanned(env, { kind: 'sqs', delaySeconds: hop.delaySeconds, deliverAt: env.deliverAt });
      return { action: 'delete', reason: 'redelayed', messageId: env.messageId };
    }
    if (remaining > 0) await sleep(remaining);
  }

  let body: string;
  try {
    body = await transport.bodyOf(env);
  } catch (err) {
    const detail = `cannot read offloaded body ${env.s3Key}: ${String(err)}`;
    logger.error(`[eve-world-aws] message ${env.messageId} on ${env.queueName}: ${detail}`);
    reportLastReceive(msg, env, undefined, config, logger, detail);
    return { action: 'keep', reason: 'failed', messageId: env.messageId, detail };
  }

  const attempt = env.attemptOffset + Math.max(1, msg.receiveCount);
  const inFlight = deps.inFlight;
  if (inFlight?.has(env.messageId)) return defer(msg, env, attempt, BUSY_RETRY_SECONDS, deps, logger);
  inFlight?.add(env.messageId);
  let lease: { release(): Promise<void> } | undefined;
  try {
    lease = await deps.lease?.acquire(env.messageId, deps.signal);
    if (deps.lease && !lease) return await defer(msg, env, attempt, BUSY_RETRY_SECONDS, deps, logger);
    return await dispatchDelivery(msg, env, attempt, body, deps, logger, now);
  } finally {
    inFlight?.delete(env.messageId);
    await lease?.release();
  }
}

async function dispatchDelivery(
  msg: InboundMessage,
  env: Envelope,
  attempt: number,
  body: string,
  deps: DeliveryDeps,
  logger: Logger,
  now: () => number,
): Promise<DeliveryOutcome> {
  const { config, transport } = deps;
  const headers: Record<string, string> = {
    ...env.headers,
    'content-type': 'application/json',
    'x-vqs-queue-name': env.queueName,
    'x-vqs-message-id': env.messageId,
    'x-vqs-message-attempt': String(attempt),
  };
  if (deps.signingSecret !== undefined) {
    Object.assign(
      headers,
      signatureHeaders(deps.signingSecret, { queueName: env.queueName, messageId: env.messageId, attempt, body }, now()),
    );
  }

  const { dispatch, url } = deps.dispatchFor(env.queueName);
  const stopHeartbeat = startHeartbeat(msg.receiptHandle, transport, config.visibilityTimeoutSeconds, logger, deps.signal);
  let status: number;
  let text: string;
  try {
    const res = await dispatch(new Request(url, { method: 'POST', headers, body, signal: deps.signal }));
    status = res.status;
    text = await res.text();
  } catch (err) {
    const detail = `flow route unreachable (${url}): ${String((err as Error)?.cause ?? err)}`;
    logger.warn(`[eve-world-aws] message ${env.messageId} on ${env.queueName}: ${detail}`);
    reportLastReceive(msg, env, body, config, logger, detail);
    return { action: 'keep', reason: 'transport', messageId: env.messageId, detail };
  } finally {
    stopHeartbeat();
  }

  if (status >= 200 && status < 300) {
    const timeoutSeconds = parseTimeout(text);
    if (timeoutSeconds === undefined) return { action: 'delete', reason: 'ack', messageId: env.messageId };
    return defer(msg, env, attempt, timeoutSeconds, deps, logger);
  }

  const reason = status === 400 ? 'malformed' : status === 401 ? 'unauthorized' : 'failed';
  const detail = `HTTP ${status}: ${text.slice(0, 500)}`;
  if (reason === 'unauthorized') {
    logger.error(
      `[eve-world-aws] flow route refused message ${env.messageId} as unauthorized; check EVE_WORLD_AWS_SIGNING_SECRET is the same on both sides (${detail})`,
    );
  } else {
    logger.warn(`[eve-world-aws] message ${env.messageId} on ${env.queueName} attempt ${attempt} failed: ${detail}`);
  }
  reportLastReceive(msg, env, body, config, logger, detail);
  return { action: 'keep', reason, messageId: env.messageId, detail };
}

/** `{timeoutSeconds: N}` from a 2xx body, else undefined (an ack). */
function parseTimeout(text: string): number | undefined {
  try {
    const n = (JSON.parse(text) as { timeoutSeconds?: unknown })?.timeoutSeconds;
    return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Redeliver the same logical message after `seconds`. Preferred: keep the SQS message and change
 * its visibility (same SQS message, receive count continues). A re-send (same logical id, attempt
 * offset carried) is used when the wait exceeds SQS's 12 h visibility cap, when SQS refuses the
 * change, or when the receive count has reached maxReceiveCount: a `timeoutSeconds` is not a
 * failure and must never push the message into the DLQ.
 */
async function defer(
  msg: InboundMessage,
  env: Envelope,
  attempt: number,
  timeoutSeconds: number,
  deps: DeliveryDeps,
  logger: Logger,
): Promise<DeliveryOutcome> {
  const seconds = Math.ceil(timeoutSeconds);
  if (seconds <= SQS_MAX_VISIBILITY_SECONDS && msg.receiveCount < deps.config.maxReceiveCount) {
    try {
      await deps.transport.changeVisibility(msg.receiptHandle, seconds);
      return { action: 'keep', reason: 'deferred', messageId: env.messageId };
    } catch (err) {
      logger.warn(`[eve-world-aws] ChangeMessageVisibility(${seconds}) failed for ${env.messageId}, re-sending instead: ${String(err)}`);
    }
  }
  await deps.transport.send({ ...env, attemptOffset: attempt, deliverAt: undefined }, seconds);
  return { action: 'delete', reason: 'rescheduled', messageId: env.messageId };
}

/** Keeps the message invisible while a long handler runs; returns the stop function. */
function startHeartbeat(
  receiptHandle: string,
  transport: SqsTransport,
  visibilitySeconds: number,
  logger: Logger,
  signal?: AbortSignal,
): () => void {
  if (!receiptHandle || signal?.aborted) return () => {};
  const everyMs = Math.max(500, (visibilitySeconds * 1000) / 2);
  const timer = setInterval(() => {
    transport.changeVisibility(receiptHandle, visibilitySeconds).catch((err) => {
      logger.warn(`[eve-world-aws] could not extend visibility of a running delivery: ${String(err)}`);
    });
  }, everyMs);
  timer.unref?.();
  // Abandoned at shutdown: stop extending, so the message reappears for another consumer.
  const stop = () => clearInterval(timer);
  signal?.addEventListener('abort', stop, { once: true });
  return () => {
    stop();
    signal?.removeEventListener('abort', stop);
  };
}

function runIdOf(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const p = decodePayload(body) as { runId?: unknown };
    return typeof p?.runId === 'string' ? p.runId : undefined;
  } catch {
    return undefined;
  }
}

/** The single DLQ line: emitted when the failing receive is the last one SQS allows. */
function reportLastReceive(
  msg: InboundMessage,
  env: Envelope | undefined,
  body: string | undefined,
  config: WorldConfig,
  logger: Logger,
  detail: string,
): void {
  if (msg.receiveCount < config.maxReceiveCount) return;
  const runId = runIdOf(body ?? env?.body ?? msg.body) ?? 'unknown';
  logger.error(
    `[eve-world-aws] DLQ: run ${runId} on queue ${env?.queueName ?? 'unknown'} (message ${env?.messageId ?? msg.sqsMessageId}) ` +
      `failed ${msg.receiveCount}/${config.maxReceiveCount} receives; it moves to ${config.deadLetterQueue} (last error: ${detail.slice(0, 300)})`,
  );
}
