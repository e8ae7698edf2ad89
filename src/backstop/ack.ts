/**
 * The flow route's acknowledgement of a quiet turn: after a workflow delivery (a run continuation,
 * not a step) returned normally, the run's DUE item records the highest log slot that delivery read
 * (`ackedSlot`), so the backstop does not wake a run for an event its replay already saw (a run
 * idling on a hook after a step finished), and the queue that delivery came on (`wq`), where a
 * wake of the run is sent. One UpdateItem of non-key attributes: no index write.
 *
 * Conditional on the item existing and on raising `ackedSlot` (a late ack never lowers it), so
 * applying it twice is applying it once. Off the turn's critical path: the flow route does not wait
 * for it, and a lost ack costs at most one backstop wake (a replay that does nothing).
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { when } from '../aws/record-conditions.js';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import { keys } from '../schema/keys.js';
import { keysOf } from '../storage/table/codec.js';
import { assign, condition, expression } from '../storage/table/expression.js';
import type { StorageCtx } from '../storage/table/storage-ctx.js';

export async function ackTurn(ctx: StorageCtx, runId: string, slot: number, queueName?: string): Promise<void> {
  const raise = expression()
    .set(assign('ackedSlot', ':s', { N: String(slot) }))
    .set(...(queueName ? [assign('wq', ':q', { S: queueName })] : []))
    .when(condition(when.all(when.present, when.any(when.lacks('ackedSlot'), when.below('ackedSlot', slot)))));
  try {
    await ctx.ddb.send(new UpdateItemCommand(raise.toUpdateItem(ctx.table, keysOf(keys.due(runId)))));
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
  }
}
