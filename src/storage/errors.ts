/**
 * DynamoDB failure -> World error plumbing.
 *
 * A cancelled `TransactWriteItems` reports one reason per action, in action order, and with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` a failed condition carries the item as it
 * was. The create paths read those reasons to choose the exact `@workflow/errors` class without
 * a second read: a slot claim that failed is a bump, a failed guard names the state it saw.
 */
import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import { ThrottleError, WorkflowWorldError } from '@workflow/errors';
import type { Attrs } from './codec.js';

export interface Cancellation {
  readonly reasons: readonly CancellationReason[];
}

export function cancellationOf(err: unknown): Cancellation | undefined {
  const e = err as { name?: string; CancellationReasons?: CancellationReason[] };
  if (e?.name !== 'TransactionCanceledException') return undefined;
  return { reasons: e.CancellationReasons ?? [] };
}

export const failedCondition = (c: Cancellation, i: number): boolean => c.reasons[i]?.Code === 'ConditionalCheckFailed';

/** The item a failed condition saw (`undefined` when the item did not exist). */
export const oldItem = (c: Cancellation, i: number): Attrs | undefined => c.reasons[i]?.Item as Attrs | undefined;

/** Reasons that are worth retrying the same transaction for. */
export function transientCancellation(c: Cancellation): boolean {
  return c.reasons.some((r) => r.Code === 'TransactionConflict' || r.Code === 'ThrottlingError' || r.Code === 'ProvisionedThroughputExceeded');
}

export function invalidArgument(field: string, message: string): WorkflowWorldError {
  return new WorkflowWorldError(message, { status: 400, code: 'INVALID_ARGUMENT', field });
}

export function notFound(message: string): WorkflowWorldError {
  return new WorkflowWorldError(message, { status: 404 });
}

/** Key parts must be non-empty strings that fit a DynamoDB key (2 KB partition, 1 KB sort). */
export function assertId(field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) throw invalidArgument(field, `${field} must be a non-empty string`);
  if (Buffer.byteLength(value) > 900) throw invalidArgument(field, `${field} is longer than 900 bytes`);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Full-jitter exponential backoff: 10 ms, 20 ms, ... capped at 1 s. */
export function backoff(attempt: number): Promise<void> {
  const cap = Math.min(1000, 10 * 2 ** attempt);
  return sleep(Math.random() * cap);
}

export function exhausted(what: string): ThrottleError {
  return new ThrottleError(`${what}: DynamoDB kept cancelling the transaction (contention or throttling)`, { retryAfter: 1 });
}
