/**
 * The delivery a call runs inside of: set by the flow route (`createQueueHandler`) around core's
 * handler and read by the parts below it (storage) through Node's `AsyncLocalStorage`, so what the
 * delivery carried reaches the World's methods without core passing it along.
 *
 * Invariants:
 * - Only the flow route opens a scope, and only for a request whose signature covered every field
 *   here that came from the wire (see src/consumer/shared/signing.ts); outside a delivery there is
 *   none.
 * - A scope only ever lets a part skip work it could have done anyway (a read it can answer from
 *   memory) or fence work against another copy of the same delivery (the step lease, see
 *   src/storage/write/step-lease.ts): nothing may depend on a scope being present for correctness
 *   of the event log. Lost async context = the plain path (a start without a lease, as before
 *   leases).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface DeliveryScope {
  /** Logical message id (the same on every copy and re-send of the message). */
  readonly messageId: string;
  /** 1-based delivery attempt. */
  readonly attempt: number;
  /**
   * The run log slot the message's sender had seen committed when it sent the message (its own
   * writes included): `runId` → slot. A read of that run's log inside this delivery must see at
   * least up to it; this process may answer from memory once it knows the log that far.
   *
   * Present only on a message's first delivery (attempt 1). Why that is safe: every event is
   * written by a delivery (or `start()`/a hook resume) that then sends the messages it causes, with
   * a tail at or above it. A writer that dies in between sent nothing, and its own message comes
   * back with attempt > 1, which reads the log and so finds what it wrote. A copy that comes back
   * for any other reason (a deferral, a redrive) has attempt > 1 too, or carries no tail.
   */
  readonly logTails: ReadonlyMap<string, number>;
  /**
   * The step lease of this delivery (src/storage/write/step-lease.ts): every `step_started` inside
   * the scope stamps the step with it, and the flow route keeps the leases of the steps it started
   * alive while core's handler runs. Absent: starts are not leased (the plain path).
   */
  readonly stepLease?: StepLease;
  /**
   * The highest log slot this delivery read, per run (written by storage's `events.list`): what the
   * flow route acknowledges to the liveness backstop when the delivery returns
   * (src/storage/write/due-moves.ts).
   */
  readonly readTails?: Map<string, number>;
}

/** Note that the current delivery read `runId`'s log up to `slot` (no-op outside a delivery). */
export function noteReadTail(runId: string, slot: number): void {
  const tails = als.getStore()?.readTails;
  if (tails && slot > (tails.get(runId) ?? 0)) tails.set(runId, slot);
}

/** A delivery's step lease: one random token per flow-route request. */
export interface StepLease {
  readonly token: string;
  /** How long a stamp lasts without a heartbeat (ms). */
  readonly ttlMs: number;
  /**
   * Steps this delivery started and has not finished (`runId\0stepId` → ids, and the heartbeat
   * count last written to the step, 0 when absent): the heartbeat's set.
   */
  readonly started: Map<string, { runId: string; stepId: string; beat?: number }>;
}

const als = new AsyncLocalStorage<DeliveryScope>();

export function runInDelivery<T>(scope: DeliveryScope, fn: () => T): T {
  return als.run(scope, fn);
}

/** The delivery the current call runs inside of, if any. */
export function currentDelivery(): DeliveryScope | undefined {
  return als.getStore();
}

/**
 * Wire form of a log tail (message attribute `eve.tail`, header `x-eve-log-tail`):
 * `<slot> <runId>`. Parsing is strict; anything else reads as "no tail" (the plain path).
 */
export function encodeLogTail(runId: string, slot: number): string {
  return `${slot} ${runId}`;
}

export function decodeLogTail(text: string | null | undefined): { runId: string; slot: number } | undefined {
  if (!text) return undefined;
  const m = /^(\d{1,15}) ([A-Za-z0-9_-]{1,200})$/.exec(text);
  if (!m) return undefined;
  const slot = Number(m[1]);
  return Number.isSafeInteger(slot) && slot > 0 ? { runId: m[2], slot } : undefined;
}
