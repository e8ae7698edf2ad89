/**
 * `events.*` reads: get by slot id, list (ascending by default; no `limit` = every remaining
 * event, capped at the per-run maximum), and listByCorrelationId (see `correlation.ts`). The returned cursor is the last event's slot even on the final page, so an incremental
 * reader can resume from it.
 */
import type {
  Event,
  GetEventParams,
  ListEventsByCorrelationIdParams,
  ListEventsParams,
  PaginatedResponse,
  ResolveData,
} from '@workflow/world';
import { eventIdToSlot, getMaxEventsPerRun } from '@workflow/world';
import { keys } from '../ddb.js';
import type { Attrs } from './codec.js';
import type { StorageCtx } from './context.js';
import { correlationEvents } from './correlation.js';
import { assertId, invalidArgument, notFound } from './errors.js';
import { EVT_END, EVT_START } from './log-tail.js';
import { decodeEventCursor, encodeEventCursor, MAX_LIMIT, pageLimit } from './pagination.js';
import { parseEvent, toEvent } from './records/event.js';
import type { SlotHints } from './slot-hints.js';
import { getItem, queryPage } from './table-reads.js';

export function createEventReads(ctx: StorageCtx, hints: SlotHints) {
  async function get(runId: string, eventId: string, params?: GetEventParams): Promise<Event> {
    assertId('runId', runId);
    const slot = typeof eventId === 'string' ? eventIdToSlot(eventId) : null;
    if (slot === null) throw invalidArgument('eventId', `Invalid event id "${String(eventId).slice(0, 60)}"`);
    const item = await getItem(ctx, keys.event(runId, slot));
    if (!item) throw notFound(`Event ${eventId} in run ${runId} not found`);
    return toEvent(ctx, parseEvent(item), params?.resolveData ?? 'all');
  }

  /**
   * Ascending by default; no `limit` means every remaining event (capped at the per-run
   * maximum). The returned cursor is the last event's slot even on the final page, so an
   * incremental reader can resume from it.
   */
  async function list(params: ListEventsParams): Promise<PaginatedResponse<Event>> {
    assertId('runId', params.runId);
    const p = params.pagination ?? {};
    const asc = p.sortOrder !== 'desc';
    // An empty cursor means "from the start" (the `wf` CLI passes '' when no --cursor is given).
    const after = p.cursor ? decodeEventCursor(p.cursor) : undefined;
    const limit = pageLimit(p.limit, getMaxEventsPerRun(), Math.max(getMaxEventsPerRun(), MAX_LIMIT));
    const [lo, hi] = asc
      ? [keys.eventSk((after ?? 0) + 1), EVT_END]
      : [EVT_START, after === undefined ? EVT_END : after <= 1 ? `${EVT_START}0` : keys.eventSk(after - 1)];
    const items = await queryPage(
      ctx,
      {
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
        ExpressionAttributeValues: { ':pk': { S: keys.runPk(params.runId) }, ':lo': { S: lo }, ':hi': { S: hi } },
        ScanIndexForward: asc,
        ConsistentRead: true,
      },
      limit,
    );
    return eventPage(items, limit, p.cursor, params.resolveData, (max) => asc && hints.note(params.runId, max));
  }

  async function listByCorrelationId(params: ListEventsByCorrelationIdParams): Promise<PaginatedResponse<Event>> {
    assertId('runId', params.runId);
    assertId('correlationId', params.correlationId);
    const p = params.pagination ?? {};
    const asc = p.sortOrder !== 'desc';
    // An empty cursor means "from the start" (the `wf` CLI passes '' when no --cursor is given).
    const after = p.cursor ? decodeEventCursor(p.cursor) : undefined;
    const limit = pageLimit(p.limit, getMaxEventsPerRun(), Math.max(getMaxEventsPerRun(), MAX_LIMIT));
    const items = await correlationEvents(ctx, {
      runId: params.runId,
      correlationId: params.correlationId,
      after,
      ascending: asc,
      limit,
    });
    return eventPage(items, limit, p.cursor, params.resolveData);
  }

  async function eventPage(
    items: Attrs[],
    limit: number,
    cursorIn: string | undefined,
    rd: ResolveData | undefined,
    note?: (max: number) => unknown,
  ) {
    const hasMore = items.length > limit;
    const recs = items.slice(0, limit).map(parseEvent);
    if (recs.length > 0) note?.(Math.max(...recs.map((r) => r.slot)));
    const data = await Promise.all(recs.map((r) => toEvent(ctx, r, rd ?? 'all')));
    const cursor = recs.length > 0 ? encodeEventCursor(recs[recs.length - 1].slot) : (cursorIn ?? null);
    return { data, cursor, hasMore };
  }

  return { get, list, listByCorrelationId };
}
