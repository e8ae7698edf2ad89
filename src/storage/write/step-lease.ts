/**
 * The step lease: at most one delivery runs a step body at a time, fenced on the STEP item in the
 * `step_started` transaction that is written anyway (no extra request, no extra item). Why core
 * needs it, its cost, and the safety argument: docs/design.md, "Step lease".
 *
 * Step item fields (an owned record kept on the step item, src/aws/owned-record.ts, which builds
 * every condition): `leaseToken` (the delivery's random token), `leaseBeat` (the heartbeat count: 0
 * at the start, raised by every heartbeat), `leaseTtl` (the holder's ttl, ms), and `leaseUntil`
 * (the holder's clock + ttl, moved by every heartbeat: what builds before 0.2 judge a lease by, so
 * it is still written; this build never compares it with a clock).
 *
 * Invariants:
 * - Every `step_started` inside a delivery scope with a lease (the flow route's) stamps the step
 *   with the scope's token, beat 0, its ttl and `now + ttl`, in its own transaction (lazy create,
 *   bare start of a pending step, start of a running step).
 * - A start inside a scope succeeds only when the step carries no lease, this delivery's own token
 *   (an SDK retry after a lost response, or core's own restart of a step whose lazy claim it lost
 *   to itself), or a lease this process has watched lapse: the same mark (token, beat, end) seen
 *   unchanged for the holder's ttl on this process's monotonic clock (../memory/lease-watch.ts).
 *   Decided on a fresh read (a remembered item's refusal is decided again on one), and enforced by
 *   the write's condition together with `ver` ({@link startFence}: no lease, ours, or exactly the
 *   mark that was watched, so a heartbeat since breaks it). Any other start is refused with
 *   `TooEarlyError`, `retryAfter` = the seconds until this process could decide (the ttl, or what
 *   is left of its watch), which core maps to a retry without running the body.
 * - No clock of another process is compared with anything: a skewed clock changes no decision.
 * - The holder (the flow route) heartbeats every ttl / 3 while core's handler runs, each heartbeat
 *   raising `leaseBeat` to its own larger count and moving `leaseUntil` (UpdateItem conditioned on
 *   the token and on a lower count: counts never go down, however heartbeats overlap), and releases
 *   what is left when the handler settles; both are no-ops on a lease that is no longer the
 *   delivery's.
 * - step_completed / step_failed / step_retrying clear the lease (they rewrite the step item).
 * - The liveness backstop watches the leases of a quiet run's steps the same way and revokes one it
 *   saw lapse, conditioned on the mark ({@link observeStepLeases}), so the wake's replay starts the
 *   step at once.
 * - Outside a scope with a lease, starts are allowed and not stamped.
 * - The ttl is half the consumer's visibility, at most 60 s ({@link stepLeaseTtlMs}).
 *
 * What this lease cannot do (docs/design.md; test/e2e/early-pause-kill.test.ts pins it): stop a
 * body whose holder could not write for a ttl (paused, or every heartbeat stalled). A watcher takes
 * the step over and the body runs a second time; the resumed holder's heartbeat finds its token
 * gone and drops the step. Completion is fenced by `ver`, not by the token: the first completion to
 * commit is the step's result, the other is refused (`EntityConflictError`).
 */
import { TooEarlyError } from '@workflow/errors';
import type { Cond } from '../../aws/expression.js';
import { OwnedRecord } from '../../aws/owned-record.js';
import { sleep } from '../../aws/sleep.js';
import { currentDelivery, type StepLease } from '../../context/delivery-scope.js';
import { keys } from '../../schema/keys.js';
import { type LeaseMark, type LeaseWatch, leaseWatch, sameMark } from '../memory/lease-watch.js';
import type { StorageCtx } from '../table/storage-ctx.js';

/** The lease's fields on the step item. */
const leases = new OwnedRecord('step lease', { owner: 'leaseToken', until: 'leaseUntil', beat: 'leaseBeat' });
const LEASE_FIELDS = ['leaseToken', 'leaseUntil', 'leaseBeat', 'leaseTtl'] as const;

/** Longest lease: a crashed holder blocks its step for at most this long (plus the watch). */
export const MAX_STEP_LEASE_TTL_MS = 60_000;
/** Shortest ttl a holder may claim (a watcher never waits less). */
const MIN_STEP_LEASE_TTL_MS = 1000;

/**
 * The lease ttl for copies hidden for `visibilitySeconds`: half the visibility, at most 60 s, so
 * an abandoned delivery's lease has lapsed soon after SQS shows its copy again.
 */
export function stepLeaseTtlMs(visibilitySeconds: number): number {
  return Math.max(MIN_STEP_LEASE_TTL_MS, Math.min((visibilitySeconds * 1000) / 2, MAX_STEP_LEASE_TTL_MS));
}

export interface LeaseFields {
  runId: string;
  stepId: string;
  leaseToken?: string;
  leaseUntil?: number;
  leaseBeat?: number;
  leaseTtl?: number;
}

/**
 * How long a watcher must see a lease unchanged before it lapses: the ttl its holder wrote (it
 * heartbeats every third of it); a lease without one (an older build's, whose ttl is at most 60 s)
 * the longest ttl.
 */
export function watchPeriodMs(s: Pick<LeaseFields, 'leaseTtl'>): number {
  return s.leaseTtl !== undefined && s.leaseTtl > 0
    ? Math.max(MIN_STEP_LEASE_TTL_MS, s.leaseTtl)
    : MAX_STEP_LEASE_TTL_MS;
}

/** What a step's lease holder keeps changing; undefined when the step has no lease. */
export function leaseMark(s: LeaseFields): LeaseMark | undefined {
  if (s.leaseToken === undefined && s.leaseUntil === undefined) return undefined;
  return { token: s.leaseToken ?? '', beat: s.leaseBeat, until: s.leaseUntil };
}

export function currentStepLease(): StepLease | undefined {
  return currentDelivery()?.stepLease;
}

const refKey = (runId: string, stepId: string) => `${runId}\u0000${stepId}`;

/** The fields a leased start stamps the step with (its token, beat 0, its ttl, its clock's end). */
export function leaseStamp(lease: StepLease | undefined, nowMs: number): Partial<LeaseFields> {
  if (!lease) return { leaseToken: undefined, leaseUntil: undefined, leaseBeat: undefined, leaseTtl: undefined };
  return { leaseToken: lease.token, leaseUntil: nowMs + lease.ttlMs, leaseBeat: 0, leaseTtl: lease.ttlMs };
}

/** The step now holds `lease`: keep it alive while the delivery runs. */
export function noteStarted(lease: StepLease | undefined, runId: string, stepId: string): void {
  if (!lease) return;
  lease.started.set(refKey(runId, stepId), { runId, stepId, beat: 0 });
  leaseWatch.forget(refKey(runId, stepId));
}

/** The step ended (or left this delivery's hands): no more heartbeats for it. */
export function noteFinished(runId: string, stepId: string): void {
  currentStepLease()?.started.delete(refKey(runId, stepId));
  leaseWatch.forget(refKey(runId, stepId));
}

function tooEarly(stepId: string, waitMs: number): TooEarlyError {
  return new TooEarlyError(`Step "${stepId}" is running in another delivery (its lease is live)`, {
    retryAfter: Math.max(1, Math.ceil(waitMs / 1000)),
  });
}

/**
 * A leased start's decision on the step `s` as read (`fresh`: read from the table just now, not
 * remembered): the condition its write adds to its `ver` guard, or `TooEarlyError` while another
 * delivery's lease has not been seen to lapse here (header). A remembered item is never taken as
 * a sight of a lease: its refusal is decided again on a fresh read.
 */
export function startFence(lease: StepLease, s: LeaseFields, fresh: boolean, watch: LeaseWatch = leaseWatch): Cond {
  const mark = leaseMark(s);
  if (!mark || s.leaseToken === lease.token) return leases.fence(lease.token);
  const period = watchPeriodMs(s);
  if (!fresh) throw tooEarly(s.stepId, period);
  const quietMs = watch.observe(refKey(s.runId, s.stepId), mark);
  if (quietMs < period) throw tooEarly(s.stepId, period - quietMs);
  return leases.fence(lease.token, { leaseToken: s.leaseToken, leaseUntil: s.leaseUntil, leaseBeat: s.leaseBeat });
}

/**
 * One heartbeat: raise the heartbeat count of every step in `lease.started` by one and move its end
 * to `now + ttlMs`. Heartbeats may overlap (one may hang in its SDK retries while the next goes
 * out): each takes its own larger count, and the write only ever raises the count
 * (`OwnedRecord.renew`), so a late one changes nothing and no mark a watcher saw comes back. A step
 * whose lease is no longer this delivery's (finished, released, taken over or revoked after a
 * lapse) is dropped from the set. Returns the ids of the steps whose lease was lost.
 */
export async function extendStepLeases(ctx: Pick<StorageCtx, 'ddb' | 'table'>, lease: StepLease): Promise<string[]> {
  const lost: string[] = [];
  await Promise.all(
    [...lease.started].map(async ([k, ref]) => {
      ref.beat = (ref.beat ?? 0) + 1;
      const held = await leases.renew(ctx, keys.step(ref.runId, ref.stepId), lease.token, ref.beat, {
        leaseUntil: Date.now() + lease.ttlMs,
      });
      if (held || lease.started.get(k) !== ref) return;
      lease.started.delete(k);
      lost.push(ref.stepId);
    }),
  );
  return lost;
}

/**
 * Drop the leases of the steps this delivery started and did not finish (its handler failed or
 * returned early), so a redelivery need not wait for them to lapse. Another delivery's lease is
 * left alone.
 */
export async function releaseStepLeases(ctx: Pick<StorageCtx, 'ddb' | 'table'>, lease: StepLease): Promise<void> {
  const refs = [...lease.started.values()];
  lease.started.clear();
  await Promise.all(
    refs.map((ref) => leases.transition(ctx, keys.step(ref.runId, ref.stepId), lease.token, { remove: LEASE_FIELDS })),
  );
}

/** A watch's outcome, with what it is based on (for the log line). */
export interface LeaseWatchReport {
  /** Its holder heartbeated (or the step moved on), or it lapsed and was revoked. */
  verdict: 'live' | 'lapsed';
  /** How long the lease was seen unchanged (ms, the watcher's clock) when the watch ended. */
  quietMs: number;
  /** Reads of the step during the watch. */
  reads: number;
  /** Why a `live` verdict: a heartbeat seen, the lease changed hands or went, the revoke refused, or the store too slow to tell. */
  why?: 'heartbeat' | 'changed' | 'renewed' | 'slow store';
}

/**
 * The liveness backstop's judgement of the leases on `steps` (leased, of one quiet run): each is
 * watched, from this process's earlier sights on, by re-reading it about six times per period,
 * until its holder is seen to heartbeat (or the lease to change in any way: `live`) or its mark has
 * stayed the same for the period. A lapsed lease is then revoked by an update conditioned on that
 * mark, so the replay the backstop sends starts the step at once: `lapsed` when the revoke passed,
 * `live` when the holder renewed it meanwhile.
 *
 * Only time in which the table answered this watcher promptly counts: a read slower than the read
 * interval (the table, or this process, stalled, and a holder's heartbeats may have stalled with
 * it) starts the count again; a watch that cannot finish within three periods ends `live` (the next
 * check looks again). A healthy holder is seen within a third of its ttl plus a read interval.
 */
export async function observeStepLeases(
  ctx: Pick<StorageCtx, 'ddb' | 'table'>,
  steps: readonly LeaseFields[],
  // Tests inject the table of sights, the waits between reads and the watcher's monotonic clock.
  opts: { watch?: LeaseWatch; sleep?: (ms: number) => Promise<void>; clock?: () => number } = {},
): Promise<Map<string, LeaseWatchReport>> {
  const watch = opts.watch ?? leaseWatch;
  const pause = opts.sleep ?? sleep;
  const clock = opts.clock ?? (() => performance.now());
  const reports = new Map<string, LeaseWatchReport>();
  await Promise.all(
    steps.map(async (s) => {
      const mark = leaseMark(s);
      if (!mark) return;
      const period = watchPeriodMs(s);
      const key = refKey(s.runId, s.stepId);
      const interval = Math.min(2000, Math.max(100, Math.floor(period / 6)));
      const giveUpAt = clock() + 3 * period;
      let quietMs = watch.observe(key, mark);
      let reads = 0;
      while (quietMs < period) {
        if (clock() > giveUpAt) {
          reports.set(s.stepId, { verdict: 'live', quietMs, reads, why: 'slow store' });
          return;
        }
        await pause(Math.min(interval, period - quietMs));
        const sent = clock();
        const now = await leases.read(ctx, keys.step(s.runId, s.stepId), { fields: LEASE_FIELDS });
        reads++;
        const seen = now && leaseMark({ runId: s.runId, stepId: s.stepId, ...(now as Partial<LeaseFields>) });
        if (!seen || !sameMark(seen, mark)) {
          if (seen) watch.observe(key, seen);
          const why = seen && seen.token === mark.token ? 'heartbeat' : 'changed';
          reports.set(s.stepId, { verdict: 'live', quietMs, reads, why });
          return;
        }
        if (clock() - sent > interval) watch.forget(key); // a stall: count again from this read
        quietMs = watch.observe(key, mark);
      }
      const held = leases.heldAs({ leaseToken: s.leaseToken, leaseUntil: s.leaseUntil, leaseBeat: s.leaseBeat });
      const revoked = await leases.update(ctx, keys.step(s.runId, s.stepId), { remove: LEASE_FIELDS }, held);
      if (revoked) watch.forget(key);
      reports.set(
        s.stepId,
        revoked ? { verdict: 'lapsed', quietMs, reads } : { verdict: 'live', quietMs, reads, why: 'renewed' },
      );
    }),
  );
  return reports;
}
