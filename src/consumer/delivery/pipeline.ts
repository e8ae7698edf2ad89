/**
 * The delivery pipeline: what happens to one received SQS message, shared by the in-process
 * poller and the Lambda SQS handler. It composes four steps, each run once, in this order:
 *
 *   decode   ./decode.ts: the SQS copy -> one Envelope, or a newer format (parked for a
 *            newer consumer), or malformed
 *   decide   ./decide.ts: dispatch now, or settle undispatched (a hop, a hold, an early
 *            delivery's verdict: its header lists the cases in order); builds the flow request
 *   dispatch ./dispatch.ts: the signed `createQueueHandler` request to the flow route (in
 *            process or over HTTP), with a visibility heartbeat while it runs -> a Verdict
 *   settle   ./settle.ts: ack (caller deletes) | keep (visibility set for the retry) |
 *            replace (a fresh copy was accepted, caller deletes this one: ./replace.ts, a
 *            failure counted in it or moved to the DLQ: ./failures.ts)
 *
 * Each invariant is stated where it is enforced: the order of delivery, the in-process serialisation and early delivery
 * in decide.ts; building and signing in flow-request.ts; what an answer means in dispatch.ts; deletes and outages in
 * settle.ts; poison, its count and the DLQ in failures.ts; the attempt count and newer formats in replace.ts.
 *
 * What this file keeps for the attempt count (its rule: ./replace.ts): only the `dispatch` branch
 * below settles with `dispatched: true`, so holds, parks before the route was reached and copies
 * settled by their early verdict never raise it, however long they last (core fails a run above 48).
 */

import { queueNameOf } from '../../aws/arn.js';
import type { Envelope } from '../../queue/encoding.js';
import { consoleLogger } from '../../telemetry/log.js';
import { decide } from './decide.js';
import { decode } from './decode.js';
import { observeDelivery } from './delivery-telemetry.js';
import type { Copy, DeliveryDeps, InboundMessage, Received } from './deps.js';
import { dispatch } from './dispatch.js';
import { keepFailed } from './failures.js';
import { buildRequest } from './flow-request.js';
import { parkNewerFormat } from './replace.js';
import { settle } from './settle.js';
import type { DeliveryOutcome, Verdict } from './verdict.js';

export type { DeliveryDeps, FlowHandler, InboundMessage } from './deps.js';
export type { DeliveryOutcome, HoldCause, Verdict } from './verdict.js';

/** One delivery inside its span and log context, counted (./delivery-telemetry.ts). */
export function deliverMessage(msg: InboundMessage, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  const queue = queueNameOf(deps.config.queue);
  return observeDelivery(msg, queue, deps.config.maxReceiveCount, () => deliverOnce(msg, deps), deps.now);
}

async function deliverOnce(msg: InboundMessage, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  const received: Received = { msg, deps, logger: deps.logger ?? consoleLogger };

  const decoded = decode(msg);
  if (decoded.kind === 'newer') return parkNewerFormat(received, decoded.reason);
  // Poison found before the breaker was asked (never told), with no envelope to count it in: kept
  // for SQS's receive count, retried with backoff, then dead-lettered with a line (./failures.ts).
  if (decoded.kind === 'malformed') return keepFailed(received, 'malformed', decoded.detail);
  const copy: Copy = { ...received, envelope: decoded.envelope, attempt: decoded.attempt, dispatched: false };

  const decision = await decide(copy);
  if (decision.kind === 'settle') return settle(copy, decision.verdict);

  // Decide reserved `dispatchId` in `inFlight`: released once the copy is settled.
  try {
    const verdict = await dispatch(msg, decision.request, deps);
    return await settle({ ...copy, dispatched: true }, verdict);
  } finally {
    deps.inFlight?.delete(decision.dispatchId);
  }
}

/**
 * Delivers `envelope` early under its own id `earlyId` (./early/offer.ts), attempt 1, with no
 * receipt to keep alive or settle. The verdict is the copy's to settle (undefined: the handler was
 * not reached, the copy is delivered as usual); nothing here deletes, defers, dead-letters or
 * touches the breaker.
 */
export async function deliverEarly(
  envelope: Envelope,
  earlyId: string,
  deps: DeliveryDeps,
): Promise<Verdict | undefined> {
  const now = deps.now ?? Date.now;
  const built = await buildRequest(envelope, envelope.attemptOffset + 1, deps, now, earlyId);
  if (built.kind !== 'request') return undefined;
  const msg: InboundMessage = {
    sqsMessageId: '',
    receiptHandle: '',
    body: envelope.body ?? '',
    attributes: {},
    receiveCount: 1,
  };
  deps.inFlight?.add(earlyId);
  try {
    return await dispatch(msg, built, deps);
  } finally {
    deps.inFlight?.delete(earlyId);
  }
}
