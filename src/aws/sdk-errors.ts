/**
 * The one module that recognises AWS SDK errors. Every other module asks these predicates instead
 * of comparing `err.name` strings, so a renamed exception or an emulator's variant spelling is
 * handled in one place.
 *
 * SDK v3 errors are classes, but `instanceof` fails across duplicated SDK copies (and some
 * emulators answer with names the modelled classes do not know), so recognition goes by `name` (and
 * `Code` / `__type` for query-protocol errors) plus the HTTP status in `$metadata`.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { ThrottleError, WorkflowWorldError } from '@workflow/errors';

interface AwsLikeError {
  name?: string;
  Code?: string;
  code?: string;
  __type?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: { throttling?: boolean };
  CancellationReasons?: { Code?: string; Message?: string; Item?: unknown }[];
  Item?: Record<string, AttributeValue>;
}

const asAws = (err: unknown): AwsLikeError => (err && typeof err === 'object' ? (err as AwsLikeError) : {});

/** Every name the error answers to (SDK name, query-protocol code, JSON `__type` suffix). */
function namesOf(err: unknown): string[] {
  const e = asAws(err);
  const out: string[] = [];
  for (const n of [e.name, e.Code, e.code, e.__type]) {
    if (typeof n === 'string' && n) out.push(n.includes('#') ? n.slice(n.lastIndexOf('#') + 1) : n);
  }
  return out;
}

const hasName = (err: unknown, ...names: string[]): boolean => namesOf(err).some((n) => names.includes(n));

/** The error's name (SDK name, else query-protocol code or JSON `__type`), '' when it has none. */
export function errorName(err: unknown): string {
  return namesOf(err)[0] ?? '';
}

/** `Name: message`, for reports and error messages that quote what AWS answered. */
export function describeError(err: unknown): string {
  const message = asAws(err).message;
  return `${errorName(err) || 'Error'}: ${typeof message === 'string' ? message : String(err)}`;
}

/** The HTTP status the service answered with, when there was an answer. */
export function httpStatusOf(err: unknown): number | undefined {
  const s = asAws(err).$metadata?.httpStatusCode;
  return typeof s === 'number' ? s : undefined;
}

/** A DynamoDB condition expression failed (single-item write). */
export function isConditionalCheckFailed(err: unknown): boolean {
  return hasName(err, 'ConditionalCheckFailedException');
}

/**
 * The item a failed single-item condition found, when the write asked for it with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`; undefined otherwise (or when no item existed).
 */
export function conditionFailureItem(err: unknown): Record<string, AttributeValue> | undefined {
  return isConditionalCheckFailed(err) ? asAws(err).Item : undefined;
}

/** A `TransactWriteItems` / `TransactGetItems` was cancelled; see {@link cancellationReasons}. */
export function isTransactionCanceled(err: unknown): boolean {
  return hasName(err, 'TransactionCanceledException');
}

type CancellationReason = { Code?: string; Message?: string; Item?: Record<string, unknown> };

/**
 * One reason per transaction action, in action order (`Code: 'None'` for actions that were fine).
 * With `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` a failed condition also carries `Item`.
 * Empty when the error is not a cancellation.
 */
export function cancellationReasons(err: unknown): CancellationReason[] {
  return isTransactionCanceled(err) ? ((asAws(err).CancellationReasons ?? []) as CancellationReason[]) : [];
}

/**
 * What one cancellation reason's `Code` means (DynamoDB's documented reason codes): `condition` (a
 * condition failed), `transient` (a conflict with another transaction or a throttle: the same
 * transaction may be retried), `validation` (the action is invalid, e.g. an item over 400 KB),
 * `other` (including `None` for actions that were fine).
 */
export function cancellationReasonKind(code: string | undefined): 'condition' | 'transient' | 'validation' | 'other' {
  if (code === 'ConditionalCheckFailed') return 'condition';
  if (code === 'TransactionConflict' || code === 'ThrottlingError' || code === 'ProvisionedThroughputExceeded')
    return 'transient';
  if (code === 'ValidationError') return 'validation';
  return 'other';
}

const THROTTLING = [
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'TooManyRequestsException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'KMSThrottlingException',
  'AWS.SimpleQueueService.RequestThrottled',
];

/** The service (or a proxy in front of it) asked us to slow down. */
export function isThrottling(err: unknown): boolean {
  return hasName(err, ...THROTTLING) || asAws(err).$retryable?.throttling === true || httpStatusOf(err) === 429;
}

const NOT_FOUND = [
  'ResourceNotFoundException',
  'QueueDoesNotExist',
  'AWS.SimpleQueueService.NonExistentQueue',
  'NonExistentQueue',
  'NoSuchBucket',
  'NotFound',
  'NoSuchKey',
  'NotFoundException',
];

/** The table, queue, bucket, object, KMS key or schedule does not exist. */
export function isNotFound(err: unknown): boolean {
  return hasName(err, ...NOT_FOUND) || httpStatusOf(err) === 404;
}

/** What `call` answers, or undefined when its resource does not exist; other errors are thrown. */
export async function unlessMissing<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Reading an object failed through the object's own fault, not S3's: no object under the key (its
 * lifetime ended, or it was never written), a key S3 cannot hold, an object that cannot be read
 * back (archived), or an object with no body. Anything else (throttling, 5xx, the network,
 * credentials, a missing bucket) is the service failing, an outage.
 */
export function isObjectFault(err: unknown): boolean {
  return (
    hasName(err, 'NoSuchKey', 'InvalidObjectState', 'KeyTooLongError', 'NoObjectBody') ||
    (httpStatusOf(err) === 404 && !hasName(err, 'NoSuchBucket'))
  );
}

/**
 * S3 answered that a bucket configuration (policy, lifecycle, public access block, default
 * encryption) is absent: the setting is missing (drift), not unsupported by the endpoint.
 */
export function isNoSuchConfiguration(err: unknown): boolean {
  return hasName(
    err,
    'NoSuchBucketPolicy',
    'NoSuchLifecycleConfiguration',
    'NoSuchPublicAccessBlockConfiguration',
    'ServerSideEncryptionConfigurationNotFoundError',
  );
}

/** The caller's credentials are valid but not allowed the call (IAM or a key or bucket policy). */
export function isAccessDenied(err: unknown): boolean {
  return hasName(err, 'AccessDeniedException', 'AccessDenied');
}

/** No credentials were found (the SDK's provider chain came up empty). */
export function isCredentialsMissing(err: unknown): boolean {
  return hasName(err, 'CredentialsProviderError');
}

/** The service rejected the credentials themselves: unknown key, bad signature, expired session. */
export function isCredentialsRejected(err: unknown): boolean {
  return hasName(
    err,
    'UnrecognizedClientException',
    'InvalidClientTokenId',
    'InvalidSignatureException',
    'SignatureDoesNotMatch',
    'ExpiredTokenException',
    'ExpiredToken',
    'IncompleteSignatureException',
    'InvalidAccessKeyId',
  );
}

/** The SDK found no region to send to (neither configured nor in the environment or profile). */
export function isRegionMissing(err: unknown): boolean {
  return asAws(err).message === 'Region is missing';
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * The socket error code when the endpoint could not be reached at all (nothing listening, no
 * DNS, no route), else undefined. Node puts the code on the error, on the first of an
 * AggregateError's `errors` (IPv4 + IPv6 attempts) or on its `cause`. The SDK's own connect
 * timeout (no connection within `connectionTimeout`: packets dropped) has no code: `ETIMEDOUT`.
 */
export function unreachableCode(err: unknown): string | undefined {
  const e = err as
    | { code?: unknown; message?: unknown; errors?: Array<{ code?: unknown }>; cause?: { code?: unknown } }
    | undefined;
  for (const c of [e?.code, e?.errors?.[0]?.code, e?.cause?.code]) {
    if (typeof c === 'string' && UNREACHABLE.has(c)) return c;
  }
  if (typeof e?.message === 'string' && e.message.includes('did not establish a connection')) return 'ETIMEDOUT';
  return undefined;
}

/** The request was malformed or broke a service limit (e.g. a DynamoDB item over 400 KB). */
export function isValidation(err: unknown): boolean {
  return hasName(
    err,
    'ValidationException',
    'ValidationError',
    'InvalidParameterValue',
    'InvalidParameterValueException',
  );
}

/** SQS refused a body over the queue's MaximumMessageSize. */
export function isMessageTooLong(err: unknown): boolean {
  return hasName(err, 'MessageTooLong') || /shorter than|too long/i.test(`${asAws(err).message ?? ''}`);
}

/** A resource with this name exists already (e.g. a retried CreateSchedule). */
export function isConflict(err: unknown): boolean {
  return hasName(err, 'ConflictException', 'ResourceInUseException', 'QueueAlreadyExists') || httpStatusOf(err) === 409;
}

/** The endpoint does not implement the call (emulators): callers skip optional features. */
export function isUnsupported(err: unknown): boolean {
  const status = httpStatusOf(err);
  return (
    hasName(err, 'NotImplemented', 'InvalidAction', 'UnknownOperationException') || status === 501 || status === 405
  );
}

/**
 * A failure of the connection rather than an answer: refused, reset, timed out, DNS. These have no
 * `$metadata.httpStatusCode`.
 */
export function isTransportError(err: unknown): boolean {
  if (httpStatusOf(err) !== undefined) return false;
  const e = asAws(err);
  const n = `${e.name ?? ''} ${e.code ?? ''}`;
  return /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|TimeoutError|RequestTimeout|socket hang up|AbortError/i.test(
    `${n} ${e.message ?? ''}`,
  );
}

/**
 * The contract's error for an AWS call that failed after the SDK's own retries: throttling becomes
 * `ThrottleError` (core backs off and retries), a `ValidationException` becomes a 400
 * `WorkflowWorldError` naming `field` when the caller knows it; anything else is returned as is.
 * Use as `catch (err) { throw toWorldError(err, 'events.create') }`.
 */
export function toWorldError(err: unknown, what: string, field?: string): unknown {
  if (err instanceof ThrottleError || err instanceof WorkflowWorldError) return err;
  if (isThrottling(err)) {
    return new ThrottleError(
      `${what}: AWS kept throttling after the SDK's retries (${namesOf(err)[0] ?? 'HTTP 429'})`,
      { retryAfter: 1 },
    );
  }
  if (isValidation(err)) {
    const msg = asAws(err).message ?? 'request rejected';
    return new WorkflowWorldError(`${what}: ${field ? `${field}: ` : ''}${msg}`, {
      status: 400,
      code: 'INVALID_ARGUMENT',
      field,
    });
  }
  return err;
}
