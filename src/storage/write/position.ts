/**
 * A writer's position in a run's log: the last slot it knows an item to cover, and (when the caller
 * reports a delta) the events after its snapshot collected so far.
 *
 * Invariant: once `advance` has run, `last` is the last slot of a log item (or 0), never the first
 * half of a pair (../records/event.ts), so a commit that tries `last + 1` keeps the log's items
 * tiled (./commit.ts). Where each source of `last` gets that from:
 * - slot hints (../memory/slot-hints.ts) note only the last slot of items committed or read;
 * - tail reads (../read/log-tail.ts) report the last slot of the last item;
 * - `eventCount` is core's count over complete listings (the highest slot, or the length, of a log
 *   read page by page until `hasMore` is false, plus write deltas), and every listing ends at the
 *   end of the log, so at an item's last slot. It is trusted as it always was (a count above the
 *   tail would leave a hole, so core never sends one);
 * - `sinceCursor` is a cursor this World issued: a cursor on a pair's first half is the half form
 *   (`evc:<N>h`, ../table/pagination.ts), and `advance` moves such a position past the pair's
 *   second half (from memory, or one read) before the first attempt.
 */
import type { CreateEventParams } from '@workflow/world';
import type { SlotHints } from '../memory/slot-hints.js';
import { eventsAfter, tailSlot } from '../read/log-tail.js';
import type { EventRecord } from '../records/event.js';
import { decodeEventCursor } from '../table/pagination.js';
import type { StorageCtx } from '../table/storage-ctx.js';

export interface Position {
  /** Last slot known to be covered by an item; unknown -> hint, else a tail read. */
  last?: number;
  /**
   * `last` is the first half of a pair item (from a half-form cursor): `last + 1` exists and
   * is not yet collected, so `advance` must take it before anything may be tried.
   */
  midPair?: true;
  /** When set, events after `last` are collected into it (bump-and-report / sinceCursor delta). */
  collect?: EventRecord[];
}

/**
 * The writer's snapshot. `sinceCursor` wins (its delta is a superset of the skipped-slot report);
 * `eventCount` is next; neither means the write reports nothing.
 */
export function startPosition(params: CreateEventParams | undefined): Position {
  if (typeof params?.sinceCursor === 'string') {
    const c = decodeEventCursor(params.sinceCursor, 'sinceCursor');
    return c.midPair ? { last: c.slot, midPair: true, collect: [] } : { last: c.slot, collect: [] };
  }
  const n = params?.eventCount;
  if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) return { last: n, collect: [] };
  return {};
}

/**
 * Move a position to the highest slot this process knows of. A collecting position takes the events
 * in between from memory, or reads them (one Query) when they are not all remembered; either way
 * the write's first attempt then targets a slot that is not known to be taken. A position inside a
 * pair always moves: past its second half at least. Callers may resolve it before the commit to
 * overlap it with another read.
 */
export async function advance(ctx: StorageCtx, hints: SlotHints, runId: string, pos: Position): Promise<Position> {
  const hint = hints.get(runId);
  if (pos.last === undefined) return { ...pos, last: hint ?? (await tailSlot(ctx, runId)) };
  const { midPair, ...at } = pos;
  if (hint === undefined || hint <= pos.last) {
    if (!midPair) return pos;
    // The half form says `last + 1` is the pair's second half: the item's last slot.
    if (!at.collect) return { ...at, last: pos.last + 1 };
    const evs = await eventsAfter(ctx, runId, pos.last);
    at.collect.push(...evs);
    return { ...at, last: evs.length > 0 ? evs[evs.length - 1].slot : pos.last + 1 };
  }
  if (!at.collect) return { ...at, last: hint };
  const evs = hints.recent(runId, pos.last, hint) ?? (await eventsAfter(ctx, runId, pos.last));
  at.collect.push(...evs);
  return { ...at, last: evs.length > 0 ? evs[evs.length - 1].slot : pos.last };
}
