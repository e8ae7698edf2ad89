/**
 * The id of a message and the ids of its deliveries (docs/design.md, "Early delivery").
 *
 * `queue()` returns the message's id M (`msg_<ulid>`): every SQS copy and schedule of the message
 * carries it (`eve.id`), as do the DLQ line, `redrive` and a duplicate send of its idempotency key;
 * core uses the returned id only as the `messaging.message.id` of its `queue.publish` span.
 *
 * A delivery is dispatched under M (`x-vqs-message-id`, which core uses as the inline-step owner),
 * except an early delivery (src/consumer/delivery/early/offer.ts): that must carry an id no SQS
 * copy ever carries, E. E is minted from M, `<M>.early.<ulid>`, so wherever E shows (core's log
 * lines and spans, `ownerMessageId` on the `step_started` events it writes, hence `tail`), M is in
 * it, and {@link messageIdOfDelivery} reads it back; the flow route gets M as `x-eve-message-id`
 * too (src/consumer/shared/signing.ts).
 */

const EARLY = '.early.';

/** The id of an early delivery of message `messageId`; `unique` makes it unlike any other (a ULID). */
export function earlyDeliveryId(messageId: string, unique: string): string {
  return `${messageId}${EARLY}${unique}`;
}

/** The id of the message a delivery id belongs to: M for an early delivery's E, else the id itself. */
export function messageIdOfDelivery(deliveryId: string): string;
export function messageIdOfDelivery(deliveryId: string | undefined): string | undefined;
export function messageIdOfDelivery(deliveryId: string | undefined): string | undefined {
  if (deliveryId === undefined) return undefined;
  const at = deliveryId.lastIndexOf(EARLY);
  return at > 0 ? deliveryId.slice(0, at) : deliveryId;
}
