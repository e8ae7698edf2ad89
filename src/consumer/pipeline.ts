/**
 * The delivery pipeline: what happens to one received SQS message, shared by the in-process
 * poller and the Lambda SQS handler. It runs in four steps, each once, in this order:
 *
 *   decode   the SQS copy -> one {@link Envelope} (attributes or scheduler envelope), or malformed
 *   decide   deliver now | hop (long wait not due: send the next hop) | take the verdict of an
 *            early delivery of it in this process (or dispatch it as that delivery's redelivery) |
 *            hold (a copy of the same logical message is running in this process already)
 *   dispatch signed `createQueueHandler` request to the flow route (in process or over HTTP),
 *            with a visibility heartbeat while it runs -> a {@link Verdict}
 *   settle   ack (caller deletes) | keep (visibility set for the retry) | replace (a fresh copy
 *            was accepted, caller deletes this one)
 *
 * Invariants:
 * - A copy is deleted only after its handler acked it, or after its replacement (next hop, long
 *   `timeoutSeconds`, a copy held or parked without a dispatch) has been accepted by SQS or the
 *   Scheduler.
 * - The handler never sees a message before its `deliverAt` (by this process's clock).
 * - With `inFlight`, at most one copy of a logical message is dispatched at a time in this
 *   process. Across processes, copies are not serialised here: the step lease on the step item
 *   (src/storage/write/step-lease.ts, stamped by `step_started` inside the flow route's delivery scope)
 *   keeps a second copy from running a step body another live delivery is running; core defers
 *   that copy (`{timeoutSeconds}`, or a delayed step message) instead of running it.
 * - A copy of a message this process delivered early (./early/registry.ts) waits for that
 *   delivery's verdict (a promise: no clock) and is settled by it: an ack deletes it, a
 *   `timeoutSeconds` replaces it by a copy delayed that long; a delivery that ended without either
 *   is redelivered at once as itself (its own id E, so core recovers the steps it owns). Anywhere
 *   else, and when there is no verdict, the copy is dispatched as usual under its id M: for core
 *   another invocation of the run (docs/design.md, "Early delivery").
 * - `x-vqs-message-id` is the logical id, identical on every SQS copy. The one other id a copy is
 *   ever dispatched under is its early delivery's, in the process that ran it, after it ended.
 * - The attempt core sees (`x-vqs-message-attempt`) counts dispatches only: holds, parks before the
 *   route was reached and settling a copy by its early verdict never raise it, however long they
 *   last (core fails a workflow run above 48). It is the copy's offset plus SQS's
 *   ApproximateReceiveCount, and stays exact because a receive that does not dispatch never
 *   leaves its copy to be received again: it is replaced by a fresh copy whose offset is the
 *   dispatches so far (`replace`). The copy of an early delivery carries an offset that counts it
 *   (src/queue/index.ts). The count may run over by one (an early delivery whose request could not
 *   be built, a replacement SQS refused), never under (see docs/design.md).
 * - Outages never push a message into the DLQ: of the flow route (unreachable, 502/503/504, 429,
 *   408, or any 5xx while the circuit is open), of S3 reading an offloaded body, or of the
 *   signing-secret source. A copy the route may have received is parked (hidden for the cool-down)
 *   and, on its last allowed receive, replaced by a fresh copy; a copy the route never received is
 *   replaced at once. Only the message's own fault counts: malformed, 4xx, a handler that keeps
 *   failing, an offloaded body that is gone (src/aws/errors.ts, `isObjectFault`).
 * - A message of a newer format than this build reads (src/formats.ts) is never decoded nor
 *   delivered: it is parked (hidden, or re-sent verbatim on its last allowed receive, so it never
 *   counts toward the DLQ) with a log line naming both versions, for a newer consumer to take.
 * - Poison (malformed, 4xx, a handler that keeps failing) is retried with backoff and dead-lettered
 *   after `maxReceiveCount` receives; the last failing receive logs exactly one DLQ line.
 */

import { queueNameOf } from '../aws/arn.js';
import { isObjectFault } from '../aws/errors.js';
import { sleep } from '../aws/sleep.js';
import type { WorldConfig } from '../config/index.js';
import { decodeLogTail } from '../delivery-scope.js';
import { newerMessageFormat } from '../formats.js';
import { SQS_MAX_VISIBILITY_SECONDS } from '../limits.js';
import { consoleLogger, type Logger } from '../log.js';
import { planHop } from '../queue/delays.js';
import { decodePayload, type Envelope, envelopeFromMessage, MSG_ATTR, messageFormatOf } from '../queue/encoding.js';
import { encodeHeaderValue } from '../queue/header-values.js';
import type { SqsTransport } from '../queue/transport.js';
import { currentTraceparent, TRACEPARENT_HEADER } from '../telemetry/tracing.js';
import type { AffinityHoldCause, DeploymentFilter } from './affinity.js';
import type { CircuitBreaker } from './breaker.js';
import { observeDelivery } from './delivery-telemetry.js';
import type { EarlyDeliveries } from './early/registry.js';
import type { SqsReceipts } from './receipts.js';
import { LOG_TAIL_HEADER, processSigningKey, signatureHeaders } from './signing.js';

/** A flow route: the compiled route's `POST`, a registered in-process handler, or `fetch`. */
export type FlowHandler = (req: Request) => Promise<Response>;

/** A received SQS message, normalised from the SDK's `Message` or a Lambda `SQSRecord`. */
export interface InboundMessage {
  sqsMessageId: string;
  receiptHandle: string;
  body: string;
  /** String values of the message attributes. */
  attributes: Record<string, string | undefined>;
  /** SQS ApproximateReceiveCount (1 on first receive). */
  receiveCount: number;
  /** SQS SentTimestamp of this copy (epoch ms), when the receive asked for it. */
  sentAt?: number;
}

/**
 * Why a copy was held, undispatched: a copy of it runs in this process (`copy-running`). Metrics
 * read this, never the detail text.
 */
export type HoldCause = 'copy-running' | AffinityHoldCause;

/**
 * What became of a received copy. `delete`: the caller deletes it (acked, or replaced by a copy SQS
 * accepted: `held`, `parked` and `retried` are replacements of a copy that was not dispatched).
 * `keep`: it stays, hidden for the retry.
 */
export type DeliveryOutcome =
  | {
      action: 'delete';
      reason: 'ack' | 'rescheduled' | 'redelayed' | 'parked' | 'held' | 'retried';
      messageId?: string;
      hold?: HoldCause;
      detail?: string;
    }
  | {
      action: 'keep';
      reason: 'deferred' | 'failed' | 'malformed' | 'unauthorized' | 'transport' | 'unavailable' | 'released';
      messageId?: string;
      detail?: string;
      hold?: HoldCause;
    };

export interface DeliveryDeps {
  config: WorldConfig;
  /** Send side: next hops and replacement copies. */
  transport: SqsTransport;
  receipts: SqsReceipts;
  /** The flow route for a logical queue name and the deployment the message names (`eve.dep`). */
  route(queueName: string, deploymentId?: string): { handler: FlowHandler; url: string };
  /**
   * Signs every delivery (closed by default): the secret, or where to read it (Secrets Manager,
   * ./secret-source.ts). Unset: this process's random key, which only a flow route in this same
   * process accepts.
   */
  signingSecret?: string | (() => Promise<string>);
  logger?: Logger;
  /** Aborts an HTTP delivery (shutdown, Lambda deadline); the copy is then released. */
  signal?: AbortSignal;
  /**
   * Visibility (s) the received copy is hidden for: the heartbeat extends it by this much every
   * third of it while the handler runs.
   */
  visibilitySeconds: number;
  /** Pauses consumption during a flow-route outage (see breaker.ts). */
  breaker?: CircuitBreaker;
  /**
   * True when the caller did not take the breaker's permission before receiving (the Lambda
   * handler, whose copies arrive regardless): while the circuit is open a copy is parked without
   * calling the route. The poller gates its receives instead and leaves this unset.
   */
  gateOnBreaker?: boolean;
  /**
   * Logical message ids this consumer is handling right now. Core treats a delivery that carries
   * the message id of a step's inline owner as that owner's crash-redelivery and re-runs the
   * step, so two copies of one message (SQS standard queues occasionally deliver twice) are not
   * handled at the same time here: the second copy is deferred and then replays what the first
   * committed (without a request; across processes the step lease does the same, see above).
   */
  inFlight?: Set<string>;
  /**
   * Messages this consumer delivered before their SQS copy arrived (./early/registry.ts): a copy
   * of one takes that delivery's verdict instead of being dispatched again.
   */
  early?: EarlyDeliveries<Verdict>;
  /** Deployment affinity (./affinity.ts): another deployment's message is held, never dispatched. */
  affinity?: DeploymentFilter;
  now?: () => number;
}

/** Largest "not yet due" gap that is waited out in process instead of re-sent (ms). */
const MAX_INLINE_WAIT_MS = 1000;

/** How long a copy of a message that is already being handled in this process waits (s). */
const BUSY_RETRY_SECONDS = 5;

/**
 * Longest wait of a copy whose request could not be built because a dependency (S3, the
 * signing-secret source) is failing (s, before jitter; the queue visibility timeout when shorter): the
 * copy is replaced each time, so its receive count cannot pace the retries as the failure backoff
 * does.
 */
export const DEPENDENCY_PARK_SECONDS = 15;

/** Backoff before SQS shows a failed delivery again: 2, 4, 8 … 64 s, never above visibility. */
export function failureBackoffSeconds(receiveCount: number, visibilityTimeoutSeconds: number): number {
  return Math.min(visibilityTimeoutSeconds, 2 ** Math.min(Math.max(1, receiveCount), 6));
}

/** What dispatch (or decode) concluded; settle turns it into SQS calls. */
export type Verdict =
  | { kind: 'ack' }
  | { kind: 'hop'; delaySeconds: number; deliverAt: number }
  | { kind: 'later'; seconds: number }
  /** Hide the copy for `seconds`, undispatched (see {@link HoldCause}). */
  | { kind: 'hold'; seconds: number; detail: string; cause: HoldCause }
  | { kind: 'paused' }
  | {
      kind: 'poison';
      reason: 'malformed' | 'unauthorized' | 'failed';
      detail: string;
      /** Found before the breaker was asked (decode, build): this copy holds no probe slot. */
      early?: true;
    }
  | {
      kind: 'outage';
      reason: 'transport' | 'unavailable';
      detail: string;
      ambiguous: boolean;
      /**
       * False when the request provably never reached the flow route: it could not be built (S3
       * or the secret source failing: `dependency`) or no connection was made (refused, no DNS,
       * no route, connect timeout). Such a receive is not a dispatch.
       */
      reached: boolean;
      /** Whose outage: the flow route's (the breaker counts it) or a dependency's (it does not). */
      of: 'route' | 'dependency';
    }
  | { kind: 'aborted' };

/** One delivery inside its span and log context, counted (./delivery-telemetry.ts). */
export function deliverMessage(msg: InboundMessage, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  const queue = queueNameOf(deps.config.queue);
  return observeDelivery(msg, queue, deps.config.maxReceiveCount, () => deliverOnce(msg, deps), deps.now);
}

async function deliverOnce(msg: InboundMessage, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  const logger = deps.logger ?? consoleLogger;
  const now = deps.now ?? Date.now;

  // 0. format: a newer one is parked for a newer consumer, never decoded here
  const format = messageFormatOf(msg.body, msg.attributes);
  const newer = format === undefined ? undefined : newerMessageFormat(format);
  if (newer) return parkNewerFormat(msg, newer, deps, logger);

  // 1. decode
  const decoded = envelopeFromMessage(msg.body, msg.attributes);
  if (typeof decoded === 'string') {
    // Malformed: retried with backoff, then dead-lettered with one DLQ line (see reportLastReceive).
    return settle(
      msg,
      undefined,
      0,
      { kind: 'poison', reason: 'malformed', detail: decoded, early: true },
      deps,
      logger,
      false,
    );
  }
  const envelope = decoded;
  // The attempt a dispatch of this receive is: every earlier receive of this copy was a dispatch
  // (a receive that is not one replaces the copy, see `replace`), and the offset counts the
  // dispatches before this copy.
  const attempt = envelope.attemptOffset + Math.max(1, msg.receiveCount);
  const undispatched = (verdict: Verdict) => settle(msg, envelope, attempt, verdict, deps, logger, false);

  // 2. decide
  if (envelope.deliverAt !== undefined) {
    const remaining = envelope.deliverAt - now();
    if (remaining > MAX_INLINE_WAIT_MS) {
      const hop = planHop(envelope.deliverAt, now(), deps.config.maxDelayHopSeconds);
      return undispatched({ kind: 'hop', ...hop });
    }
    if (remaining > 0) await sleep(remaining, deps.signal);
  }
  const away = await deps.affinity?.holdFor(envelope);
  if (away) return undispatched({ kind: 'hold', ...away });
  // The id this copy is dispatched under: its own, or its early delivery's (below).
  let dispatchId = envelope.messageId;
  const early = deps.early?.take(envelope.messageId);
  if (early) {
    // Delivered early in this process: wait for that delivery (keeping this copy hidden) and take
    // its verdict. The early delivery was a dispatch (this copy's offset counts it): an ack or a
    // `timeoutSeconds` settles the copy without another. One that reached the handler and ended
    // without either is redelivered now as itself: its handler has returned (in-process
    // knowledge, no clock), and under its own id core recovers the steps it owns at once.
    const stopHeartbeat = startHeartbeat(msg.receiptHandle, deps, logger);
    const verdict = await early.verdict.finally(stopHeartbeat);
    if (verdict?.kind === 'ack' || verdict?.kind === 'later') return undispatched(verdict);
    if (verdict && verdict.kind !== 'aborted') dispatchId = early.earlyId;
  }
  if (deps.inFlight?.has(dispatchId)) {
    return undispatched({
      kind: 'hold',
      seconds: BUSY_RETRY_SECONDS,
      detail: `a copy is being delivered in this process; retried in ${BUSY_RETRY_SECONDS} s`,
      cause: 'copy-running',
    });
  }
  // A request that cannot be built (a header value no encoding saves, a broken route, the body's
  // object gone) is this message's fault, found before the breaker is asked: it never takes the
  // probe slot. One that cannot be built because S3 or the secret source fails is parked.
  const built = await buildRequest({ ...envelope, messageId: dispatchId }, attempt, deps, now);
  if (built.kind === 'poison') return undispatched({ ...built, early: true });
  if (built.kind === 'outage') return undispatched(built);
  if (deps.gateOnBreaker && deps.breaker && !deps.breaker.tryAcquire()) {
    return undispatched({ kind: 'paused' });
  }

  // 3. dispatch
  deps.inFlight?.add(dispatchId);
  try {
    const verdict = await dispatch(msg, built, deps);
    // 4. settle
    return await settle(msg, envelope, attempt, verdict, deps, logger, true);
  } finally {
    deps.inFlight?.delete(dispatchId);
  }
}

/**
 * Delivers `envelope`, an early delivery under its own id (./early/offer.ts), attempt 1, with no
 * receipt to keep alive or settle. The verdict is the copy's to settle (undefined: the handler
 * was not reached, the copy is delivered as usual); nothing here deletes, defers, dead-letters or
 * touches the breaker.
 */
export async function deliverEarly(envelope: Envelope, deps: DeliveryDeps): Promise<Verdict | undefined> {
  const now = deps.now ?? Date.now;
  const built = await buildRequest(envelope, envelope.attemptOffset + 1, deps, now);
  if (built.kind !== 'request') return undefined;
  const msg: InboundMessage = {
    sqsMessageId: '',
    receiptHandle: '',
    body: envelope.body ?? '',
    attributes: {},
    receiveCount: 1,
  };
  deps.inFlight?.add(envelope.messageId);
  try {
    return await dispatch(msg, built, deps);
  } finally {
    deps.inFlight?.delete(envelope.messageId);
  }
}

/** A flow request ready to send, or why this message cannot be sent at all. */
type Built =
  | { kind: 'request'; handler: FlowHandler; url: string; request: Request }
  | Extract<Verdict, { kind: 'poison' }>
  | Extract<Verdict, { kind: 'outage' }>;

async function buildRequest(
  envelope: Envelope,
  attempt: number,
  deps: DeliveryDeps,
  now: () => number,
): Promise<Built> {
  let body: string;
  try {
    body =
      envelope.s3Key === undefined
        ? (envelope.body ?? '')
        : Buffer.from(await deps.transport.ctx.payloads.getBytes(envelope.s3Key)).toString('utf8');
  } catch (err) {
    const detail = `cannot read offloaded body ${envelope.s3Key}: ${String(err)}`;
    // The object gone (its lifetime ended) is this message's fault; S3 failing is an outage.
    if (isObjectFault(err)) return { kind: 'poison', reason: 'failed', detail };
    return { kind: 'outage', reason: 'unavailable', ambiguous: false, reached: false, of: 'dependency', detail };
  }
  let secret: string;
  try {
    secret =
      typeof deps.signingSecret === 'function'
        ? await deps.signingSecret()
        : (deps.signingSecret ?? processSigningKey());
  } catch (err) {
    // Secrets Manager is unreachable or refuses: infrastructure, not this message; kept, not dead-lettered.
    return {
      kind: 'outage',
      reason: 'unavailable',
      ambiguous: false,
      reached: false,
      of: 'dependency',
      detail: `cannot read the signing secret: ${String(err)}`,
    };
  }
  try {
    // Names and ids travel encoded when they are not plain ASCII (src/queue/header-values.ts); the
    // signature covers the values on the wire.
    const queueName = encodeHeaderValue(envelope.queueName);
    const messageId = encodeHeaderValue(envelope.messageId);
    const headers: Record<string, string> = {
      ...passThroughHeaders(envelope.headers),
      'content-type': 'application/json',
      'x-vqs-queue-name': queueName,
      'x-vqs-message-id': messageId,
      'x-vqs-message-attempt': String(attempt),
    };
    const logTail = decodeLogTail(envelope.logTail) ? envelope.logTail : undefined;
    if (logTail) headers[LOG_TAIL_HEADER] = logTail;
    // The delivery span, so the flow route (in another process too) runs core under it.
    const traceparent = currentTraceparent();
    if (traceparent) headers[TRACEPARENT_HEADER] = traceparent;
    const { handler, url } = deps.route(envelope.queueName, envelope.deploymentId);
    const parts = {
      queueName,
      messageId,
      attempt,
      body,
      destination: url,
      ...(logTail ? { logTail } : {}),
      ...(traceparent ? { traceparent } : {}),
    };
    Object.assign(headers, signatureHeaders(secret, parts, now()));
    const request = new Request(url, { method: 'POST', headers, body, signal: deps.signal });
    return { kind: 'request', handler, url, request };
  } catch (err) {
    return { kind: 'poison', reason: 'malformed', detail: `cannot build the flow request: ${String(err)}` };
  }
}

async function dispatch(
  msg: InboundMessage,
  built: Extract<Built, { kind: 'request' }>,
  deps: DeliveryDeps,
): Promise<Verdict> {
  const { handler, url, request } = built;
  const stopHeartbeat = startHeartbeat(msg.receiptHandle, deps, deps.logger ?? consoleLogger);
  let status: number;
  let text: string;
  try {
    const res = await handler(request);
    status = res.status;
    text = await res.text();
  } catch (err) {
    if (deps.signal?.aborted) return { kind: 'aborted' };
    // Only a failure on the network is the route's outage; anything raised here (an in-process
    // handler that threw, a request the client refused to send) is this message's.
    if (!isNetworkError(err)) {
      return { kind: 'poison', reason: 'malformed', detail: `the flow request failed locally: ${describeError(err)}` };
    }
    return {
      kind: 'outage',
      reason: 'transport',
      ambiguous: false,
      reached: !isConnectError(err),
      of: 'route',
      detail: `flow route unreachable (${url}): ${String((err as Error)?.cause ?? err)}`,
    };
  } finally {
    stopHeartbeat();
  }

  if (status >= 200 && status < 300) {
    const seconds = parseTimeout(text);
    return seconds === undefined ? { kind: 'ack' } : { kind: 'later', seconds };
  }
  const detail = `HTTP ${status}: ${text.slice(0, 500)}`;
  if (status === 408 || status === 429 || status >= 500) {
    // 500 is also what createQueueHandler answers when the handler threw: ambiguous.
    return {
      kind: 'outage',
      reason: 'unavailable',
      detail,
      ambiguous: status === 500 || status === 501,
      reached: true,
      of: 'route',
    };
  }
  if (status === 401) return { kind: 'poison', reason: 'unauthorized', detail };
  return { kind: 'poison', reason: status === 400 ? 'malformed' : 'failed', detail };
}

/**
 * Turns a verdict into SQS calls. `dispatched`: this receive handed the request to the flow route.
 * A receive that did not (a hold, a park before the route was reached, a copy settled by its early
 * delivery's verdict) and leaves the message to be delivered again replaces the copy (`replace`),
 * so the attempt core sees counts dispatches only.
 */
async function settle(
  msg: InboundMessage,
  envelope: Envelope | undefined,
  attempt: number,
  verdict: Verdict,
  deps: DeliveryDeps,
  logger: Logger,
  dispatched: boolean,
): Promise<DeliveryOutcome> {
  const messageId = envelope?.messageId;
  const where = envelope
    ? `message ${quoted(envelope.messageId)} on ${quoted(envelope.queueName)}`
    : `SQS message ${msg.sqsMessageId}`;
  switch (verdict.kind) {
    case 'ack':
      deps.breaker?.succeeded();
      return { action: 'delete', reason: 'ack', messageId };

    case 'hop':
      // sendPlanned re-homes an offloaded body that would expire before this hop can be received.
      await deps.transport.sendPlanned(
        envelope as Envelope,
        { kind: 'sqs', delaySeconds: verdict.delaySeconds, deliverAt: verdict.deliverAt },
        (deps.now ?? Date.now)(),
      );
      deps.breaker?.neutral();
      return { action: 'delete', reason: 'redelayed', messageId };

    case 'later':
      deps.breaker?.succeeded();
      if (!dispatched) {
        // An early delivery's `timeoutSeconds`: a fresh copy (its own id) delayed that long.
        return replace(msg, envelope as Envelope, attempt, verdict.seconds, deps, logger, { reason: 'rescheduled' });
      }
      return defer(msg, envelope as Envelope, attempt, verdict.seconds, deps, logger);

    case 'hold':
      // Not a verdict on the route.
      deps.breaker?.neutral();
      return replace(msg, envelope as Envelope, attempt, verdict.seconds, deps, logger, {
        reason: 'held',
        hold: verdict.cause,
        detail: verdict.detail,
      });

    case 'paused':
      // The circuit is open: the route was not called, the copy waits out the cool-down.
      return park(msg, envelope as Envelope, attempt, 'unavailable', 'circuit open: the flow route is failing', deps, {
        reached: false,
        logger,
      });

    case 'aborted':
      deps.breaker?.neutral();
      // Shutdown or deadline: hand the copy back at once instead of hiding it for the visibility.
      await deps.receipts.release(msg.receiptHandle).catch(() => undefined);
      return { action: 'keep', reason: 'released', messageId };

    case 'outage': {
      // Unreachable, 502-504, 429 and 408 are always an outage; a plain 500 only while the circuit
      // is open (several messages failing in a row), otherwise it is the handler failing. S3 or the
      // secret source failing is an outage of neither the route nor the message: the breaker is
      // not told.
      let open = false;
      if (verdict.of === 'route') {
        open = deps.breaker?.failed(messageId ?? msg.sqsMessageId, verdict.detail, verdict.ambiguous) ?? false;
      } else {
        deps.breaker?.neutral();
      }
      const outage = open || !verdict.ambiguous;
      if (!outage) {
        if (!dispatched) return retryUndispatched(msg, envelope as Envelope, attempt, verdict.detail, deps, logger);
        return keepFailed(msg, envelope, 'failed', verdict.detail, deps, logger);
      }
      logger.warn(
        `[eve-world-aws] ${where}: ${verdict.detail}; kept for retry (an outage does not count toward the DLQ)`,
      );
      return park(msg, envelope as Envelope, attempt, verdict.reason, verdict.detail, deps, {
        reached: dispatched && verdict.reached,
        dependency: verdict.of === 'dependency',
        logger,
      });
    }

    case 'poison':
      // A poison copy that was the probe gives the slot back at once; one found before the
      // breaker was asked never touches it.
      if (!verdict.early) deps.breaker?.neutral();
      if (verdict.reason === 'unauthorized') {
        logger.error(
          `[eve-world-aws] flow route refused ${where} as unauthorized; check EVE_WORLD_AWS_SIGNING_SECRET is the same on both sides (${verdict.detail})`,
        );
      } else if (envelope && verdict.reason !== 'malformed') {
        logger.warn(`[eve-world-aws] ${where} attempt ${attempt} failed: ${verdict.detail}`);
      }
      // An early delivery that failed (its verdict taken by this copy): retried on a fresh copy.
      if (!dispatched && !verdict.early && envelope) {
        return retryUndispatched(msg, envelope, attempt, verdict.detail, deps, logger);
      }
      return keepFailed(msg, envelope, verdict.reason, verdict.detail, deps, logger);
  }
}

/**
 * A receive that did not dispatch, and the message is to be delivered again in `seconds`: the copy
 * is replaced by a fresh one (same logical id) that SQS shows after `seconds`, carrying the
 * dispatches so far (`attempt - 1`) as its offset, and this copy is deleted. Its receive count
 * thus never counts a receive that was not a dispatch. When the send fails the copy is hidden for
 * `seconds` instead (this receive then counts as one more attempt: never fewer than the dispatches).
 *
 * Two copies of one message can exist for a moment (the send succeeded, the delete failed): the
 * old one is received again after its visibility. That is an SQS duplicate like any other, which
 * the in-flight set and the step lease make safe (see the invariants).
 */
async function replace(
  msg: InboundMessage,
  envelope: Envelope,
  attempt: number,
  seconds: number,
  deps: DeliveryDeps,
  logger: Logger,
  outcome: {
    reason: 'held' | 'parked' | 'rescheduled' | 'retried';
    hold?: HoldCause;
    detail?: string;
  },
): Promise<DeliveryOutcome> {
  const fresh: Envelope = { ...envelope, attemptOffset: Math.max(0, attempt - 1), deliverAt: undefined };
  const wait = Math.max(0, Math.ceil(seconds));
  const info = {
    messageId: envelope.messageId,
    ...(outcome.hold ? { hold: outcome.hold } : {}),
    ...(outcome.detail ? { detail: outcome.detail } : {}),
  };
  try {
    await deps.transport.send(fresh, wait, { now: (deps.now ?? Date.now)() });
    return { action: 'delete', reason: outcome.reason, ...info };
  } catch (err) {
    logger.warn(
      `[eve-world-aws] could not replace the copy of ${quoted(envelope.messageId)} (hidden ${wait} s instead): ${String(err)}`,
    );
    await deps.receipts
      .changeVisibility(msg.receiptHandle, Math.min(SQS_MAX_VISIBILITY_SECONDS, wait))
      .catch(() => undefined);
    const reason = outcome.reason === 'parked' ? 'unavailable' : outcome.reason === 'retried' ? 'failed' : 'deferred';
    return { action: 'keep', reason, ...info };
  }
}

/**
 * A failure that was not a dispatch of this receive (an early delivery that failed, its verdict
 * taken by this copy): retried after the failure backoff on a fresh copy. It does not count toward
 * the DLQ; the dispatches that follow do.
 */
function retryUndispatched(
  msg: InboundMessage,
  envelope: Envelope,
  attempt: number,
  detail: string,
  deps: DeliveryDeps,
  logger: Logger,
): Promise<DeliveryOutcome> {
  const seconds = failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
  return replace(msg, envelope, attempt, seconds, deps, logger, { reason: 'retried', detail });
}

/** A real failure: retried after a short backoff, dead-lettered after `maxReceiveCount` receives. */
async function keepFailed(
  msg: InboundMessage,
  envelope: Envelope | undefined,
  reason: 'malformed' | 'unauthorized' | 'failed',
  detail: string,
  deps: DeliveryDeps,
  logger: Logger,
): Promise<DeliveryOutcome> {
  reportLastReceive(msg, envelope, deps.config, logger, detail);
  // Back after a short backoff rather than a whole visibility timeout: most failures are transient.
  const seconds = failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
  await deps.receipts.changeVisibility(msg.receiptHandle, seconds).catch(() => undefined);
  return { action: 'keep', reason, messageId: envelope?.messageId, detail };
}

/**
 * An outage: the copy waits for the breaker's cool-down (or the failure backoff; at most
 * {@link DEPENDENCY_PARK_SECONDS} when S3 or the secret source failed), with jitter. When the
 * route may have been reached (`reached`), the receive was a dispatch: the copy is hidden, and on
 * its last allowed receive replaced by a fresh one (same logical id, attempt carried), so an
 * outage of any length never moves a message to the DLQ. When nothing reached the route, the copy
 * is replaced at once (`replace`): the park does not raise the attempt.
 */
async function park(
  msg: InboundMessage,
  envelope: Envelope,
  attempt: number,
  reason: 'transport' | 'unavailable',
  detail: string,
  deps: DeliveryDeps,
  how: { reached: boolean; dependency?: boolean; logger: Logger },
): Promise<DeliveryOutcome> {
  const base = deps.breaker?.isOpen
    ? deps.breaker.cooldownSeconds
    : how.dependency
      ? Math.max(1, Math.min(DEPENDENCY_PARK_SECONDS, deps.config.visibilityTimeoutSeconds))
      : failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
  // Jitter: copies parked together do not all come back in the same second.
  const seconds = Math.min(SQS_MAX_VISIBILITY_SECONDS, base + Math.floor(Math.random() * (Math.ceil(base / 2) + 1)));
  if (!how.reached) return replace(msg, envelope, attempt, seconds, deps, how.logger, { reason: 'parked', detail });
  if (msg.receiveCount >= deps.config.maxReceiveCount - 1) {
    await deps.transport.send({ ...envelope, attemptOffset: attempt }, seconds, {
      allowScheduler: false,
      now: (deps.now ?? Date.now)(),
    });
    return { action: 'delete', reason: 'parked', messageId: envelope.messageId };
  }
  await deps.receipts.changeVisibility(msg.receiptHandle, seconds).catch(() => undefined);
  return { action: 'keep', reason, messageId: envelope.messageId, detail };
}

/**
 * A message of a newer format: hidden for the failure backoff and, on its last allowed receive,
 * replaced by a verbatim copy (its format kept), so it never reaches the DLQ here. Not a verdict
 * on the flow route (the breaker is told neutral).
 */
async function parkNewerFormat(
  msg: InboundMessage,
  reason: string,
  deps: DeliveryDeps,
  logger: Logger,
): Promise<DeliveryOutcome> {
  deps.breaker?.neutral();
  const messageId = msg.attributes[MSG_ATTR.id];
  logger.warn(
    `[eve-world-aws] SQS message ${msg.sqsMessageId}${messageId ? ` (message ${quoted(messageId)})` : ''}: ${reason}; not delivered, not counted toward the DLQ`,
  );
  const base = failureBackoffSeconds(msg.receiveCount, deps.config.visibilityTimeoutSeconds);
  const seconds = base + Math.floor(Math.random() * (Math.ceil(base / 2) + 1));
  if (msg.receiveCount >= deps.config.maxReceiveCount - 1) {
    await deps.transport.sendVerbatim(msg.body, msg.attributes, seconds);
    return { action: 'delete', reason: 'parked', messageId };
  }
  await deps.receipts.changeVisibility(msg.receiptHandle, seconds).catch(() => undefined);
  return { action: 'keep', reason: 'deferred', messageId, detail: reason };
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
 * Redeliver the same logical message after `seconds`. Preferred: keep the SQS copy and change its
 * visibility (same copy, receive count continues). A re-send (same logical id, attempt offset
 * carried) is used when the wait exceeds SQS's 12 h visibility cap, when SQS refuses the change,
 * or when the receive count has reached maxReceiveCount: a `timeoutSeconds` is not a failure and
 * must never push the message into the DLQ.
 */
async function defer(
  msg: InboundMessage,
  envelope: Envelope,
  attempt: number,
  timeoutSeconds: number,
  deps: DeliveryDeps,
  logger: Logger,
): Promise<DeliveryOutcome> {
  const seconds = Math.ceil(timeoutSeconds);
  if (seconds <= SQS_MAX_VISIBILITY_SECONDS && msg.receiveCount < deps.config.maxReceiveCount) {
    try {
      await deps.receipts.changeVisibility(msg.receiptHandle, seconds);
      return { action: 'keep', reason: 'deferred', messageId: envelope.messageId };
    } catch (err) {
      logger.warn(
        `[eve-world-aws] ChangeMessageVisibility(${seconds}) failed for ${envelope.messageId}, re-sending instead: ${String(err)}`,
      );
    }
  }
  await deps.transport.send({ ...envelope, attemptOffset: attempt, deliverAt: undefined }, seconds, {
    now: (deps.now ?? Date.now)(),
  });
  return { action: 'delete', reason: 'rescheduled', messageId: envelope.messageId };
}

/**
 * Keeps the copy hidden while the handler runs: every third of the visibility in force, extend it
 * by that visibility. Returns the stop function. Stops on abort, so an abandoned copy reappears.
 */
function startHeartbeat(receiptHandle: string, deps: DeliveryDeps, logger: Logger): () => void {
  const signal = deps.signal;
  if (!receiptHandle || signal?.aborted) return () => {};
  const seconds = Math.max(1, deps.visibilitySeconds);
  const timer = setInterval(
    () => {
      deps.receipts.changeVisibility(receiptHandle, seconds).catch((err) => {
        logger.warn(`[eve-world-aws] could not extend visibility of a running delivery: ${String(err)}`);
      });
    },
    Math.max(500, (seconds * 1000) / 3),
  );
  timer.unref?.();
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
  envelope: Envelope | undefined,
  config: WorldConfig,
  logger: Logger,
  detail: string,
): void {
  if (msg.receiveCount < config.maxReceiveCount) return;
  const runId = runIdOf(envelope?.body ?? msg.body);
  // Names from the message are quoted (JSON): a hostile one cannot forge log lines.
  logger.error(
    `[eve-world-aws] DLQ: run ${runId === undefined ? 'unknown' : quoted(runId)} on queue ${envelope ? quoted(envelope.queueName) : 'unknown'} (message ${envelope ? quoted(envelope.messageId) : msg.sqsMessageId}) ` +
      `failed ${msg.receiveCount}/${config.maxReceiveCount} receives; it moves to ${config.deadLetterQueue} (reason: ${JSON.stringify(detail.slice(0, 300))})`,
    { runId, messageId: envelope?.messageId ?? msg.sqsMessageId, queue: envelope?.queueName },
  );
}

/** A string from a message for a log line: as is when plain, else JSON-quoted; cut short. */
function quoted(v: string): string {
  const short = v.length > 300 ? `${v.slice(0, 300)}…` : v;
  return /^[\x21-\x7e]*$/.test(short) ? short : JSON.stringify(short);
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Error codes of a request that reached for the network and failed there (Node and undici). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RESPONSE_STATUS_CODE',
]);

/** TLS, HTTP parser and undici failures are the network's too; undici's argument errors are not. */
const NETWORK_CODE_PREFIX = /^(UND_ERR_|ERR_TLS_|ERR_SSL_|ERR_HTTP2_|HPE_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;
const LOCAL_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'UND_ERR_ABORTED']);

/** Network failures before a connection existed: the request was never sent. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** True when `err` (or a cause of it) failed before a connection was made: the route was not reached. */
export function isConnectError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECT_CODES.has(code)) return true;
    const first = (e as { errors?: Array<{ code?: unknown }> }).errors?.[0]?.code;
    if (typeof first === 'string' && CONNECT_CODES.has(first)) return true;
  }
  return false;
}

/** True when `err` (or a cause of it) is a network failure, not one raised in this process. */
export function isNetworkError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string' || LOCAL_CODES.has(code)) continue;
    if (NETWORK_CODES.has(code) || NETWORK_CODE_PREFIX.test(code)) return true;
  }
  return false;
}

/**
 * `QueueOptions.headers` as sent to the flow route, without the names the World signs or reads
 * itself (`x-eve-*`, `x-vqs-*`): a caller's header can never pose as one the signature vouches for.
 */
function passThroughHeaders(h: Record<string, string> | undefined): Record<string, string> {
  if (!h) return {};
  return Object.fromEntries(
    Object.entries(h)
      .filter(([k]) => !/^x-(eve|vqs)-/i.test(k))
      .map(([k, v]) => [k, encodeHeaderValue(v)]),
  );
}
