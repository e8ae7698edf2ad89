/**
 * What this process knows about a run's log: the highest slot known to exist, and the most recent
 * events it committed or read (small ones only). Writers take their deltas from here, a delivery's
 * `events.list` is answered from here when it covers the log (../read/events.ts), and
 * `run_started`'s preload reads only the events after a remembered prefix
 * (../write/run-started.ts).
 *
 * Invariant: a hint is the last slot of a log item committed or read (a pair item's second half,
 * never its first: ../records/event.ts), so it is never above the real tail and never inside a
 * pair; trying `hint + 1` keeps the log's items tiled, and a stale hint costs one lost slot race,
 * not correctness. The log is append-only, so a remembered event is exactly what a read of its slot
 * would return: a writer's delta can come from here. Both events of a pair are remembered, each
 * under its own slot, with the first marked `pairedWithNext` (what a cursor on it must say).
 *
 * Bounded: 1,000 recent events per run (core reads the log in pages of 1,000), 32 KB per event, 16
 * MB in all and 2,000 runs; past those the least recently used runs are forgotten, which costs
 * reads, never correctness.
 */

import { ByteLru } from '../../util/byte-lru.js';
import type { EventRecord } from '../records/event.js';
import { valueSize } from '../table/codec.js';

const RECENT_PER_RUN = 1_000;
const RECENT_MAX_BYTES = 32_768;
const RECENT_EVENTS_BUDGET_BYTES = 16 * 1024 * 1024;

interface RunLog {
  tail: number;
  recent: Map<number, { ev: EventRecord; size: number }>;
  /** Sum of `recent`'s sizes: the run's weight in the byte budget. */
  bytes: number;
}

export class SlotHints {
  private readonly m: ByteLru<string, RunLog>;
  constructor(maxRuns = 2_000) {
    this.m = new ByteLru({ maxBytes: RECENT_EVENTS_BUDGET_BYTES, maxEntries: maxRuns });
  }

  get(runId: string): number | undefined {
    return this.m.get(runId)?.tail;
  }

  note(runId: string, slot: number, events: readonly EventRecord[] = []): void {
    const e = this.m.get(runId) ?? { tail: 0, recent: new Map(), bytes: 0 };
    e.tail = Math.max(e.tail, slot);
    const floor = e.tail - RECENT_PER_RUN;
    for (const ev of events) {
      if (ev.slot <= floor || e.recent.has(ev.slot)) continue;
      const size = valueSize(ev.eventData) + 256;
      if (size > RECENT_MAX_BYTES) continue;
      e.recent.set(ev.slot, { ev, size });
      e.bytes += size;
    }
    if (e.recent.size > RECENT_PER_RUN)
      for (const [k, r] of e.recent) {
        if (k > floor) continue;
        e.recent.delete(k);
        e.bytes -= r.size;
      }
    this.m.set(runId, e, e.bytes); // most recently noted last; past the budgets the oldest runs go
  }

  /** The events of slots `after+1 .. to`, if every one of them is remembered. */
  recent(runId: string, after: number, to: number): EventRecord[] | undefined {
    const e = this.m.get(runId);
    if (!e) return undefined;
    const out: EventRecord[] = [];
    for (let s = after + 1; s <= to; s++) {
      const r = e.recent.get(s);
      if (!r) return undefined;
      out.push(r.ev);
    }
    return out;
  }
}
