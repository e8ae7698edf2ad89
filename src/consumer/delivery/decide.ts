/**
 * The decide step: whether a decoded copy is dispatched now, and under which id, or settled without
 * a dispatch. In order: not due yet (a long wait sends the next hop, a short one is waited out
 * here); another deployment's (held, ./affinity.ts); delivered early in this process (take that
 * delivery's verdict, or dispatch as its redelivery); a copy of it running here (held); its flow
 * request (./flow-request.ts) cannot be built (poison or a dependency outage); the circuit open
 * where the caller did not gate on it (paused).
 *
 * Invariants:
 * - The handler never sees a message before its `deliverAt` (by this process's clock).
 * - With `inFlight`, at most one copy of a logical message is dispatched at a time in this process.
 *   Across processes, copies are not serialised here: the step lease on the step item
 *   (src/storage/write/step-lease.ts, stamped by `step_started` inside the flow route's delivery
 *   scope) keeps a second copy from running a step body another live delivery is running; core
 *   defers that copy (`{timeoutSeconds}`, or a delayed step message) instead of running it.
 * - A copy of a message this process delivered early (./early/verdict-registry.ts) waits for that
 *   delivery's verdict (a promise: no clock) and is settled by it: an ack deletes it, a
 *   `timeoutSeconds` replaces it by a copy delayed that long; a delivery that ended without either
 *   is redelivered at once as itself (its own id E, so core recovers the steps it owns). Anywhere
 *   else, and when there is no verdict, the copy is dispatched as usual under its id M: for core
 *   another invocation of the run (docs/design.md, "Early delivery").
 * - `x-vqs-message-id` is the logical id, identical on every SQS copy. The one other id a copy is
 *   ever dispatched under is its early delivery's, in the process that ran it, after it ended.
 * - The early delivery was a dispatch (the copy's offset counts it, src/queue/index.ts): settling a
 *   copy by its verdict does not raise the attempt. The count may run over by one (an early
 *   delivery whose request could not be built), never under.
 */
import { sleep } from '../../aws/sleep.js';
import { planHop } from '../../queue/delays.js';
import type { Copy } from './deps.js';
import { type Built, buildRequest, type FlowRequest } from './flow-request.js';
import { startHeartbeat } from './heartbeat.js';
import type { Verdict } from './verdict.js';

/** Largest "not yet due" gap that is waited out in process instead of re-sent (ms). */
const MAX_INLINE_WAIT_MS = 1000;

export type Decision =
  /** Settle without a dispatch: this receive is not one. */
  | { kind: 'settle'; verdict: Verdict }
  /**
   * Dispatch `request` under `dispatchId` (the logical id, or the early delivery's), which is
   * reserved in `inFlight`: the caller removes it once the copy is settled.
   */
  | { kind: 'dispatch'; dispatchId: string; request: FlowRequest };

export async function decide({ msg, envelope, attempt, deps, logger }: Copy): Promise<Decision> {
  const now = deps.now ?? Date.now;
  const undispatched = (verdict: Verdict): Decision => ({ kind: 'settle', verdict });
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
    // Delivered early in this process: wait for that delivery, this copy kept hidden, and take its
    // verdict (see the invariants: one ending without an ack or `timeoutSeconds` is redelivered).
    const stopHeartbeat = startHeartbeat(msg.receiptHandle, deps, logger);
    const verdict = await early.verdict.finally(stopHeartbeat);
    if (verdict?.kind === 'ack' || verdict?.kind === 'later') return undispatched(verdict);
    if (verdict && verdict.kind !== 'aborted') dispatchId = early.earlyId;
  }
  if (deps.inFlight?.has(dispatchId)) {
    const seconds = deps.config.copyRunningHoldSeconds;
    return undispatched({
      kind: 'hold',
      seconds,
      detail: `a copy is being delivered in this process; retried in ${seconds} s`,
      cause: 'copy-running',
    });
  }
  // Reserved from the check on, in the same turn: a copy that arrives while this one's request is
  // being built (S3, the secret source) is held like one arriving during the dispatch.
  deps.inFlight?.add(dispatchId);
  const unreserved = (verdict: Verdict): Decision => {
    deps.inFlight?.delete(dispatchId);
    return undispatched(verdict);
  };
  // A request that cannot be built (a header value no encoding saves, a broken route, the body's
  // object gone) is this message's fault, found before the breaker is asked: it never takes the
  // probe slot. One that cannot be built because S3 or the secret source fails is parked.
  let built: Built;
  try {
    built = await buildRequest(envelope, attempt, deps, now, dispatchId);
  } catch (err) {
    deps.inFlight?.delete(dispatchId);
    throw err;
  }
  if (built.kind === 'poison') return unreserved({ ...built, early: true });
  if (built.kind === 'outage') return unreserved(built);
  if (deps.gateOnBreaker && deps.breaker && !deps.breaker.tryAcquire()) return unreserved({ kind: 'paused' });
  return { kind: 'dispatch', dispatchId, request: built };
}
