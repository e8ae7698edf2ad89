/**
 * AwsEnvironmentError.of (src/preflight/aws-environment.ts) on the errors the SDK throws: which
 * mistake wins, how endpoints are named, and that anything else is not its business. The errors
 * are shaped as the SDK shapes them; test/integration/preflight/aws-environment.test.ts gets the
 * real ones from real processes.
 */
import { WorkflowWorldError } from '@workflow/errors';
import { describe, expect, it } from 'vitest';
import { unreachableCode } from '../../../src/aws/sdk-errors.js';
import { loadConfig } from '../../../src/config/index.js';
import { AwsEnvironmentError, EMULATOR_FIX, REGION_FIX } from '../../../src/preflight/aws-environment.js';

const refused = (attempts = 8) =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED', $metadata: { attempts } });
const noRegion = () => new Error('Region is missing');
const noCredentials = () =>
  Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' });

const local = loadConfig({
  AWS_REGION: 'us-east-1',
  AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000',
  AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566',
  AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566',
});
const aws = loadConfig({ AWS_REGION: 'eu-west-99' });

describe('AwsEnvironmentError.of', () => {
  it('names each endpoint that did not answer once, with the services behind it, and the emulator fix', () => {
    const e = AwsEnvironmentError.of(local, [
      { service: 'sqs', error: refused() },
      { service: 's3', error: refused() },
    ]);
    expect(e?.problem).toBe('unreachable');
    expect(e?.details).toBe(
      'cannot reach the AWS endpoint http://127.0.0.1:4566 (SQS, S3): ECONNREFUSED after 8 attempts',
    );
    expect(e?.fix).toBe(EMULATOR_FIX);
    expect(e?.message).toBe(`eve-world-aws: ${e?.details}. ${EMULATOR_FIX}`);
    // A call of unknown service (a storage read, the CLI's) is placed by the address its socket
    // tried, else it could be any configured endpoint.
    const at4566 = Object.assign(refused(1), { address: '127.0.0.1', port: 4566 });
    expect(AwsEnvironmentError.of(local, [{ error: at4566 }])?.details).toBe(
      'cannot reach the AWS endpoint http://127.0.0.1:4566: ECONNREFUSED',
    );
    expect(AwsEnvironmentError.of(local, [{ error: refused(1) }])?.details).toBe(
      'cannot reach the AWS endpoint http://127.0.0.1:8000 and http://127.0.0.1:4566: ECONNREFUSED',
    );
  });

  it("against AWS: no DNS name is likelier a misspelt region; anything else is the network's", () => {
    const dns = Object.assign(new Error('getaddrinfo ENOTFOUND dynamodb.eu-west-99.amazonaws.com'), {
      code: 'ENOTFOUND',
    });
    const e = AwsEnvironmentError.of(aws, [{ service: 'dynamodb', error: dns }]);
    expect(e?.details).toBe('no DynamoDB endpoint found for region eu-west-99 (ENOTFOUND)');
    expect(e?.fix).toMatch(/^Check AWS_REGION \(eu-west-99\): is it a region name such as us-east-1\?/);
    const timeout = Object.assign(
      new Error(
        '@smithy/node-http-handler - the request socket did not establish a connection with the server within the configured timeout of 3000 ms.',
      ),
      { name: 'TimeoutError', $metadata: { attempts: 8 } },
    );
    expect(unreachableCode(timeout)).toBe('ETIMEDOUT');
    expect(AwsEnvironmentError.of(aws, [{ service: 'sqs', error: timeout }])?.details).toBe(
      'cannot reach AWS (SQS) in eu-west-99: ETIMEDOUT after 8 attempts',
    );
  });

  it('no region wins over no credentials, which wins over an endpoint that did not answer', () => {
    const all = [
      { service: 'sqs' as const, error: refused() },
      { service: 'dynamodb' as const, error: noCredentials() },
      { service: 's3' as const, error: noRegion() },
    ];
    const e = AwsEnvironmentError.of(aws, all);
    expect(e?.problem).toBe('region');
    expect(e?.message).toBe(`eve-world-aws: no AWS region configured. ${REGION_FIX}`);
    expect(e?.cause).toBe(all[2].error);
    expect(AwsEnvironmentError.of(aws, all.slice(0, 2))?.problem).toBe('credentials');
  });

  it("is a plain Error (core would take a transport-coded world error as retryable) and ignores others' failures", () => {
    const e = AwsEnvironmentError.of(local, [{ service: 'dynamodb', error: refused() }]);
    expect(e).toBeInstanceOf(Error);
    expect(WorkflowWorldError.is(e)).toBe(false);
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    const missing = Object.assign(new Error('no table'), { name: 'ResourceNotFoundException' });
    expect(AwsEnvironmentError.of(local, [{ error: throttled }, { error: missing }])).toBeUndefined();
  });
});
