/**
 * A writer's position in a run's log: the highest slot it knows to exist, and (when the caller
 * reports a delta) the events after its snapshot collected so far.
 *
 * Invariant: `last` is always a slot known to exist (from the writer's `eventCount`/cursor, a read
 * of the tail, or a slot this process saw committed), so a commit that tries `last + 1` keeps the
 * log dense.
 */
import type { CreateEventParams } from '@workflow/world';
import type { SlotHints } from '../memory/slot-hints.js';
import { eventsAfter, tailSlot } from '../read/log-tail.js';
import type { EventRecord } from '../records/event.js';
import type { StorageCtx } from '../table/context.js';
import { decodeEventCursor } from '../table/pagination.js';

export interface Position {
  /** Highest slot known to exist; unknown -> hint, else a tail read. */
  last?: number;
  /** When set, events after `last` are collected into it (bump-and-report / sinceCursor delta). */
  collect?: EventRecord[];
}

/**
 * The writer's snapshot. `sinceCursor` wins (its delta is a superset of the skipped-slot report);
 * `eventCount` is next; neither means the write reports nothing.
 */
export function startPosition(params: CreateEventParams | undefined): Position {
  if (typeof params?.sinceCursor === 'string')
    return { last: decodeEventCursor(params.sinceCursor, 'sinceCursor'), collect: [] };
  const n = params?.eventCount;
  if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) return { last: n, collect: [] };
  return {};
}

/**
 * Move a position to the highest slot this process knows of. A collecting position takes the
 * events in between from memory, or reads them (one Query) when they are not all remembered;
 * either way the write's first attempt then targets a slot that is not known to be taken.
 * Callers may resolve it before the commit to overlap it with another read.
 */
export async function advance(ctx: StorageCtx, hints: SlotHints, runId: string, pos: Position): Promise<Position> {
  const hint = hints.get(runId);
  if (pos.last === undefined) return { ...pos, last: hint ?? (await tailSlot(ctx, runId)) };
  if (hint === undefined || hint <= pos.last) return pos;
  if (!pos.collect) return { ...pos, last: hint };
  const evs = hints.recent(runId, pos.last, hint) ?? (await eventsAfter(ctx, runId, pos.last));
  pos.collect.push(...evs);
  return { ...pos, last: evs.length > 0 ? evs[evs.length - 1].slot : pos.last };
}
