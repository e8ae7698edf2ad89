/**
 * What this process has seen of other deliveries' step leases, timed on its own monotonic clock:
 * the evidence a takeover of a step lease rests on (../write/step-lease.ts; the argument:
 * docs/design.md, "Step lease").
 *
 * A lease's mark is what its holder must keep changing while it lives: the token, the heartbeat
 * counter (`leaseBeat`, bumped by every heartbeat of this build) and the lease end (`leaseUntil`,
 * moved by every heartbeat of any build, so an older holder's heartbeat is seen too). A mark never
 * comes back once changed (the counter only grows under one token, and a holder's lease end is its
 * clock plus the ttl, a new value each time), so "this process read the same mark at t0 and a write
 * conditioned on that mark passed at t1" means no heartbeat committed in between.
 *
 * Invariants:
 * - Durations are measured on this process's monotonic clock (`performance.now()`), never by
 *   comparing a clock with a timestamp another process wrote.
 * - `observe` answers for how long this process has seen `mark` unchanged: 0 the first time it sees
 *   it (and whenever it changed), then the time since that first sight. Every sight is of a read
 *   that had returned, so the mark was current no later than the sight (conservative).
 * - Bounded: at most {@link MAX_WATCHED} leases; the least recently observed are forgotten
 *   (forgetting only restarts a watch: slower, never unsafe).
 * - One table per process: whatever observes here (a start, the backstop) is the same observer with
 *   the same clock, so their sights add up.
 */

/** The part of a lease its holder keeps changing. */
export interface LeaseMark {
  token: string;
  beat?: number;
  until?: number;
}

const MAX_WATCHED = 10_000;

export function sameMark(a: LeaseMark, b: LeaseMark): boolean {
  return a.token === b.token && a.beat === b.beat && a.until === b.until;
}

export class LeaseWatch {
  readonly #seen = new Map<string, { mark: LeaseMark; since: number }>();

  constructor(
    private readonly clock: () => number = () => performance.now(),
    private readonly capacity = MAX_WATCHED,
  ) {}

  /** How long (ms, this process's clock) the lease `key` has been seen with `mark` unchanged. */
  observe(key: string, mark: LeaseMark): number {
    const now = this.clock();
    const had = this.#seen.get(key);
    this.#seen.delete(key);
    if (had && sameMark(had.mark, mark)) {
      this.#seen.set(key, had);
      return now - had.since;
    }
    this.#seen.set(key, { mark: { token: mark.token, beat: mark.beat, until: mark.until }, since: now });
    if (this.#seen.size > this.capacity) this.#seen.delete(this.#seen.keys().next().value as string);
    return 0;
  }

  /** The lease `key` ended or changed hands here: nothing to watch. */
  forget(key: string): void {
    this.#seen.delete(key);
  }

  get size(): number {
    return this.#seen.size;
  }
}

/** This process's table (every World in it shares the observer's clock). */
export const leaseWatch = new LeaseWatch();
