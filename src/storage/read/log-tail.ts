/**
 * Reads of a run's log tail, all strongly consistent: the events after a slot, the last slot, and
 * the run view together with the tail in one Query.
 *
 * Invariant relied on: in a run's partition `EVT#<slot:20>` sorts right before `RUN#meta` and
 * nothing sorts between them (see `ddb.ts`), so the range `EVT#<after+1>` .. `RUN#meta` is exactly
 * "the events after `after`, then the run".
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { keys, storageKeys } from '../../ddb.js';
import { type EventRecord, parseEvent } from '../records/event.js';
import type { Attrs } from '../table/codec.js';
import type { StorageCtx } from '../table/context.js';
import { queryAll } from '../table/reads.js';

export const EVT_START = keys.eventSkPrefix;
export const EVT_END = `${keys.eventSkPrefix}~`;

/** Events with slot > `after`, ascending. */
export async function eventsAfter(ctx: StorageCtx, runId: string, after: number): Promise<EventRecord[]> {
  const items = await queryAll(ctx, {
    KeyConditionExpression: 'PK = :pk AND SK BETWEEN :a AND :b',
    ExpressionAttributeValues: {
      ':pk': { S: keys.runPk(runId) },
      ':a': { S: keys.eventSk(after + 1) },
      ':b': { S: EVT_END },
    },
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
 * The run view and the log tail in one Query. Without `after`, a descending `Limit 2` returns the
 * run and the last event.
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
