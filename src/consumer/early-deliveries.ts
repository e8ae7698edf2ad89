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
 *   verdict: an ack deletes the copy, a `timeoutSeconds` replaces it by a copy delayed that long,
 *   a failure by one delayed for the failure backoff. The early delivery is the copy's first
 *   attempt (the copy's offset counts it, ../queue/index.ts), so settling by it raises no count
 *   (./pipeline.ts). An early delivery that never reached the handler (its request could not be
 *   built, or it was aborted) leaves the copy to be delivered as usual.
 * - A verdict waits for its copy at most {@link EARLY_RETAIN_MS} from when it came, and at most
 *   {@link EARLY_MAX_ENTRIES} verdicts are kept (oldest dropped first): a copy received later
 *   than that is delivered once more, which is safe as above. An early delivery still running is
 *   never dropped: its copy, wherever it is, must not be dispatched beside it.
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
  /** When it was begun while pending; when its verdict came once settled. */
  at: number;
  pending: boolean;
}

/**
 * The verdicts of early deliveries (`V`: the pipeline's verdict), each waiting for the SQS copy of
 * its message. A verdict of `undefined` (or a rejected one) means the early delivery never reached
 * the handler: the copy is delivered as usual. An entry whose delivery still runs is never dropped
 * (there are at most as many as the consumer's slots); retention and the size cap count from the
 * verdict.
 */
export class EarlyDeliveries<V> {
  /** Settled entries are (re)inserted when they settle: among them, insertion order is age order. */
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
    const entry: Entry<V> = { verdict: settled, at: this.now(), pending: true };
    this.entries.set(messageId, entry);
    void settled.then(() => {
      // Still waiting for its copy: it now ages from its verdict.
      if (this.entries.get(messageId) !== entry) return;
      this.entries.delete(messageId);
      this.entries.set(messageId, { ...entry, at: this.now(), pending: false });
      this.prune();
    });
  }

  /** Whether a verdict waits for a copy of `messageId`. */
  has(messageId: string): boolean {
    return this.entries.has(messageId);
  }

  /** When the newest entry still waiting for its copy was begun or settled (caller's clock), if any. */
  newestAt(): number | undefined {
    let at: number | undefined;
    for (const entry of this.entries.values()) at = at === undefined ? entry.at : Math.max(at, entry.at);
    return at;
  }

  /** The early verdict for a received copy of `messageId`, once; undefined when there is none. */
  take(messageId: string): Promise<V | undefined> | undefined {
    const entry = this.entries.get(messageId);
    if (!entry) return undefined;
    this.entries.delete(messageId);
    return !entry.pending && this.now() - entry.at > this.retainMs ? undefined : entry.verdict;
  }

  /** Drops settled entries past retention, then the oldest settled ones over the size cap. */
  private prune(): void {
    const cutoff = this.now() - this.retainMs;
    let settled = 0;
    for (const [id, entry] of this.entries) {
      if (entry.pending) continue;
      if (entry.at < cutoff) this.entries.delete(id);
      else settled++;
    }
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries || settled === 0) break;
      if (entry.pending) continue;
      this.entries.delete(id);
      settled--;
    }
  }
}
