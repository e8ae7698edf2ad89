/**
 * What a delivery concluded, as data: the {@link Verdict} decode, decide and dispatch hand to
 * settle, and the {@link DeliveryOutcome} settle hands to the caller. Both carry a structured
 * reason (`kind`, `reason`, `cause`, `of`): the settle policy and the metrics
 * (./delivery-telemetry.ts) read these fields, never the `detail` text, which is for log lines.
 */
import type { AffinityHoldCause } from './affinity.js';

/**
 * Why a copy was held, undispatched: a copy of it runs in this process (`copy-running`), or it
 * belongs to another deployment (./affinity.ts).
 */
export type HoldCause = 'copy-running' | AffinityHoldCause;

/** Why a message is poison (its own fault): it counts toward the DLQ. */
export type PoisonReason = 'malformed' | 'unauthorized' | 'failed';

/** Why a copy met an outage (not its fault): it is parked, never dead-lettered. */
export type OutageReason = 'transport' | 'unavailable';

/** What decode, decide or dispatch concluded; settle (./settle.ts) turns it into SQS calls. */
export type Verdict =
  | { kind: 'ack' }
  | { kind: 'hop'; delaySeconds: number; deliverAt: number }
  | { kind: 'later'; seconds: number }
  /** Hide the copy for `seconds`, undispatched (see {@link HoldCause}). */
  | { kind: 'hold'; seconds: number; detail: string; cause: HoldCause }
  | { kind: 'paused' }
  | {
      kind: 'poison';
      reason: PoisonReason;
      detail: string;
      /** Found before the breaker was asked (decode, build): this copy holds no probe slot. */
      early?: true;
    }
  | {
      kind: 'outage';
      reason: OutageReason;
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

/**
 * What became of a received copy. `delete`: the caller deletes it (acked, or replaced by a copy SQS
 * accepted: `held` and `parked` are replacements of a copy that was not dispatched, `retried` one
 * of a failed dispatch counting it, `dead-lettered` a copy moved to the DLQ after the limit).
 * `keep`: it stays, hidden for the retry.
 */
export type DeliveryOutcome =
  | {
      action: 'delete';
      reason: 'ack' | 'rescheduled' | 'redelayed' | 'parked' | 'held' | 'retried' | 'dead-lettered';
      messageId?: string;
      /** `retried`, `dead-lettered`: the message's failure. */
      failure?: PoisonReason;
      hold?: HoldCause;
      detail?: string;
    }
  | {
      action: 'keep';
      reason: 'deferred' | PoisonReason | OutageReason | 'released';
      messageId?: string;
      detail?: string;
      hold?: HoldCause;
    };
