/**
 * Early delivery: a message sent by this process to a queue whose flow route is a handler
 * registered in this same process is delivered at once, beside its send, instead of after the SQS
 * round trip (send, then the long poll). A hook resume in `eve start` (or any process that runs
 * the in-process consumer) then wakes its run without waiting for the queue: the idempotency
 * claim, the SendMessage and the receive leave the turn's critical path.
 *
 * The SQS copy is still sent, exactly as before (claim, send, mark: ../queue/idempotency.ts), and
 * stays the durable record of the message. This registry hands the early delivery's verdict to
 * that copy when it is received here.
 *
 * Invariants:
 * - The queue's semantics do not change: the claim, the send and what `queue()` returns are as
 *   before, and an early delivery is one more delivery of a message `queue()` was asked to send.
 *   Deliveries are at-least-once anyway (core replays deterministically, and the step lease keeps
 *   a second copy from running a step body another delivery runs), so the cases where it is extra
 *   leave a replay, never a lost or a wrong step: a send that fails after it started, a key that
 *   another process sent first (a key's first send from this process is delivered beside its
 *   claim; a key this process sent before only after a successful claim, ../queue/index.ts).
 * - A copy received here while its early delivery runs waits for it, and is then settled by its
 *   verdict as if the copy itself had been dispatched and got it: an ack deletes the copy, a
 *   `timeoutSeconds` defers it, a failure hides it for the failure backoff (so the early delivery
 *   is the copy's first attempt, counted toward the DLQ as one receive). An early delivery that
 *   never reached the handler (its request could not be built, or it was aborted) leaves the copy
 *   to be delivered as usual.
 * - A verdict waits for its copy at most {@link EARLY_RETAIN_MS} and at most
 *   {@link EARLY_MAX_ENTRIES} verdicts are kept (oldest dropped first): a copy received later
 *   than that is delivered once more, which is safe as above.
 * - A copy received by another consumer is never dispatched there while this delivery may run:
 *   it carries this registry's {@link EarlyDeliveries.owner} and is held, and settled by what
 *   this process records about the delivery (./early-records.ts).
 * - Each verdict is taken at most once: a second copy of the message (SQS delivered it twice) is
 *   delivered as usual.
 */

import { randomUUID } from 'node:crypto';

/** How long a verdict waits for the SQS copy of its message (ms). */
export const EARLY_RETAIN_MS = 5 * 60_000;
/** Most verdicts kept at once. */
export const EARLY_MAX_ENTRIES = 10_000;

interface Entry<V> {
  verdict: Promise<V | undefined>;
  at: number;
}

/**
 * The verdicts of early deliveries (`V`: the pipeline's verdict), each waiting for the SQS copy of
 * its message. A verdict of `undefined` (or a rejected one) means the early delivery never reached
 * the handler: the copy is delivered as usual.
 */
export class EarlyDeliveries<V> {
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    /** This consumer's id in the marks of its copies (./early-records.ts): one per registry. */
    readonly owner: string = randomUUID(),
    private readonly now: () => number = Date.now,
    private readonly retainMs = EARLY_RETAIN_MS,
    private readonly maxEntries = EARLY_MAX_ENTRIES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Records the early delivery of logical message `messageId`; its copy will take `verdict`. */
  begin(messageId: string, verdict: Promise<V | undefined>): void {
    this.prune();
    this.entries.delete(messageId);
    // A rejection means the same as undefined: the copy is delivered as usual.
    const settled = verdict.catch(() => undefined);
    this.entries.set(messageId, { verdict: settled, at: this.now() });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /** Whether a verdict waits for a copy of `messageId`. */
  has(messageId: string): boolean {
    return this.entries.has(messageId);
  }

  /** When the newest verdict still waiting for its copy was begun (caller's clock), if any. */
  newestAt(): number | undefined {
    let at: number | undefined;
    for (const entry of this.entries.values()) at = entry.at;
    return at;
  }

  /** The early verdict for a received copy of `messageId`, once; undefined when there is none. */
  take(messageId: string): Promise<V | undefined> | undefined {
    const entry = this.entries.get(messageId);
    if (!entry) return undefined;
    this.entries.delete(messageId);
    return this.now() - entry.at > this.retainMs ? undefined : entry.verdict;
  }

  private prune(): void {
    const cutoff = this.now() - this.retainMs;
    for (const [id, entry] of this.entries) {
      if (entry.at >= cutoff) break;
      this.entries.delete(id);
    }
  }
}
