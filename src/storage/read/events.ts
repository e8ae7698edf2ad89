/** `events.*` reads: get by slot id, list, and listByCorrelationId (see `correlation.ts`). */
import type {
  Event,
  GetEventParams,
  ListEventsByCorrelationIdParams,
  ListEventsParams,
  PaginatedResponse,
  ResolveData,
} from '@workflow/world';
import { eventIdToSlot, getMaxEventsPerRun } from '@workflow/world';
import { readInput, when } from '../../aws/expression.js';
import { currentDelivery, noteReadTail } from '../../context/delivery-scope.js';
import { keys } from '../../schema/keys.js';
import type { SlotHints } from '../memory/slot-hints.js';
import { cursorAt, type EventRecord, eventsOf, toEvent } from '../records/event.js';
import { decodeEventCursor, MAX_LIMIT, pageLimit } from '../table/pagination.js';
import { queryPage } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { assertId, invalidArgument, notFound } from '../table/world-errors.js';
import { correlationEvents } from './correlation.js';
import { EVT_END, EVT_START, eventAt } from './log-tail.js';

/** A list request's pagination, order, exclusive slot bound and page size. */
function pageOf(pagination: ListEventsParams['pagination']) {
  const p = pagination ?? {};
  // An empty cursor means "from the start" (the `wf` CLI passes '' when no --cursor is given).
  const after = p.cursor ? decodeEventCursor(p.cursor).slot : undefined;
  const limit = pageLimit(p.limit, getMaxEventsPerRun(), Math.max(getMaxEventsPerRun(), MAX_LIMIT));
  return { p, asc: p.sortOrder !== 'desc', after, limit };
}

export function createEventReads(ctx: StorageCtx, hints: SlotHints) {
  async function get(runId: string, eventId: string, params?: GetEventParams): Promise<Event> {
    assertId('runId', runId);
    const slot = typeof eventId === 'string' ? eventIdToSlot(eventId) : null;
    if (slot === null) throw invalidArgument('eventId', `Invalid event id "${String(eventId).slice(0, 60)}"`);
    const ev = await eventAt(ctx, runId, slot);
    if (!ev) throw notFound(`Event ${eventId} in run ${runId} not found`);
    return toEvent(ctx, ev, params?.resolveData ?? 'all');
  }

  /**
   * Ascending by default; no `limit` means every remaining event (capped at the per-run maximum).
   * The returned cursor is the last event's slot even on the final page, so an incremental reader
   * can resume from it.
   */
  async function list(params: ListEventsParams): Promise<PaginatedResponse<Event>> {
    assertId('runId', params.runId);
    const { p, asc, after, limit } = pageOf(params.pagination);
    const remembered = asc ? fromMemory(params.runId, after ?? 0, limit) : undefined;
    if (remembered) return eventPage(noteRead(remembered, limit), limit, p.cursor, params.resolveData);
    // Ascending from the cursor's own item (a pair's first half may be the bound), descending
    // from the item before it (a pair there may hold the bound itself); eventsOf drops the bound.
    const [lo, hi] = asc
      ? [after === undefined ? EVT_START : keys.eventSk(after), EVT_END]
      : [EVT_START, after === undefined ? EVT_END : after <= 1 ? `${EVT_START}0` : keys.eventSk(after - 1)];
    const items = await queryPage(
      ctx,
      {
        ...readInput({ key: [when.is('PK', keys.runPk(params.runId)), when.between('SK', lo, hi)] }),
        ScanIndexForward: asc,
        ConsistentRead: true,
      },
      // One item more than the page: an ascending read's first item may lie wholly at the bound.
      limit + 1,
    );
    const recs = asc ? eventsOf(items, { after }) : eventsOf(items, { before: after }, true);
    // A page read from the start of the log, or from a slot whose predecessors are remembered,
    // extends what this process can answer from memory.
    if (asc && recs.length > 0) hints.note(params.runId, Math.max(...recs.map((r) => r.slot)), recs);
    return eventPage(asc ? noteRead(recs, limit) : recs, limit, p.cursor, params.resolveData);
  }

  /**
   * An ascending page's events, noted as read by the current delivery (the liveness backstop's
   * acknowledgement of its turn, src/storage/write/due-moves.ts): the log up to the page's last
   * event.
   */
  function noteRead(recs: EventRecord[], limit: number): EventRecord[] {
    const page = recs.slice(0, limit);
    if (page.length > 0) noteReadTail(page[0].runId, page[page.length - 1].slot);
    return recs;
  }

  /**
   * The page after `after` from this process's memory of the log, or undefined when a read is
   * needed. Only inside a delivery whose message says how far its sender had seen the log, and only
   * once this process has seen at least that far with every event in between remembered.
   *
   * Why that is enough: a slot is claimed only after every lower one exists (../write/commit.ts),
   * so the remembered events 1..tail are the log as it was when slot `tail` committed, a strongly
   * consistent read taken then. The delivery's causes (the sender's writes) are all at or below the
   * message's tail, so such a read shows them; anything committed since is a newer cause of its own
   * message, whose delivery reads at least that far. The log is append-only, so a remembered event
   * is exactly what a Query of its slot returns.
   */
  function fromMemory(runId: string, after: number, limit: number): EventRecord[] | undefined {
    const need = currentDelivery()?.logTails.get(runId);
    if (need === undefined) return undefined;
    const tail = hints.get(runId);
    if (tail === undefined || tail < need) return undefined;
    if (after >= tail) return [];
    // One more than the page when there is one, so the page knows it has more.
    return hints.recent(runId, after, Math.min(tail, after + limit + 1));
  }

  async function listByCorrelationId(params: ListEventsByCorrelationIdParams): Promise<PaginatedResponse<Event>> {
    assertId('runId', params.runId);
    assertId('correlationId', params.correlationId);
    const { p, asc, after, limit } = pageOf(params.pagination);
    const recs = await correlationEvents(ctx, {
      runId: params.runId,
      correlationId: params.correlationId,
      after,
      ascending: asc,
      limit,
    });
    return eventPage(recs, limit, p.cursor, params.resolveData);
  }

  async function eventPage(
    all: EventRecord[],
    limit: number,
    cursorIn: string | undefined,
    resolveData: ResolveData | undefined,
  ) {
    const hasMore = all.length > limit;
    const recs = all.slice(0, limit);
    const data = await Promise.all(recs.map((r) => toEvent(ctx, r, resolveData ?? 'all')));
    const cursor = recs.length > 0 ? cursorAt(recs[recs.length - 1]) : (cursorIn ?? null);
    return { data, cursor, hasMore };
  }

  return { get, list, listByCorrelationId };
}
