/**
 * The conditions a create's transaction is built from, and how a cancelled one is read.
 *
 * - The two conditional puts: the create claim of a view item (`attribute_not_exists`, reporting
 *   the existing item on failure) and the slot claim of an event (`attribute_not_exists` on
 *   `EVT#<slot>`: a taken slot fails the transaction, see `commit.ts`).
 * - A cancelled transaction reports one reason per action, in action order, and with
 *   `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` a failed condition carries the item as it was.
 *   The create paths read those reasons to choose the exact `@workflow/errors` class without a
 *   second read: a slot claim that failed is a bump, a failed guard names the state it saw.
 *   (Recognising the AWS error itself is `aws/sdk-errors.ts`'s job.)
 * - A single-item write that may lose a race: {@link ifConditionHolds}.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expression, when } from '../../aws/expression.js';
import {
  cancellationReasonKind,
  cancellationReasons,
  isConditionalCheckFailed,
  isTransactionCanceled,
} from '../../aws/sdk-errors.js';
import type { Attrs } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';

/** Put with `attribute_not_exists`: the create-claim of a view item, reporting the item it found. */
export function putNew(ctx: StorageCtx, item: Attrs): TransactWriteItem {
  return expression().when(when.absent).toPut(ctx.table, item, { returnOld: true });
}

/** The slot claim: an event put that fails if the slot is taken (the reason alone is enough). */
export function putEvent(ctx: StorageCtx, item: Attrs): TransactWriteItem {
  return expression().when(when.absent).toPut(ctx.table, item, { returnOld: false });
}

export interface Cancellation {
  readonly reasons: readonly { Code?: string; Message?: string; Item?: Record<string, unknown> }[];
}

export function cancellationOf(err: unknown): Cancellation | undefined {
  return isTransactionCanceled(err) ? { reasons: cancellationReasons(err) } : undefined;
}

export const failedCondition = (c: Cancellation, i: number): boolean =>
  cancellationReasonKind(c.reasons[i]?.Code) === 'condition';

/** The item a failed condition saw (`undefined` when the item did not exist). */
export const oldItem = (c: Cancellation, i: number): Attrs | undefined => c.reasons[i]?.Item as Attrs | undefined;

/**
 * A single-item conditional write whose failed condition is no error (a lost race, an item gone
 * meanwhile): its result, or undefined when the condition failed.
 */
export async function ifConditionHolds<T>(write: Promise<T>): Promise<T | undefined> {
  try {
    return await write;
  } catch (err) {
    if (isConditionalCheckFailed(err)) return undefined;
    throw err;
  }
}

/**
 * Whether a reason is of `kind`: `transient` is worth retrying the same transaction for,
 * `validation` is DynamoDB's when an action is invalid (e.g. an item over 400 KB).
 */
export const cancelledFor = (c: Cancellation, kind: 'transient' | 'validation'): boolean =>
  c.reasons.some((r) => cancellationReasonKind(r.Code) === kind);
