/** src/aws/sdk-errors.ts: recognition by name, code, `__type` and HTTP status; mapping to contract errors. */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { NotFoundException } from '@aws-sdk/client-kms';
import { QueueDoesNotExist } from '@aws-sdk/client-sqs';
import { ThrottleError, WorkflowWorldError } from '@workflow/errors';
import { describe, expect, it } from 'vitest';
import {
  cancellationReasonKind,
  cancellationReasons,
  conditionFailureItem,
  describeError,
  errorName,
  httpStatusOf,
  isAccessDenied,
  isConditionalCheckFailed,
  isCredentialsMissing,
  isCredentialsRejected,
  isNoSuchConfiguration,
  isNotFound,
  isObjectFault,
  isRegionMissing,
  isThrottling,
  isTransactionCanceled,
  isTransportError,
  isValidation,
  toWorldError,
  unreachableCode,
} from '../../../src/aws/sdk-errors.js';

const meta = { $metadata: { httpStatusCode: 400 } };

describe('aws/errors', () => {
  it('recognises SDK classes and plain objects with the same name', () => {
    expect(isConditionalCheckFailed(new ConditionalCheckFailedException({ message: 'x', $metadata: {} }))).toBe(true);
    expect(isConditionalCheckFailed({ name: 'ConditionalCheckFailedException' })).toBe(true);
    expect(isConditionalCheckFailed({ name: 'ValidationException' })).toBe(false);
    expect(isConditionalCheckFailed(undefined)).toBe(false);
    expect(isNotFound(new QueueDoesNotExist({ message: 'x', $metadata: {} }))).toBe(true);
    expect(isNotFound({ Code: 'AWS.SimpleQueueService.NonExistentQueue' })).toBe(true);
    expect(isNotFound({ __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException' })).toBe(true);
    expect(isNotFound({ name: 'Whatever', $metadata: { httpStatusCode: 404 } })).toBe(true);
    expect(isValidation({ name: 'ValidationException', ...meta })).toBe(true);
  });

  it('reads cancellation reasons only from a cancelled transaction', () => {
    const err = new TransactionCanceledException({
      message: 'x',
      $metadata: {},
      CancellationReasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed', Message: 'm' }],
    });
    expect(isTransactionCanceled(err)).toBe(true);
    expect(cancellationReasons(err).map((r) => r.Code)).toEqual(['None', 'ConditionalCheckFailed']);
    expect(cancellationReasons({ name: 'ValidationException' })).toEqual([]);
  });

  it('throttling: by name, by the SDK flag and by HTTP 429', () => {
    expect(isThrottling({ name: 'ProvisionedThroughputExceededException' })).toBe(true);
    expect(isThrottling({ name: 'SlowDown' })).toBe(true);
    expect(isThrottling({ name: 'X', $retryable: { throttling: true } })).toBe(true);
    expect(isThrottling({ name: 'X', $metadata: { httpStatusCode: 429 } })).toBe(true);
    expect(isThrottling({ name: 'ValidationException', ...meta })).toBe(false);
    expect(httpStatusOf({ $metadata: { httpStatusCode: 503 } })).toBe(503);
    expect(httpStatusOf(new Error('x'))).toBeUndefined();
  });

  it('transport errors have no HTTP status', () => {
    expect(
      isTransportError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
    expect(isTransportError({ name: 'TimeoutError', message: 'socket timed out' })).toBe(true);
    expect(isTransportError({ name: 'InternalServerError', $metadata: { httpStatusCode: 500 } })).toBe(false);
  });

  it('toWorldError: throttling after retries -> ThrottleError; validation -> 400 naming the field; else unchanged', () => {
    const t = toWorldError({ name: 'ThrottlingException', message: 'slow' }, 'events.create');
    expect(t).toBeInstanceOf(ThrottleError);
    expect((t as ThrottleError).retryAfter).toBe(1);
    const v = toWorldError(
      { name: 'ValidationException', message: 'Item size has exceeded the maximum allowed size' },
      'events.create',
      'eventData',
    );
    expect(v).toBeInstanceOf(WorkflowWorldError);
    expect(v).toMatchObject({ status: 400, code: 'INVALID_ARGUMENT', field: 'eventData' });
    expect((v as Error).message).toContain('eventData');
    const other = new Error('boom');
    expect(toWorldError(other, 'x')).toBe(other);
  });

  it('names and describes an error by what AWS answered', () => {
    expect(errorName({ name: 'AccessDeniedException', message: 'no' })).toBe('AccessDeniedException');
    expect(errorName({ __type: 'com.amazon.coral.service#UnrecognizedClientException' })).toBe(
      'UnrecognizedClientException',
    );
    expect(errorName('boom')).toBe('');
    expect(describeError({ name: 'DisabledException', message: 'key is disabled' })).toBe(
      'DisabledException: key is disabled',
    );
    expect(describeError('boom')).toBe('Error: boom');
  });

  it('the item a failed condition found, only from a condition failure', () => {
    const Item = { PK: { S: 'a' } };
    // A plain object with the name (another SDK copy's class, an emulator) counts like the class.
    expect(conditionFailureItem({ name: 'ConditionalCheckFailedException', Item })).toBe(Item);
    expect(conditionFailureItem(new ConditionalCheckFailedException({ message: 'x', $metadata: {}, Item }))).toBe(Item);
    expect(conditionFailureItem({ name: 'ConditionalCheckFailedException' })).toBeUndefined();
    expect(conditionFailureItem({ name: 'ValidationException', Item })).toBeUndefined();
  });

  it('KMS NotFoundException (HTTP 400) is not found', () => {
    expect(
      isNotFound(new NotFoundException({ message: 'Key does not exist', $metadata: { httpStatusCode: 400 } })),
    ).toBe(true);
  });

  it('S3: a missing bucket configuration is absent, not a missing bucket', () => {
    for (const name of [
      'NoSuchBucketPolicy',
      'NoSuchLifecycleConfiguration',
      'NoSuchPublicAccessBlockConfiguration',
      'ServerSideEncryptionConfigurationNotFoundError',
    ])
      expect(isNoSuchConfiguration({ name, $metadata: { httpStatusCode: 404 } }), name).toBe(true);
    expect(isNoSuchConfiguration({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } })).toBe(false);
  });

  it("S3 reads: the object's own fault (gone, archived, no body) versus the service failing", () => {
    for (const name of ['NoSuchKey', 'InvalidObjectState', 'KeyTooLongError', 'NoObjectBody']) {
      expect(isObjectFault(Object.assign(new Error(name), { name }))).toBe(true);
    }
    expect(isObjectFault({ name: 'NotFound', $metadata: { httpStatusCode: 404 } })).toBe(true);
    // A missing bucket, throttling, 5xx, the network, credentials: S3 (or its setup) failing.
    expect(isObjectFault({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } })).toBe(false);
    expect(isObjectFault({ name: 'SlowDown', $metadata: { httpStatusCode: 503 } })).toBe(false);
    expect(isObjectFault({ name: 'InternalError', $metadata: { httpStatusCode: 500 } })).toBe(false);
    expect(isObjectFault(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isObjectFault({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } })).toBe(false);
  });

  it('credentials: missing, rejected, or valid but not allowed', () => {
    expect(isCredentialsMissing({ name: 'CredentialsProviderError', message: 'Could not load credentials' })).toBe(
      true,
    );
    expect(isCredentialsRejected({ name: 'UnrecognizedClientException', ...meta })).toBe(true);
    expect(isCredentialsRejected({ Code: 'SignatureDoesNotMatch', ...meta })).toBe(true);
    expect(isCredentialsRejected({ name: 'ExpiredTokenException', ...meta })).toBe(true);
    expect(isAccessDenied({ name: 'AccessDeniedException', ...meta })).toBe(true);
    expect(isAccessDenied({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } })).toBe(true);
    expect(isAccessDenied({ name: 'UnrecognizedClientException', ...meta })).toBe(false);
    expect(isCredentialsRejected({ name: 'AccessDeniedException', ...meta })).toBe(false);
    expect(isRegionMissing(new Error('Region is missing'))).toBe(true);
    expect(isRegionMissing(new Error('Region is us-east-1'))).toBe(false);
  });

  it('unreachable endpoints: the socket code, on the error, an AggregateError or its cause', () => {
    expect(unreachableCode(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      'ECONNREFUSED',
    );
    expect(unreachableCode(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]))).toBe(
      'ECONNREFUSED',
    );
    expect(unreachableCode(new Error('x', { cause: { code: 'UND_ERR_CONNECT_TIMEOUT' } }))).toBe(
      'UND_ERR_CONNECT_TIMEOUT',
    );
    expect(unreachableCode({ code: 'ERR_SOMETHING_ELSE' })).toBeUndefined();
    expect(unreachableCode({ name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } })).toBeUndefined();
  });

  it('classifies transaction cancellation reason codes', () => {
    expect(cancellationReasonKind('ConditionalCheckFailed')).toBe('condition');
    expect(cancellationReasonKind('TransactionConflict')).toBe('transient');
    expect(cancellationReasonKind('ThrottlingError')).toBe('transient');
    expect(cancellationReasonKind('ProvisionedThroughputExceeded')).toBe('transient');
    expect(cancellationReasonKind('ValidationError')).toBe('validation');
    expect(cancellationReasonKind('None')).toBe('other');
    expect(cancellationReasonKind(undefined)).toBe('other');
  });
});
