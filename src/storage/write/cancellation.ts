/**
 * Reading a cancelled `TransactWriteItems`.
 *
 * A cancelled transaction reports one reason per action, in action order, and with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` a failed condition carries the item as it was.
 * The create paths read those reasons to choose the exact `@workflow/errors` class without a
 * second read: a slot claim that failed is a bump, a failed guard names the state it saw.
 * (Recognising the AWS error itself is `aws/errors.ts`'s job.)
 */
import { cancellationReasons, isTransactionCanceled } from '../../aws/errors.js';
import type { Attrs } from '../table/codec.js';

export interface Cancellation {
  readonly reasons: readonly { Code?: string; Message?: string; Item?: Record<string, unknown> }[];
}

export function cancellationOf(err: unknown): Cancellation | undefined {
  return isTransactionCanceled(err) ? { reasons: cancellationReasons(err) } : undefined;
}

export const failedCondition = (c: Cancellation, i: number): boolean => c.reasons[i]?.Code === 'ConditionalCheckFailed';

/** The item a failed condition saw (`undefined` when the item did not exist). */
export const oldItem = (c: Cancellation, i: number): Attrs | undefined => c.reasons[i]?.Item as Attrs | undefined;

/** Reasons that are worth retrying the same transaction for. */
export function transientCancellation(c: Cancellation): boolean {
  return c.reasons.some(
    (r) =>
      r.Code === 'TransactionConflict' || r.Code === 'ThrottlingError' || r.Code === 'ProvisionedThroughputExceeded',
  );
}

/** A reason DynamoDB gives when an action is invalid (e.g. an item over 400 KB). */
export function validationCancellation(c: Cancellation): boolean {
  return c.reasons.some((r) => r.Code === 'ValidationError');
}
