/**
 * The events of one correlation (a step, hook or wait) within a run.
 *
 * A read finds the slot of the correlation's first event and reads the rest from the run's log
 * (strongly consistent), filtered by correlation id: nothing before the first event can belong to
 * the correlation. Where the first slot is found:
 * - a step: its step item records the slot of its `step_created` (`firstSlot`, written in the same
 *   transaction), so a step costs no index write at all;
 * - a hook or wait: only its first event (`hook_created`, `hook_conflict`, `wait_created`) carries
 *   the correlation index key (GSI1), so it costs one index write however many events it has; so
 *   does the `step_created` of a step written before `firstSlot` was recorded.
 * A correlation with neither (e.g. an `attr_set` id) is read from the start of the log.
 *
 * Pair items (../records/event.ts): a step's lazy start stores its `step_created` and
 * `step_started` as one item at `firstSlot`, so the read starts at that item; a correlation's first
 * event is never a pair's second half (a pair opens no correlation, and a step's first slot is its
 * pair's key). The index filter matches an item when either of its events belongs to the
 * correlation, and each event is then checked on its own.
 */
import { readInput, when } from '../../aws/expression.js';
import { ATTR, GSI1, keys } from '../../schema/keys.js';
import { type EventRecord, eventsOf, PAIR_ATTR } from '../records/event.js';
import { num } from '../table/codec.js';
import { getItem, queryOnce, queryPage } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { EVT_END } from './log-tail.js';

/** The slot of the correlation's first event (1 when none is recorded or indexed). */
async function firstSlot(ctx: StorageCtx, runId: string, correlationId: string): Promise<number> {
  // Core's step ids are `step_<ulid>`; any other id that names a step is still found below (the
  // index of an older step) or by reading the log from its start.
  if (correlationId.startsWith('step_')) {
    const recorded = num((await getItem(ctx, keys.step(runId, correlationId))) ?? {}, 'fs');
    if (recorded !== undefined) return recorded;
  }
  const [indexed] = await queryOnce(ctx, {
    IndexName: GSI1,
    ...readInput({ key: [when.is(ATTR.gsi1pk, keys.corrGsi(runId, correlationId))] }),
    Limit: 1,
  });
  const sk = indexed?.[ATTR.gsi1sk]?.S;
  return sk ? keys.slotFromEventSk(sk) : 1;
}

export interface CorrelationQuery {
  runId: string;
  correlationId: string;
  /** Exclusive slot bound: after it (ascending) or before it (descending). */
  after?: number;
  ascending: boolean;
  limit: number;
  /** Only events of this type. */
  eventType?: string;
}

/** Up to `limit + 1` events of the correlation, in the read's order (the extra one only tells `hasMore`). */
export async function correlationEvents(ctx: StorageCtx, q: CorrelationQuery): Promise<EventRecord[]> {
  const first = await firstSlot(ctx, q.runId, q.correlationId);
  let lo = keys.eventSk(first);
  let hi = EVT_END;
  // From the bound's own item, inclusive (the bound may be a pair's first half); see events.ts.
  if (q.after !== undefined && q.ascending) lo = keys.eventSk(Math.max(first, q.after));
  if (q.after !== undefined && !q.ascending) {
    if (q.after - 1 < first) return [];
    hi = keys.eventSk(q.after - 1);
  }
  // The event is an item's own (`cid`, `t`) or its pair's second (`e2.cid`, `e2.t`).
  const matches = (at: string[]) =>
    when.all(
      when.is([...at, 'cid'], q.correlationId),
      ...(q.eventType === undefined ? [] : [when.is([...at, 't'], q.eventType)]),
    );
  const items = await queryPage(
    ctx,
    {
      ...readInput({
        key: [when.is('PK', keys.runPk(q.runId)), when.between('SK', lo, hi)],
        filter: [when.any(matches([]), matches([PAIR_ATTR]))],
      }),
      ScanIndexForward: q.ascending,
      ConsistentRead: true,
    },
    // One more: an ascending read's first item may hold only events at or below the bound.
    q.limit + 1,
  );
  const bounds = q.after === undefined ? {} : q.ascending ? { after: q.after } : { before: q.after };
  return eventsOf(items, bounds, !q.ascending).filter(
    (e) => e.correlationId === q.correlationId && (q.eventType === undefined || e.eventType === q.eventType),
  );
}
