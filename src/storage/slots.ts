/**
 * Slot allocation at commit ("bump and report") and the reads of a run's log.
 *
 * An event id is its dense 1-based position (`slotToEventId`). There is no counter item: the
 * claim on slot N *is* the conditional put of `EVT#N` (`attribute_not_exists`), inside the same
 * `TransactWriteItems` as the view writes and their guards. Invariants:
 *
 * - **Dense.** A write only ever tries `last + 1` where `last` is a slot known to exist (from the
 *   writer's `eventCount`/cursor, a read of the tail, or a slot this process saw committed), so
 *   slots 1..N-1 exist when N is claimed. Synthetic events take the lower of two consecutive
 *   slots in the same transaction.
 * - **No burned slots.** A cancelled transaction writes nothing, so a lost race leaves no hole.
 * - **Bump, never fail.** When the slot put is the failed condition, the tail is re-read (with
 *   data when the caller is collecting a report/delta) and the write retries one above it.
 * - **Idempotent attempts.** Each attempt carries its own `ClientRequestToken`, so an SDK-level
 *   retry of an attempt that did commit returns success instead of bumping a second copy.
 */
import { QueryCommand, type QueryCommandInput, type TransactWriteItem, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { keys, storageKeys } from '../ddb.js';
import { type Attrs, itemSize, valueSize } from './codec.js';
import { backoff, type Cancellation, cancellationOf, exhausted, failedCondition, invalidArgument, transientCancellation } from './errors.js';
import { type EventRecord, parseEvent, type StorageCtx } from './items.js';

export const EVT_START = keys.eventSkPrefix;
export const EVT_END = `${keys.eventSkPrefix}~`;

// ---------------------------------------------------------------- cursors

const CURSOR_RE = /^evc:(\d{1,16})$/;

/** Events cursor: the slot of the last event a page returned (exclusive lower bound). */
export const encodeEventCursor = (slot: number) => `evc:${slot}`;

export function decodeEventCursor(cursor: string, field = 'cursor'): number {
  const m = CURSOR_RE.exec(cursor);
  if (!m) throw invalidArgument(field, `Invalid events cursor "${cursor.slice(0, 40)}"`);
  return Number(m[1]);
}

// ---------------------------------------------------------------- hints

const RECENT_PER_RUN = 64;
const RECENT_MAX_BYTES = 32_768;
/** Larger step items (big inline inputs) are not remembered: memory over one saved read. */
const STEP_ITEM_MAX_BYTES = 65_536;
/**
 * Byte budgets for what a process remembers (a small Lambda has 128 MB in all); past them the
 * least recently used runs / step items are forgotten, which costs reads, never correctness.
 */
const STEP_ITEMS_BUDGET_BYTES = 8 * 1024 * 1024;
const RECENT_EVENTS_BUDGET_BYTES = 16 * 1024 * 1024;

/**
 * What this process knows about a run's log: the highest slot known to exist, and the most
 * recent events it committed or read (small ones only). Only committed or read slots are noted,
 * so a hint is never above the real tail: trying `hint + 1` keeps the log dense, and a stale
 * hint costs one lost slot race, not correctness. The log is append-only, so a remembered event
 * is exactly what a read of its slot would return: a writer's delta can come from here.
 */
export class SlotHints {
  private readonly m = new Map<string, { tail: number; recent: Map<number, { ev: EventRecord; size: number }>; bytes: number }>();
  private recentBytes = 0;
  /**
   * Step items as this process last committed them. A transition that starts from a remembered
   * item skips its read: the write is conditioned on the item's version, so a stale memory
   * costs one cancelled transaction (which returns the current item) and never a wrong write.
   */
  private readonly stepItems = new Map<string, { item: Attrs; size: number }>();
  private stepBytes = 0;
  constructor(private readonly maxRuns = 2_000) {}

  rememberStep(runId: string, stepId: string, item: Attrs): void {
    const k = `${runId}\u0000${stepId}`;
    this.forgetStep(k);
    const size = itemSize(item);
    if (size > STEP_ITEM_MAX_BYTES) return;
    this.stepItems.set(k, { item, size });
    this.stepBytes += size;
    // Oldest first, until the memory is back under its byte budget.
    while (this.stepBytes > STEP_ITEMS_BUDGET_BYTES) this.forgetStep(this.stepItems.keys().next().value as string);
  }

  knownStep(runId: string, stepId: string): Attrs | undefined {
    return this.stepItems.get(`${runId}\u0000${stepId}`)?.item;
  }

  private forgetStep(k: string): void {
    const e = this.stepItems.get(k);
    if (!e) return;
    this.stepItems.delete(k);
    this.stepBytes -= e.size;
  }

  get(runId: string): number | undefined {
    return this.m.get(runId)?.tail;
  }

  note(runId: string, slot: number, events: readonly EventRecord[] = []): void {
    let e = this.m.get(runId);
    if (e) this.m.delete(runId);
    else e = { tail: 0, recent: new Map(), bytes: 0 };
    this.m.set(runId, e); // most recently used last
    e.tail = Math.max(e.tail, slot);
    const floor = e.tail - RECENT_PER_RUN;
    for (const ev of events) {
      if (ev.slot <= floor || e.recent.has(ev.slot)) continue;
      const size = valueSize(ev.eventData) + 256;
      if (size > RECENT_MAX_BYTES) continue;
      e.recent.set(ev.slot, { ev, size });
      e.bytes += size;
      this.recentBytes += size;
    }
    for (const [k, r] of e.recent) {
      if (k > floor) continue;
      e.recent.delete(k);
      e.bytes -= r.size;
      this.recentBytes -= r.size;
    }
    while (this.m.size > this.maxRuns || (this.recentBytes > RECENT_EVENTS_BUDGET_BYTES && this.m.size > 1)) {
      const oldest = this.m.keys().next().value as string;
      this.recentBytes -= this.m.get(oldest)!.bytes;
      this.m.delete(oldest);
    }
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

/**
 * Move a position to the highest slot this process knows of. A collecting position takes the
 * events in between from memory, or reads them (one Query) when they are not all remembered;
 * either way the write's first attempt then targets a slot that is not known to be taken.
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

// ---------------------------------------------------------------- reads

/** All items of one Query, following `LastEvaluatedKey`, up to `max` items. */
export async function queryAll(ctx: StorageCtx, input: Omit<QueryCommandInput, 'TableName'>, max = Number.POSITIVE_INFINITY): Promise<Attrs[]> {
  const out: Attrs[] = [];
  let start: Record<string, any> | undefined;
  do {
    const res = await ctx.ddb.send(new QueryCommand({ TableName: ctx.table, ...input, ExclusiveStartKey: start }));
    out.push(...((res.Items ?? []) as Attrs[]));
    start = res.LastEvaluatedKey;
  } while (start && out.length < max);
  return out.slice(0, max);
}

/** Events with slot > `after`, ascending, strongly consistent. */
export async function eventsAfter(ctx: StorageCtx, runId: string, after: number): Promise<EventRecord[]> {
  const items = await queryAll(ctx, {
    KeyConditionExpression: 'PK = :pk AND SK BETWEEN :a AND :b',
    ExpressionAttributeValues: { ':pk': { S: keys.runPk(runId) }, ':a': { S: keys.eventSk(after + 1) }, ':b': { S: EVT_END } },
    ConsistentRead: true,
  });
  return items.map(parseEvent);
}

/** The last committed slot (0 for an empty log): one keys-only Query. */
export async function tailSlot(ctx: StorageCtx, runId: string): Promise<number> {
  const res = await ctx.ddb.send(
    new QueryCommand({
      TableName: ctx.table,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :e)',
      ExpressionAttributeValues: { ':pk': { S: keys.runPk(runId) }, ':e': { S: EVT_START } },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
      ProjectionExpression: 'SK',
    }),
  );
  const sk = res.Items?.[0]?.SK?.S;
  return sk ? keys.slotFromEventSk(sk) : 0;
}

export interface RunTail {
  /** The run view item, if the run exists. */
  run?: Attrs;
  /** Events after `after` (only when `after` was given), ascending. */
  events: EventRecord[];
  /** Highest slot known to exist. */
  tail: number;
}

/**
 * The run view and the log tail in one Query: `EVT#...` sorts right before `RUN#meta` and
 * nothing else sorts between them, so the range `EVT#<after+1>` .. `RUN#meta` is "the events
 * after `after`, then the run". Without `after`, a descending `Limit 2` returns the run and
 * the last event.
 */
export async function readRunTail(ctx: StorageCtx, runId: string, after?: number): Promise<RunTail> {
  const pk = { ':pk': { S: keys.runPk(runId) } };
  if (after !== undefined) {
    const items = await queryAll(ctx, {
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :a AND :m',
      ExpressionAttributeValues: { ...pk, ':a': { S: keys.eventSk(after + 1) }, ':m': { S: storageKeys.runMetaSk } },
      ConsistentRead: true,
    });
    const run = items.find((i) => i.SK.S === storageKeys.runMetaSk);
    const events = items.filter((i) => i.SK.S !== storageKeys.runMetaSk).map(parseEvent);
    return { run, events, tail: events.length > 0 ? events[events.length - 1].slot : after };
  }
  const res = await ctx.ddb.send(
    new QueryCommand({
      TableName: ctx.table,
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :a AND :m',
      ExpressionAttributeValues: { ...pk, ':a': { S: EVT_START }, ':m': { S: storageKeys.runMetaSk } },
      ScanIndexForward: false,
      Limit: 2,
      ConsistentRead: true,
    }),
  );
  const items = (res.Items ?? []) as Attrs[];
  const run = items.find((i) => i.SK.S === storageKeys.runMetaSk);
  const last = items.find((i) => i.SK.S !== storageKeys.runMetaSk);
  return { run, events: [], tail: last ? keys.slotFromEventSk(last.SK.S!) : 0 };
}

// ---------------------------------------------------------------- commit

export interface Attempt {
  items: TransactWriteItem[];
  /** Indices in `items` of the event puts (the slot claims). */
  eventIdx: number[];
}

export interface Position {
  /** Highest slot known to exist; unknown -> hint, else a tail read. */
  last?: number;
  /** When set, events after `last` are collected into it (bump-and-report / sinceCursor delta). */
  collect?: EventRecord[];
}

export interface CommitOptions {
  runId: string;
  what: string;
  build: (slot: number) => Attempt | Promise<Attempt>;
  /**
   * Called when a guard (a non-event condition) failed. Throws the contract error, or returns
   * `'retry'` after refreshing the state `build` reads (e.g. an optimistic version moved).
   */
  onGuard: (c: Cancellation) => 'retry' | Promise<'retry'> | Promise<never> | never;
}

export interface Committed {
  /** First slot this commit took (the synthetic event's, when there is one). */
  slot: number;
  /** Number of slots taken. */
  count: number;
}

const MAX_ATTEMPTS = 200;

export async function transact(ctx: StorageCtx, items: TransactWriteItem[]): Promise<void> {
  await ctx.ddb.send(new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: randomUUID() }));
}

export async function commit(ctx: StorageCtx, hints: SlotHints, pos: Position, o: CommitOptions): Promise<Committed> {
  const start = await advance(ctx, hints, o.runId, pos);
  let last = start.last!;
  let transient = 0;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const slot = last + 1;
    const a = await o.build(slot);
    try {
      await transact(ctx, a.items);
      hints.note(o.runId, slot + a.eventIdx.length - 1);
      return { slot, count: a.eventIdx.length };
    } catch (err) {
      const c = cancellationOf(err);
      if (!c) throw err;
      // Guards first: a refused event is refused whatever slot it would have taken.
      const guardFailed = c.reasons.some((r, i) => r.Code === 'ConditionalCheckFailed' && !a.eventIdx.includes(i));
      if (guardFailed) {
        await o.onGuard(c);
        continue;
      }
      if (a.eventIdx.some((i) => failedCondition(c, i))) {
        // Lost the slot race: move above the current tail.
        if (pos.collect) {
          const evs = await eventsAfter(ctx, o.runId, last);
          pos.collect.push(...evs);
          last = evs.length > 0 ? evs[evs.length - 1].slot : last + a.eventIdx.length;
          hints.note(o.runId, last, evs);
        } else {
          last = Math.max(last + 1, await tailSlot(ctx, o.runId));
          hints.note(o.runId, last);
        }
        continue;
      }
      if (transientCancellation(c)) {
        await backoff(transient++);
        continue;
      }
      throw err;
    }
  }
  throw exhausted(o.what);
}
