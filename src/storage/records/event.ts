/**
 * The log item `RUN#<runId> / EVT#<slot>` <-> `EventRecord` <-> the contract's `Event`.
 *
 * Event data is kept opaque: whatever fields a core sends are stored and returned unchanged
 * (unknown top-level request fields ride in `extra`), with large fields replaced by S3 pointers.
 * `toEvent` strips ref fields for `'none'` (never reading S3) and follows pointers otherwise.
 *
 * **Pair items.** A log item holds one event, or two: a *pair* item at `EVT#<N>` holds the event at
 * slot N in its top-level attributes and the event at N + 1 in the map `e2` ({@link PAIR_ATTR}),
 * both encoded by the same codec (`eventFields`), so the second event is stored exactly like a
 * single one. The lazy `step_started` (and the resilient `run_started`) writes its synthetic create
 * and itself as one pair: one action in its transaction instead of two. Invariants, enforced here
 * and relied on by every reader and writer of the log:
 * - **Items tile the log.** Each item covers its slot, a pair also the next; the covered ranges
 *   tile 1..last with no gap and no overlap, so no item `EVT#<N+1>` exists beside a pair at N. A
 *   writer claims a slot by putting the item key (../write/commit.ts) and must therefore start from
 *   the last slot an item *covers* ({@link lastSlotOf}), never from a pair's first half.
 * - **Readers expand.** {@link parseEvents} returns an item's events in slot order (1 or 2); a read
 *   starting or ending inside a pair reads the item of its bound and drops what is outside ({@link
 *   eventsOf}). The first half of a pair is marked `pairedWithNext`, so a cursor that ends on it
 *   says so ({@link cursorAt}).
 * - **A pair opens no correlation.** Only the item of a hook/wait-opening event carries the
 *   correlation index key, pointing at the item's own slot; a pair holds step or run events, and
 *   {@link eventItem} refuses a pair with a correlation-opening event.
 *
 * **Formats.** Every log item this build writes carries its format (`fv`, src/schema/formats.ts;
 * log format 2); an unstamped item is format 1 (pair items included). A reader refuses an item of a
 * format it does not know ({@link parseEvents}, {@link lastSlotOf}) instead of misreading it. A
 * process from before pair items reads a pair as its first event only: it is older than format 1
 * and must not share a table with this build (docs/operations.md, "Upgrading and versions").
 */
import type { Event, ResolveData } from '@workflow/world';
import { SPEC_VERSION_CURRENT, slotToEventId, stripEventDataRefs } from '@workflow/world';
import type { Path } from '../../aws/expression.js';
import { isS3Pointer } from '../../context/payload-store.js';
import { eventTypesWhere } from '../../schema/event-kinds.js';
import { assertItemFormat, FORMAT_ATTR, formatStamp } from '../../schema/formats.js';
import { ATTR, keys } from '../../schema/keys.js';
import {
  type Attrs,
  date,
  dropUndefined,
  epochMs,
  fromAttr,
  keysOf,
  num,
  str,
  toAttr,
  toItem,
} from '../table/codec.js';
import { encodeEventCursor } from '../table/pagination.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { loadPayload } from './payloads.js';

/**
 * An event as stored. `eventData` is the request's data, kept opaque (unknown fields included),
 * with large fields replaced by S3 pointers; `extra` keeps unknown top-level request fields.
 */
export interface EventRecord {
  runId: string;
  slot: number;
  eventType: string;
  correlationId?: string;
  eventData?: Record<string, unknown>;
  createdAt: Date;
  occurredAt?: Date;
  specVersion?: number;
  resumeId?: string;
  extra?: Record<string, unknown>;
  /**
   * This event is the first half of a pair item: slot + 1 is stored in the same item. Set only by
   * {@link pairEvents} (for a read pair and for a written one); never stored, never part of the
   * `Event`.
   */
  pairedWithNext?: true;
}

/** The map attribute of a pair item holding its second event. */
export const PAIR_ATTR = 'e2';

/**
 * Event types that open a correlation and so carry the correlation index key
 * (src/schema/event-kinds.ts, `opensCorrelation`): at most one index write per hook or wait (see
 * `../read/correlation.ts`).
 */
const OPENS_CORRELATION = eventTypesWhere((k) => k.opensCorrelation);

const KNOWN_REQUEST_FIELDS = new Set(['eventType', 'correlationId', 'eventData', 'specVersion']);

/** An event's own fields (no key): the top level of a log item, or a pair item's `e2` map. */
function eventFields(e: EventRecord): Attrs {
  const a = toItem({
    t: e.eventType,
    cid: e.correlationId,
    ca: epochMs(e.createdAt),
    oa: epochMs(e.occurredAt),
    sv: e.specVersion,
    rid: e.resumeId,
  });
  if (e.eventData !== undefined) a.ed = toAttr(e.eventData)!;
  if (e.extra !== undefined) a.xt = toAttr(e.extra)!;
  return a;
}

function fromFields(runId: string, slot: number, it: Attrs): EventRecord {
  return {
    runId,
    slot,
    eventType: str(it, 't')!,
    correlationId: str(it, 'cid'),
    eventData: it.ed === undefined ? undefined : (fromAttr(it.ed) as Record<string, unknown>),
    createdAt: date(it, 'ca')!,
    occurredAt: date(it, 'oa'),
    specVersion: num(it, 'sv'),
    resumeId: str(it, 'rid'),
    extra: it.xt === undefined ? undefined : (fromAttr(it.xt) as Record<string, unknown>),
  };
}

/**
 * The log item of `first` at its slot, or, with `second` (which must be at the next slot), the pair
 * item holding both.
 */
export function eventItem(first: EventRecord, second?: EventRecord): Attrs {
  const item: Attrs = {
    ...keysOf(keys.event(first.runId, first.slot)),
    ...eventFields(first),
    ...formatStamp('log'),
  };
  if (second !== undefined) {
    if (second.slot !== first.slot + 1 || second.runId !== first.runId)
      throw new Error(`a pair item holds two consecutive slots of one run (got ${first.slot}, ${second.slot})`);
    if (OPENS_CORRELATION.has(first.eventType) || OPENS_CORRELATION.has(second.eventType))
      throw new Error(`a pair item cannot hold a correlation-opening event (${first.eventType}, ${second.eventType})`);
    item[PAIR_ATTR] = { M: eventFields(second) };
  } else if (first.correlationId !== undefined && OPENS_CORRELATION.has(first.eventType)) {
    item[ATTR.gsi1pk] = { S: keys.corrGsi(first.runId, first.correlationId) };
    item[ATTR.gsi1sk] = { S: keys.eventSk(first.slot) };
  }
  return item;
}

/** Refuses a log item of a format this build cannot read (src/schema/formats.ts): never misread. */
function assertLogItem(it: Attrs): void {
  assertItemFormat(it, 'log', `log item ${str(it, 'PK') ?? '?'} / ${str(it, 'SK') ?? '?'}`);
}

/** The events a log item holds, in slot order: one, or two for a pair item. */
export function parseEvents(it: Attrs): EventRecord[] {
  assertLogItem(it);
  const runId = str(it, 'PK')!.slice(4);
  const slot = keys.slotFromEventSk(str(it, 'SK')!);
  const first = fromFields(runId, slot, it);
  const second = it[PAIR_ATTR]?.M;
  return second === undefined ? [first] : pairEvents(first, fromFields(runId, slot + 1, second));
}

/** The two events of a pair item, as read or as its writer reports them: the first marked. */
export const pairEvents = (first: EventRecord, second: EventRecord): EventRecord[] => [
  { ...first, pairedWithNext: true },
  second,
];

/**
 * The last slot a log item covers: its own, or the next for a pair. Needs only the item's `SK`
 * and its pair marker, which {@link LAST_SLOT_PROJECTION} reads.
 */
export function lastSlotOf(it: Attrs): number {
  assertLogItem(it);
  return keys.slotFromEventSk(str(it, 'SK')!) + (it[PAIR_ATTR] === undefined ? 0 : 1);
}

/** The projection {@link lastSlotOf} needs (the key and one small field of a pair's second event). */
export const LAST_SLOT_PROJECTION: readonly Path[] = ['SK', [PAIR_ATTR, 't'], FORMAT_ATTR];

/**
 * The events of log items read in log order (`descending`: the Query ran backwards, and each
 * pair is reversed too), keeping only slots after `after` and before `before`. Reads start at
 * the item of their bound, inclusive, because a bound may be a pair's first half.
 */
export function eventsOf(
  items: readonly Attrs[],
  bounds: { after?: number; before?: number } = {},
  descending = false,
): EventRecord[] {
  const out: EventRecord[] = [];
  for (const it of items) {
    const evs = parseEvents(it);
    if (descending) evs.reverse();
    for (const e of evs) {
      if (bounds.after !== undefined && e.slot <= bounds.after) continue;
      if (bounds.before !== undefined && e.slot >= bounds.before) continue;
      out.push(e);
    }
  }
  return out;
}

/** The cursor after `e` (ascending) or before it (descending): the half form on a pair's first half. */
export const cursorAt = (e: EventRecord): string => encodeEventCursor(e.slot, e.pairedWithNext === true);

/** When an event was written (`createdAt`, the create call's clock) and when it happened (the caller's `occurredAt`). */
export interface EventStamp {
  readonly createdAt: Date;
  readonly occurredAt?: Date;
}

/**
 * The record of an event this create is about to write: the request's own fields (unknown ones kept
 * in `extra`, so newer cores' fields round-trip), `occurredAt` from the params, and the slot filled
 * in at commit.
 */
export function newEvent(
  stamp: EventStamp,
  runId: string,
  data: Record<string, any>,
  eventType: string,
  eventData: Record<string, any> | undefined,
): EventRecord {
  const extra = Object.entries(data).filter(([k, v]) => !KNOWN_REQUEST_FIELDS.has(k) && v !== undefined);
  return {
    runId,
    slot: 0,
    eventType,
    correlationId: data.correlationId,
    eventData,
    createdAt: stamp.createdAt,
    occurredAt: stamp.occurredAt,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
    extra: extra.length > 0 ? Object.fromEntries(extra) : undefined,
  };
}

export const atSlot = (e: EventRecord, slot: number): EventRecord => ({ ...e, slot });

/** The contract `Event`: ref fields stripped for 'none' (never read), pointers followed otherwise. */
export async function toEvent(ctx: StorageCtx, e: EventRecord, resolveData: ResolveData): Promise<Event> {
  let ev = dropUndefined({
    ...(e.extra ?? {}),
    eventType: e.eventType,
    correlationId: e.correlationId,
    eventData: e.eventData,
    runId: e.runId,
    eventId: slotToEventId(e.slot),
    createdAt: e.createdAt,
    occurredAt: e.occurredAt,
    specVersion: e.specVersion,
    resumeId: e.resumeId,
  }) as Event;
  ev = stripEventDataRefs(ev, resolveData);
  const data = (ev as { eventData?: Record<string, unknown> }).eventData;
  if (data && typeof data === 'object' && Object.values(data).some(isS3Pointer)) {
    const resolved: Record<string, unknown> = {};
    await Promise.all(Object.entries(data).map(async ([k, v]) => (resolved[k] = await loadPayload(ctx, v))));
    ev = { ...ev, eventData: resolved } as Event;
  }
  return ev;
}
