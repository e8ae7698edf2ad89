/**
 * AWS SDK clients built from {@link WorldConfig}. Plumbing only: no World semantics here.
 *
 * Retries: the SDK's standard retry strategy (exponential backoff with jitter) covers throttling
 * and transient 5xx on every call; `maxAttempts` is raised because a World call that gives up
 * surfaces as a failed delivery, which is more expensive than waiting a little longer.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { WorldConfig } from '../config.js';

export interface AwsClients {
  readonly ddb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  readonly scheduler: SchedulerClient;
}

const MAX_ATTEMPTS = 8;

/** Local emulators accept any credentials; real AWS uses the default provider chain. */
function localCredentials(endpoint: string | undefined) {
  if (!endpoint) return undefined;
  const host = new URL(endpoint).hostname;
  const local = host === '127.0.0.1' || host === 'localhost' || host === '::1' || host === '[::1]';
  if (!local || (process.env.AWS_ACCESS_KEY_ID && process.env.AWS_SECRET_ACCESS_KEY)) return undefined;
  return { accessKeyId: 'local', secretAccessKey: 'local' };
}

export function createClients(config: WorldConfig): AwsClients {
  const region = config.region ?? (Object.values(config.endpoints).some(Boolean) ? 'us-east-1' : undefined);
  const base = { region, maxAttempts: MAX_ATTEMPTS };
  const { dynamodb, sqs, s3, scheduler } = config.endpoints;
  return {
    ddb: new DynamoDBClient({ ...base, endpoint: dynamodb, credentials: localCredentials(dynamodb) }),
    sqs: new SQSClient({ ...base, endpoint: sqs, credentials: localCredentials(sqs) }),
    s3: new S3Client({
      ...base,
      endpoint: s3,
      credentials: localCredentials(s3),
      // Emulators serve path-style only; checksum-on-demand avoids aws-chunked uploads that some
      // emulators store verbatim (see reference/emulators.md).
      forcePathStyle: s3 !== undefined,
      requestChecksumCalculation: s3 !== undefined ? 'WHEN_REQUIRED' : undefined,
      responseChecksumValidation: s3 !== undefined ? 'WHEN_REQUIRED' : undefined,
    }),
    scheduler: new SchedulerClient({ ...base, endpoint: scheduler, credentials: localCredentials(scheduler) }),
  };
}

export function destroyClients(clients: AwsClients): void {
  clients.ddb.destroy();
  clients.sqs.destroy();
  clients.s3.destroy();
  clients.scheduler.destroy();
}
