/**
 * The events of one correlation (a step, hook or wait) within a run.
 *
 * A read finds the slot of the correlation's first event and reads the rest from the run's log
 * (strongly consistent), filtered by correlation id: nothing before the first event can belong to
 * the correlation. Where the first slot is found:
 * - a step: its step item records the slot of its `step_created` (`firstSlot`, written in the
 *   same transaction), so a step costs no index write at all;
 * - a hook or wait: only its first event (`hook_created`, `hook_conflict`, `wait_created`)
 *   carries the correlation index key (GSI1), so it costs one index write however many events it
 *   has; so does the `step_created` of a step written before `firstSlot` was recorded.
 * A correlation with neither (e.g. an `attr_set` id) is read from the start of the log.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { ATTR, GSI1, keys } from '../../ddb.js';
import { type Attrs, num } from '../table/codec.js';
import type { StorageCtx } from '../table/context.js';
import { getItem, queryPage } from '../table/reads.js';
import { EVT_END } from './log-tail.js';

/** The slot of the correlation's first event (1 when none is recorded or indexed). */
async function firstSlot(ctx: StorageCtx, runId: string, correlationId: string): Promise<number> {
  // Core's step ids are `step_<ulid>`; any other id that names a step is still found below (the
  // index of an older step) or by reading the log from its start.
  if (correlationId.startsWith('step_')) {
    const recorded = num((await getItem(ctx, keys.step(runId, correlationId))) ?? {}, 'fs');
    if (recorded !== undefined) return recorded;
  }
  const res = await ctx.ddb.send(
    new QueryCommand({
      TableName: ctx.table,
      IndexName: GSI1,
      KeyConditionExpression: '#pk = :p',
      ExpressionAttributeNames: { '#pk': ATTR.gsi1pk },
      ExpressionAttributeValues: { ':p': { S: keys.corrGsi(runId, correlationId) } },
      Limit: 1,
    }),
  );
  const sk = res.Items?.[0]?.[ATTR.gsi1sk]?.S;
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

/** Up to `limit + 1` event items of the correlation (the extra one only tells `hasMore`). */
export async function correlationEvents(ctx: StorageCtx, q: CorrelationQuery): Promise<Attrs[]> {
  const first = await firstSlot(ctx, q.runId, q.correlationId);
  let lo = keys.eventSk(first);
  let hi = EVT_END;
  if (q.after !== undefined && q.ascending) lo = keys.eventSk(Math.max(first, q.after + 1));
  if (q.after !== undefined && !q.ascending) {
    if (q.after - 1 < first) return [];
    hi = keys.eventSk(q.after - 1);
  }
  const values: Attrs = {
    ':pk': { S: keys.runPk(q.runId) },
    ':lo': { S: lo },
    ':hi': { S: hi },
    ':c': { S: q.correlationId },
  };
  let filter = 'cid = :c';
  if (q.eventType !== undefined) {
    filter += ' AND t = :t';
    values[':t'] = { S: q.eventType };
  }
  return queryPage(
    ctx,
    {
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
      FilterExpression: filter,
      ExpressionAttributeValues: values,
      ScanIndexForward: q.ascending,
      ConsistentRead: true,
    },
    q.limit,
  );
}
