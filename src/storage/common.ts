/**
 * Pieces shared by the `events.create` handlers: the per-call environment, the run guard that
 * most child events carry, positions derived from the writer's snapshot, and the outcome type
 * `create` assembles into an `EventResult`.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { RunNotSupportedError, WorkflowRunNotFoundError } from '@workflow/errors';
import type { CreateEventParams, EventResult, Hook, ResolveData, Step, Wait, WorkflowRun } from '@workflow/world';
import { SPEC_VERSION_CURRENT, SPEC_VERSION_MAX_SUPPORTED, requiresNewerWorld } from '@workflow/world';
import { keys } from '../ddb.js';
import type { Attrs } from './codec.js';
import { num, str } from './codec.js';
import type { EventRecord, StorageCtx } from './items.js';
import { extraFields, keysOf } from './items.js';
import { advance, decodeEventCursor, type Position, type SlotHints } from './slots.js';

export interface Env {
  readonly ctx: StorageCtx;
  readonly hints: SlotHints;
  readonly params: CreateEventParams | undefined;
  readonly rd: ResolveData;
  readonly now: Date;
}

/** What a handler did; `create` turns it into the `EventResult`. */
export interface Outcome {
  /** Events this call committed, ascending, with their *original* (un-offloaded) data. */
  own: EventRecord[];
  /** Snapshot position used for the commit; `collect` holds what the write skipped over. */
  pos: Position;
  run?: WorkflowRun;
  step?: Step;
  hook?: Hook;
  wait?: Wait;
  stepCreated?: true;
  /** The run's log before this write, when the handler read it (run_started preload). */
  preload?: EventRecord[];
  /** Whether to attach the full log (preload + collect + own). */
  fullLog?: boolean;
}

/** A handler finished without (another) write: return this result as is. */
export class Resolved extends Error {
  constructor(readonly result: EventResult) {
    super('resolved');
  }
}

/** The state a handler decided on moved under it: start over from a fresh read. */
export class Restart extends Error {
  constructor() {
    super('restart');
  }
}

export const TERMINAL_VALUES = { ':st_c': { S: 'completed' }, ':st_f': { S: 'failed' }, ':st_x': { S: 'cancelled' } };
export const NOT_TERMINAL = 'NOT (#st IN (:st_c, :st_f, :st_x))';

/**
 * ConditionCheck on the run view: it exists, is not terminal and is a spec this World serves.
 * Orders the event against terminal transitions (both touch `RUN#meta`).
 */
export function runGuard(ctx: StorageCtx, runId: string): TransactWriteItem {
  return {
    ConditionCheck: {
      TableName: ctx.table,
      Key: keysOf(keys.runMeta(runId)),
      ConditionExpression: `attribute_exists(PK) AND ${NOT_TERMINAL} AND (attribute_not_exists(specVersion) OR specVersion <= :maxsv)`,
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ...TERMINAL_VALUES, ':maxsv': { N: String(SPEC_VERSION_MAX_SUPPORTED) } },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** The error a failed {@link runGuard} stands for. */
export function runGuardError(runId: string, old: Attrs | undefined, onTerminal: (status: string) => Error): Error {
  if (!old) return new WorkflowRunNotFoundError(runId);
  const sv = num(old, 'specVersion');
  if (requiresNewerWorld(sv)) return new RunNotSupportedError(sv!, SPEC_VERSION_MAX_SUPPORTED);
  return onTerminal(str(old, 'status') ?? 'unknown');
}

export function assertSpec(run: { specVersion?: number }): void {
  if (requiresNewerWorld(run.specVersion)) throw new RunNotSupportedError(run.specVersion!, SPEC_VERSION_MAX_SUPPORTED);
}

/**
 * The writer's snapshot. `sinceCursor` wins (its delta is a superset of the skipped-slot
 * report); `eventCount` is next; neither means the write reports nothing.
 */
export function startPosition(params: CreateEventParams | undefined): Position {
  if (typeof params?.sinceCursor === 'string') return { last: decodeEventCursor(params.sinceCursor, 'sinceCursor'), collect: [] };
  const n = params?.eventCount;
  if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) return { last: n, collect: [] };
  return {};
}

/** Resolve the position before the commit (see `advance`), so callers can overlap it with a read. */
export function knownPosition(env: Env, runId: string, pos: Position): Promise<Position> {
  return advance(env.ctx, env.hints, runId, pos);
}

export async function getItem(ctx: StorageCtx, key: { PK: string; SK: string }): Promise<Attrs | undefined> {
  const res = await ctx.ddb.send(new GetItemCommand({ TableName: ctx.table, Key: keysOf(key), ConsistentRead: true }));
  return res.Item as Attrs | undefined;
}

/** Put with `attribute_not_exists`: the create-claim of a view item. */
export function putNew(ctx: StorageCtx, item: Attrs): TransactWriteItem {
  return {
    Put: { TableName: ctx.table, Item: item, ConditionExpression: 'attribute_not_exists(PK)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
  };
}

/** The slot claim: an event put that fails if the slot is taken. */
export function putEvent(ctx: StorageCtx, item: Attrs): TransactWriteItem {
  return { Put: { TableName: ctx.table, Item: item, ConditionExpression: 'attribute_not_exists(PK)' } };
}

/**
 * The record of an event this create is about to write: the request's own fields (unknown ones
 * kept in `extra`, so newer cores' fields round-trip), `occurredAt` from the params, and the slot
 * filled in at commit.
 */
export function newEvent(
  env: Env,
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
    createdAt: env.now,
    occurredAt: env.params?.occurredAt,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
    extra: extraFields(data),
  };
}
