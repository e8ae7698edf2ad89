/**
 * The step lease: at most one delivery runs a step body at a time, fenced on the STEP item in the
 * `step_started` transaction that is written anyway (no extra request, no extra item). Why core
 * needs it, and its cost: docs/design.md, "Step lease".
 *
 * Step item fields: `leaseToken` (the delivery's random token), `leaseUntil` (ms, the taker's clock):
 * an owned record kept on the step item (src/aws/owned-record.ts), which builds every condition.
 *
 * Invariants:
 * - Every `step_started` inside a delivery scope with a lease (the flow route's) stamps the step
 *   with the scope's token and `now + ttlMs`, in its own transaction (lazy create, bare start of a
 *   pending step, start of a running step).
 * - A start inside a scope succeeds only when the step carries no live lease of another delivery:
 *   no lease, an expired one (`leaseUntil < now`: its holder died or stopped its heartbeat), or
 *   this delivery's own token (an SDK retry after a lost response, or core's own restart of a step
 *   whose lazy claim it lost to itself, recognises itself). Decided on the read, and enforced by
 *   the write's condition together with `ver` (the heartbeat moves `leaseUntil` without `ver`);
 *   a refused start throws `TooEarlyError` with `retryAfter` = seconds until the lease expires,
 *   which core maps to a retry without running the body.
 * - step_completed / step_failed / step_retrying clear the lease (they rewrite the step item).
 * - The flow route extends the leases of the steps its delivery started every ttl / 3 while core's
 *   handler runs (UpdateItem conditioned on the token), and releases what is left when the handler
 *   settles; both are no-ops on a lease that is no longer the delivery's.
 * - Outside a scope with a lease, starts are allowed and not stamped.
 * - The ttl is half the consumer's visibility, at most 60 s ({@link stepLeaseTtlMs}).
 *
 * What this lease is not: clock-free. `leaseUntil` is written on the holder's clock and compared
 * with the reader's, so (test/e2e/early-pause-kill.test.ts pins the pause case):
 * - Skew: a reader whose clock runs ahead of the holder's by more than what is left of the lease
 *   (never less than two thirds of the ttl while the holder heartbeats) takes a live lease over,
 *   and the body runs a second time beside the first; the holder's next heartbeat finds its token
 *   gone and drops the step, but its body goes on. A reader behind only waits longer (liveness, not safety).
 * - A paused holder (SIGSTOP, a long GC, a frozen VM) heartbeats nothing: once the ttl has passed
 *   on the others' clocks a start elsewhere takes the step over (core's inline-ownership wake or a
 *   redelivery) and runs the body again; the resumed holder's body runs to its end too.
 * - Completion is fenced by `ver`, not by the token: whichever of the two completions commits first
 *   is the step's result, the other finds a terminal step and is refused (`EntityConflictError`;
 *   the run is not failed). The log stays valid (one `step_completed`); the body's side effects
 *   happened twice.
 * No lease can stop a resumed body; a clock-free takeover (the taker sees the holder's heartbeat
 * counter unchanged across a wait on one clock) would remove the skew case only.
 */
import { TooEarlyError } from '@workflow/errors';
import { type BuiltCond, type Change, OwnedRecord } from '../../aws/owned-record.js';
import { currentDelivery, type StepLease } from '../../context/delivery-scope.js';
import { keys } from '../../schema/keys.js';
import type { StorageCtx } from '../table/storage-ctx.js';

/** The lease's fields on the step item. */
const leases = new OwnedRecord('step lease', { owner: 'leaseToken', until: 'leaseUntil' });

/** A leased start's condition, with its placeholders. */
export type LeaseFence = BuiltCond;

/** Longest lease: a crashed holder blocks its step for at most this long. */
export const MAX_STEP_LEASE_TTL_MS = 60_000;

/**
 * The lease ttl for copies hidden for `visibilitySeconds`: half the visibility, at most 60 s, so
 * an abandoned delivery's lease has expired before SQS shows its copy again.
 */
export function stepLeaseTtlMs(visibilitySeconds: number): number {
  return Math.max(1000, Math.min((visibilitySeconds * 1000) / 2, MAX_STEP_LEASE_TTL_MS));
}

/** The lease of the delivery this call runs in, if any. */
export function currentStepLease(): StepLease | undefined {
  return currentDelivery()?.stepLease;
}

const refKey = (runId: string, stepId: string) => `${runId}\u0000${stepId}`;

/** The step now holds `lease`: keep it alive while the delivery runs. */
export function noteStarted(lease: StepLease | undefined, runId: string, stepId: string): void {
  lease?.started.set(refKey(runId, stepId), { runId, stepId });
}

/** The step ended (or left this delivery's hands): no more heartbeats for it. */
export function noteFinished(runId: string, stepId: string): void {
  currentStepLease()?.started.delete(refKey(runId, stepId));
}

/**
 * Refuse a start while another delivery's lease is live (the decision on the read; the write's
 * {@link leaseFence} enforces the same on the stored item).
 */
export function assertNoForeignLease(
  lease: StepLease,
  s: { stepId: string; leaseToken?: string; leaseUntil?: number },
  nowMs: number,
): void {
  if (s.leaseUntil === undefined || s.leaseUntil < nowMs || s.leaseToken === lease.token) return;
  throw new TooEarlyError(`Step "${s.stepId}" is running in another delivery (its lease is live)`, {
    retryAfter: Math.max(1, Math.ceil((s.leaseUntil - nowMs) / 1000)),
  });
}

/** The condition a leased start adds to its `ver` guard: no live lease of another delivery. */
export function leaseFence(lease: StepLease, nowMs: number): LeaseFence {
  return leases.fence(lease.token, nowMs);
}

/**
 * A conditional update of a step this delivery leased: applied only while the step still carries
 * the delivery's token. False when it does not (finished, released, or taken over after expiry).
 */
function updateIfHeld(
  ctx: Pick<StorageCtx, 'ddb' | 'table'>,
  ref: { runId: string; stepId: string },
  token: string,
  change: Change,
): Promise<boolean> {
  return leases.transition(ctx, keys.step(ref.runId, ref.stepId), token, change);
}

/**
 * One heartbeat: push the lease of every step in `lease.started` to `now + ttlMs`. A step whose
 * lease is no longer this delivery's (finished, released, or taken over after expiry) is dropped
 * from the set. Returns the ids of the steps whose lease was lost.
 */
export async function extendStepLeases(ctx: Pick<StorageCtx, 'ddb' | 'table'>, lease: StepLease): Promise<string[]> {
  const lost: string[] = [];
  await Promise.all(
    [...lease.started].map(async ([k, ref]) => {
      if (await updateIfHeld(ctx, ref, lease.token, { set: { leaseUntil: Date.now() + lease.ttlMs } })) return;
      lease.started.delete(k);
      lost.push(ref.stepId);
    }),
  );
  return lost;
}

/**
 * Drop the leases of the steps this delivery started and did not finish (its handler failed or
 * returned early), so a redelivery need not wait for them to expire. Another delivery's lease is
 * left alone.
 */
export async function releaseStepLeases(ctx: Pick<StorageCtx, 'ddb' | 'table'>, lease: StepLease): Promise<void> {
  const refs = [...lease.started.values()];
  lease.started.clear();
  await Promise.all(refs.map((ref) => updateIfHeld(ctx, ref, lease.token, { remove: ['leaseToken', 'leaseUntil'] })));
}
