/**
 * The early-delivery registry: the in-memory verdicts of this process's early deliveries, each
 * waiting for the SQS copy of its message (docs/design.md, "Early delivery").
 *
 * An early delivery is dispatched under its own message id E, which no SQS copy or schedule ever
 * carries; its copy M is an ordinary message whose offset counts E (src/queue/index.ts). Nothing
 * here is written anywhere or read by another process: a copy received elsewhere never asks.
 *
 * Invariants:
 * - A copy received here while its early delivery runs waits for E's promise (no clock), and is
 *   then settled by its verdict (./offer.ts says how: ack, `timeoutSeconds`, or dispatched as E).
 * - Each verdict is taken at most once: a second copy of the message (SQS delivered it twice) is
 *   delivered as usual, as M.
 * - An entry whose delivery still runs is never dropped (there are at most as many as the
 *   consumer's slots). A settled verdict waits for its copy at most {@link EARLY_RETAIN_MS} from
 *   when it came, and at most {@link EARLY_MAX_ENTRIES} are kept (oldest dropped first): a copy
 *   received later is delivered as M, one more invocation of the run, which core handles as any
 *   concurrent one.
 */

/** How long a verdict waits for the SQS copy of its message (ms). */
export const EARLY_RETAIN_MS = 5 * 60_000;
/** Most verdicts kept at once. */
export const EARLY_MAX_ENTRIES = 10_000;

interface Entry<V> {
  earlyId: string;
  verdict: Promise<V | undefined>;
  /** When it was begun while pending; when its verdict came once settled. */
  at: number;
  pending: boolean;
}

/** What a copy takes from the registry: the early delivery's own id and its verdict. */
export interface EarlyTaken<V> {
  earlyId: string;
  /** `undefined` (or a rejection, read as undefined): the early delivery never reached the handler. */
  verdict: Promise<V | undefined>;
}

/**
 * The verdicts of early deliveries (`V`: the pipeline's verdict), keyed by the id of the SQS copy
 * (M) they wait for. Retention and the size cap count from the verdict.
 */
export class EarlyDeliveries<V> {
  /** Settled entries are (re)inserted when they settle: among them, insertion order is age order. */
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly retainMs = EARLY_RETAIN_MS,
    private readonly maxEntries = EARLY_MAX_ENTRIES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Records the early delivery `earlyId` of the message whose copy is `copyId`. */
  begin(copyId: string, earlyId: string, verdict: Promise<V | undefined>): void {
    this.prune();
    this.entries.delete(copyId);
    const settled = verdict.catch(() => undefined);
    const entry: Entry<V> = { earlyId, verdict: settled, at: this.now(), pending: true };
    this.entries.set(copyId, entry);
    void settled.then(() => {
      // Still waiting for its copy: it now ages from its verdict.
      if (this.entries.get(copyId) !== entry) return;
      this.entries.delete(copyId);
      this.entries.set(copyId, { ...entry, at: this.now(), pending: false });
      this.prune();
    });
  }

  /** Whether a verdict waits for a copy of `copyId`. */
  has(copyId: string): boolean {
    return this.entries.has(copyId);
  }

  /** When the newest entry still waiting for its copy was begun or settled (caller's clock), if any. */
  newestAt(): number | undefined {
    let at: number | undefined;
    for (const entry of this.entries.values()) at = at === undefined ? entry.at : Math.max(at, entry.at);
    return at;
  }

  /** The early delivery of a received copy of `copyId`, once; undefined when there is none. */
  take(copyId: string): EarlyTaken<V> | undefined {
    const entry = this.entries.get(copyId);
    if (!entry) return undefined;
    this.entries.delete(copyId);
    if (!entry.pending && this.now() - entry.at > this.retainMs) return undefined;
    return { earlyId: entry.earlyId, verdict: entry.verdict };
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
