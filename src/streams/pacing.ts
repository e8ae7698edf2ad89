/**
 * Burst pacing for core's stream writer (the write session behind `getWritable()`).
 *
 * Core sends a stream's chunks one group at a time: it awaits each World write before sending what
 * accumulated meanwhile as the next group. So the World widens the groups by taking longer to
 * acknowledge, never by holding data back: a write is put at once (and published to this process's
 * readers as soon as it is committed), and only its acknowledgement is released no earlier than
 * `windowMs` after the write arrived, while the writer is in a burst. The chunks that arrive
 * meanwhile wait in core's buffer and go out together as the next group, one PutItem.
 *
 *  - A write after quiet (no write in the last 2 x windowMs) is acknowledged as soon as it is
 *    durable: a lone chunk, or the first chunk of a burst, pays only its own PutItem.
 *  - So is the second write of a burst: a short reply (a few chunks written at once: the first goes
 *    out alone, the rest as one group) is durable, and its step can complete, without waiting for a
 *    window. Pacing starts with a burst's third write, the first that shows the writer is streaming
 *    (a token-rate stream pays one more PutItem per burst).
 *  - In a burst, the writer sends at most one group per `windowMs`: at most 1000 / windowMs
 *    PutItems per second per stream, whatever the token rate; a chunk waits at most `windowMs` in
 *    core's buffer (plus the PutItem in flight).
 *  - Durability is unchanged: an acknowledgement is never released before the put committed, so
 *    core's drain() ("step completed implies stream durable") still holds; it just ends up to
 *    `windowMs` later for a writer that was mid-burst.
 *
 * Pure bookkeeping over a caller-supplied clock, so it is unit-tested without timers.
 */
export class BurstPacer {
  /** Arrival time of the previous write (ms, caller's clock). */
  private previous = Number.NEGATIVE_INFINITY;
  /** Writes in the current burst, this one included. */
  private inBurst = 0;

  constructor(private readonly windowMs: number) {}

  /** Writes of a burst acknowledged as soon as they are durable. */
  static readonly UNPACED_WRITES = 2;

  /**
   * A write arrived at `now`: returns the earliest time its acknowledgement may be released
   * (`now` itself when the writer was quiet, early in a burst, or pacing is off).
   */
  arrive(now: number): number {
    const burst = this.windowMs > 0 && now - this.previous < 2 * this.windowMs;
    this.previous = now;
    this.inBurst = burst ? this.inBurst + 1 : 1;
    return this.inBurst > BurstPacer.UNPACED_WRITES ? now + this.windowMs : now;
  }
}
