/**
 * The event item `RUN#<runId> / EVT#<slot>` <-> `EventRecord` <-> the contract's `Event`.
 *
 * Event data is kept opaque: whatever fields a core sends are stored and returned unchanged
 * (unknown top-level request fields ride in `extra`), with large fields replaced by S3 pointers.
 * `toEvent` strips ref fields for `'none'` (never reading S3) and follows pointers otherwise.
 */
import type { Event, ResolveData } from '@workflow/world';
import { SPEC_VERSION_CURRENT, slotToEventId, stripEventDataRefs } from '@workflow/world';
import { ATTR, keys } from '../../ddb.js';
import { isS3Pointer } from '../../payloads.js';
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
import type { StorageCtx } from '../table/context.js';
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
}

/**
 * Event types that open a correlation and so carry the correlation index key: at most one index
 * write per hook or wait (see `../read/correlation.ts`). A step's `step_created` carries none:
 * its step item records the slot (`firstSlot`), so a step's events are found without an index copy.
 */
export const OPENS_CORRELATION: ReadonlySet<string> = new Set(['hook_created', 'hook_conflict', 'wait_created']);

const KNOWN_REQUEST_FIELDS = new Set(['eventType', 'correlationId', 'eventData', 'specVersion']);

/** Unknown top-level fields of an event request (kept so newer cores round-trip). */
export function extraFields(data: Record<string, unknown>): Record<string, unknown> | undefined {
  const extra = Object.fromEntries(
    Object.entries(data).filter(([k, v]) => !KNOWN_REQUEST_FIELDS.has(k) && v !== undefined),
  );
  return Object.keys(extra).length > 0 ? extra : undefined;
}

export function eventItem(e: EventRecord): Attrs {
  const item: Attrs = {
    ...keysOf(keys.event(e.runId, e.slot)),
    ...toItem({
      t: e.eventType,
      cid: e.correlationId,
      ca: epochMs(e.createdAt),
      oa: epochMs(e.occurredAt),
      sv: e.specVersion,
      rid: e.resumeId,
    }),
  };
  if (e.eventData !== undefined) item.ed = toAttr(e.eventData)!;
  if (e.extra !== undefined) item.xt = toAttr(e.extra)!;
  if (e.correlationId !== undefined && OPENS_CORRELATION.has(e.eventType)) {
    item[ATTR.gsi1pk] = { S: keys.corrGsi(e.runId, e.correlationId) };
    item[ATTR.gsi1sk] = { S: keys.eventSk(e.slot) };
  }
  return item;
}

export function parseEvent(it: Attrs): EventRecord {
  return {
    runId: str(it, 'PK')!.slice(4),
    slot: keys.slotFromEventSk(str(it, 'SK')!),
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

/** When an event was written (`createdAt`, the create call's clock) and when it happened (the caller's `occurredAt`). */
export interface EventStamp {
  readonly createdAt: Date;
  readonly occurredAt?: Date;
}

/**
 * The record of an event this create is about to write: the request's own fields (unknown ones
 * kept in `extra`, so newer cores' fields round-trip), `occurredAt` from the params, and the slot
 * filled in at commit.
 */
export function newEvent(
  stamp: EventStamp,
  runId: string,
  data: Record<string, any>,
  eventType: string,
  eventData: Record<string, any> | undefined,
  slot = 0,
): EventRecord {
  return {
    runId,
    slot,
    eventType,
    correlationId: data.correlationId,
    eventData,
    createdAt: stamp.createdAt,
    occurredAt: stamp.occurredAt,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
    extra: extraFields(data),
  };
}

/** The same event at another slot. */
export const atSlot = (e: EventRecord, slot: number): EventRecord => ({ ...e, slot });

/** The contract `Event`: ref fields stripped for 'none' (never read), pointers followed otherwise. */
export async function toEvent(ctx: StorageCtx, e: EventRecord, rd: ResolveData): Promise<Event> {
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
  ev = stripEventDataRefs(ev, rd);
  const data = (ev as { eventData?: Record<string, unknown> }).eventData;
  if (data && typeof data === 'object' && Object.values(data).some(isS3Pointer)) {
    const resolved: Record<string, unknown> = {};
    await Promise.all(Object.entries(data).map(async ([k, v]) => (resolved[k] = await loadPayload(ctx, v))));
    ev = { ...ev, eventData: resolved } as Event;
  }
  return ev;
}
