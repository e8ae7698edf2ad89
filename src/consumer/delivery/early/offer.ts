/**
 * Whether a message this World is sending is delivered early: the one place this is decided
 * (docs/design.md, "Early delivery"). The queue offers every send (src/queue/index.ts); the offer
 * is taken when all of these hold:
 * - early delivery is on (`earlyDelivery`, default true) where the in-process consumer polls;
 * - the send has no delay;
 * - it is not a step execution (a payload with `stepId`): core publishes those together with its
 *   own `step_created` write, which an early delivery would race on every step;
 * - a handler is registered in this process for its queue;
 * - the poller runs and has a free slot.
 *
 * A taken offer is dispatched at once under its own id (`earlyId`, minted from the copy's id:
 * src/queue/delivery-id.ts), never carried by any SQS copy; the queue then sends the copy with an
 * offset that counts it (src/queue/index.ts). The flow route gets the copy's id, the one `queue()`
 * returned, as `x-eve-message-id`; the delivery's span links to the sender's.
 */
import type { QueuePayload } from '@workflow/world';
import type { Envelope } from '../../../queue/encoding.js';

/**
 * Offered each message the World's queue is about to send: true when it was delivered early as
 * `earlyId` (the copy `copy` will take its verdict in this process). `producer`: the `traceparent`
 * of the span the send runs in, which the early delivery's span links to. Never throws nor waits.
 */
export type EarlyOffer = (
  copy: Envelope,
  earlyId: string,
  payload: QueuePayload,
  delaySeconds?: number,
  producer?: string,
) => boolean;

/** Whether a World with these options delivers early at all (the poll mode, unless turned off). */
export function earlyOn(earlyDelivery: boolean | undefined, mode: 'poll' | 'none'): boolean {
  return earlyDelivery !== false && mode === 'poll';
}

export interface EarlyOfferDeps {
  enabled: boolean;
  /** Whether a handler for `queueName` is registered in this process. */
  hasHandler(queueName: string): boolean;
  /** The running poller, if any: whether it has a free slot, and how it starts an early delivery. */
  poller():
    | {
        readonly running: boolean;
        hasFreeSlot(): boolean;
        deliverEarly(copy: Envelope, earlyId: string, producer?: string): void;
      }
    | undefined;
}

export function createEarlyOffer(deps: EarlyOfferDeps): EarlyOffer {
  return (copy, earlyId, payload, delaySeconds, producer) => {
    if (!deps.enabled || (delaySeconds !== undefined && delaySeconds > 0)) return false;
    if (typeof (payload as { stepId?: unknown }).stepId === 'string') return false;
    if (!deps.hasHandler(copy.queueName)) return false;
    const poller = deps.poller();
    if (!poller?.running || !poller.hasFreeSlot()) return false;
    poller.deliverEarly(copy, earlyId, producer);
    return true;
  };
}
