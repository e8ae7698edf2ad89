/**
 * The single writes of a run's DUE item (../records/due.ts) outside the transactions that put it
 * and pull it forward: the backstop check's moves (its fence, the fence held over a lease watch,
 * and its decision's next check) and its delete of a terminal run's item (src/backstop/check.ts),
 * and the flow route's acknowledgement of a quiet turn ({@link ackTurn}).
 *
 * Invariants: a move and the delete are conditional on `dueAt` being the value the caller last saw
 * (the index's, or its own fence), so of two checkers (or a checker and a `hook_received` that
 * moved the item) one passes and the other does nothing, and a checker's last write never
 * overwrites a `hook_received` that came meanwhile; a lost race is no error. Applying one twice is
 * applying it once.
 */
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expression, when } from '../../aws/expression.js';
import { ATTR, keys } from '../../schema/keys.js';
import { type DueRecord, dueIndexAttrs, parseDue } from '../records/due.js';
import { type Attrs, keysOf } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { ifConditionHolds } from './conditions.js';

/** Move a DUE item's check from `from` to `to` (conditional on `dueAt = from`); its values after, or undefined. */
export async function moveDue(
  ctx: StorageCtx,
  runId: string,
  from: number,
  to: number,
  set: { wakes?: number; seenSlot?: number },
): Promise<DueRecord | undefined> {
  const idx = dueIndexAttrs(runId, to);
  const move = expression()
    .set({ dueAt: to, [ATTR.gsi1sk]: idx[ATTR.gsi1sk].S, ...set })
    .when(when.is('dueAt', from));
  const out = await ifConditionHolds(
    ctx.ddb.send(
      new UpdateItemCommand({ ...move.toUpdateItem(ctx.table, keysOf(keys.due(runId))), ReturnValues: 'ALL_NEW' }),
    ),
  );
  return out?.Attributes ? parseDue(out.Attributes as Attrs) : undefined;
}

/** Delete a terminal run's DUE item, conditional on `dueAt` still being the check's fence `fencedAt`. */
export async function deleteDue(ctx: StorageCtx, runId: string, fencedAt: number): Promise<void> {
  const del = expression().when(when.is('dueAt', fencedAt));
  await ifConditionHolds(
    ctx.ddb.send(new DeleteItemCommand(del.toDeleteItem(ctx.table, keysOf(keys.due(runId)), { returnOld: false }))),
  );
}

/**
 * The flow route's acknowledgement of a quiet turn: after a workflow delivery (a run continuation,
 * not a step) returned normally, the run's DUE item records the highest log slot that delivery read
 * (`ackedSlot`), so the backstop does not wake a run for an event its replay already saw (a run
 * idling on a hook after a step finished), and the queue that delivery came on (`wq`), where a wake
 * of the run is sent. One UpdateItem of non-key attributes: no index write.
 *
 * Conditional on the item existing and on raising `ackedSlot` (a late ack never lowers it), so
 * applying it twice is applying it once. Off the turn's critical path: the flow route does not wait
 * for it, and a lost ack costs at most one backstop wake (a replay that does nothing).
 */
export async function ackTurn(ctx: StorageCtx, runId: string, slot: number, queueName?: string): Promise<void> {
  const raise = expression()
    .set({ ackedSlot: slot, wq: queueName })
    .when(when.present, when.any(when.lacks('ackedSlot'), when.below('ackedSlot', slot)));
  await ifConditionHolds(ctx.ddb.send(new UpdateItemCommand(raise.toUpdateItem(ctx.table, keysOf(keys.due(runId))))));
}
