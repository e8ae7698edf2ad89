/**
 * The World errors storage raises for bad input and missing entities. Every error a caller can fix
 * says which field is wrong and why (`WorkflowWorldError` with status 400 and `field`).
 */
import { WorkflowWorldError } from '@workflow/errors';

export function invalidArgument(field: string, message: string): WorkflowWorldError {
  return new WorkflowWorldError(message, { status: 400, code: 'INVALID_ARGUMENT', field });
}

export function notFound(message: string): WorkflowWorldError {
  return new WorkflowWorldError(message, { status: 404 });
}

/** Key parts must be non-empty strings that fit a DynamoDB key (2 KB partition, 1 KB sort). */
export function assertId(field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0)
    throw invalidArgument(field, `${field} must be a non-empty string`);
  if (Buffer.byteLength(value) > 900) throw invalidArgument(field, `${field} is longer than 900 bytes`);
}
