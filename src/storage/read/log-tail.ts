/**
 * Reads of a run's log tail, all strongly consistent: the events after a slot, the last slot, one
 * event by slot, and the run view together with the tail in one Query.
 *
 * Invariants relied on: in a run's partition `EVT#<slot:20>` sorts right before `RUN#meta` and
 * nothing sorts between them (see `schema/keys.ts`), and log items tile the log (a pair item at N
 * also covers N + 1, ../records/event.ts). So the range `EVT#<after>` .. `RUN#meta` is exactly "the
 * items covering the slots after `after`, then the run": it starts at `after`'s own item,
 * inclusive, because `after` may be a pair's first half, and the events at or below `after` are
 * dropped. Every tail these reads report is the last slot an item covers, so a writer that tries
 * one above it never lands inside a pair.
 */
import { readInput, when } from '../../aws/expression.js';
import { keys, storageKeys } from '../../schema/keys.js';
import { type EventRecord, eventsOf, LAST_SLOT_PROJECTION, lastSlotOf } from '../records/event.js';
import type { Attrs } from '../table/codec.js';
import { queryAll, queryOnce } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';

export const EVT_START = keys.eventSkPrefix;
export const EVT_END = `${keys.eventSkPrefix}~`;

/** Events with slot > `after`, ascending; the last one is the last slot of its item. */
export async function eventsAfter(ctx: StorageCtx, runId: string, after: number): Promise<EventRecord[]> {
  const items = await queryAll(ctx, {
    ...readInput({ key: [when.is('PK', keys.runPk(runId)), when.between('SK', keys.eventSk(after), EVT_END)] }),
    ConsistentRead: true,
  });
  return eventsOf(items, { after });
}

/** The last committed slot (0 for an empty log): one Query of the last item's key. */
export async function tailSlot(ctx: StorageCtx, runId: string): Promise<number> {
  const [last] = await queryOnce(ctx, {
    ...readInput({
      key: [when.is('PK', keys.runPk(runId)), when.beginsWith('SK', EVT_START)],
      projection: LAST_SLOT_PROJECTION,
    }),
    ScanIndexForward: false,
    Limit: 1,
    ConsistentRead: true,
  });
  return last ? lastSlotOf(last) : 0;
}

/**
 * The event at `slot`, if it exists: its own item, or the second half of the pair at `slot - 1`.
 * One Query of the two keys, backwards, one item.
 */
export async function eventAt(ctx: StorageCtx, runId: string, slot: number): Promise<EventRecord | undefined> {
  const items = await queryOnce(ctx, {
    ...readInput({
      key: [when.is('PK', keys.runPk(runId)), when.between('SK', keys.eventSk(slot - 1), keys.eventSk(slot))],
    }),
    ScanIndexForward: false,
    Limit: 1,
    ConsistentRead: true,
  });
  return eventsOf(items).find((e) => e.slot === slot);
}

export interface RunTail {
  /** The run view item, if the run exists. */
  run?: Attrs;
  /** Events after `after` (only when `after` was given), ascending. */
  events: EventRecord[];
  /** The last slot an item covers, as far as this read saw (never inside a pair). */
  tail: number;
}

/**
 * The run view and the log tail in one Query. Without `after`, a descending `Limit 2` returns the
 * run and the last item. With `after` inside a pair, the tail is the pair's second half even when
 * nothing follows it.
 */
export async function readRunTail(ctx: StorageCtx, runId: string, after?: number): Promise<RunTail> {
  const upToView = (from: string) =>
    readInput({ key: [when.is('PK', keys.runPk(runId)), when.between('SK', from, storageKeys.runMetaSk)] });
  if (after !== undefined) {
    const items = await queryAll(ctx, { ...upToView(keys.eventSk(after)), ConsistentRead: true });
    const run = items.find((i) => i.SK.S === storageKeys.runMetaSk);
    const events = eventsOf(
      items.filter((i) => i.SK.S !== storageKeys.runMetaSk),
      { after },
    );
    return { run, events, tail: events.length > 0 ? events[events.length - 1].slot : after };
  }
  const items = await queryOnce(ctx, {
    ...upToView(EVT_START),
    ScanIndexForward: false,
    Limit: 2,
    ConsistentRead: true,
  });
  const run = items.find((i) => i.SK.S === storageKeys.runMetaSk);
  const last = items.find((i) => i.SK.S !== storageKeys.runMetaSk);
  return { run, events: [], tail: last ? lastSlotOf(last) : 0 };
}
