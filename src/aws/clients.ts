/**
 * AWS SDK clients built from {@link WorldConfig}. Plumbing only: no World semantics here.
 *
 * Retries: the SDK's standard retry strategy (exponential backoff with jitter) covers throttling
 * and transient 5xx on every call; `maxAttempts` is raised because a World call that gives up
 * surfaces as a failed delivery, which is more expensive than waiting a little longer.
 *
 * Timeouts (every client, documented in the README): `connectTimeoutMs` (default 3 s) bounds the
 * TCP/TLS handshake, `requestTimeoutMs` (default 15 s) abandons a request whose socket moves no
 * bytes for that long, e.g. a half-open connection, so the SDK retries on a fresh one instead of
 * blocking a run for minutes. SQS gets 30 s more than the request timeout, so a 20 s long poll is
 * never cut short (an abandoned receive may still take a message, hiding it for its visibility).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KMSClient } from '@aws-sdk/client-kms';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { WorldConfig } from '../config/index.js';
import { instrumentClient } from './call-metrics.js';

export interface AwsClients {
  readonly ddb: DynamoDBClient;
  readonly sqs: SQSClient;
  /**
   * S3 and EventBridge Scheduler are created (and their SDKs loaded) on first use: most runs never
   * offload a value or wait longer than 15 minutes, and loading both SDKs up front adds about 40%
   * to the import time a Lambda cold start pays (bench/, table 5). Memoized: every call returns the
   * same client, so middleware added to it stays.
   */
  s3(): Promise<S3Client>;
  scheduler(): Promise<SchedulerClient>;
  /** KMS, loaded on first use like S3: only Worlds with EVE_WORLD_AWS_KMS_KEY_ID ever call it. */
  kms(): Promise<KMSClient>;
  /** Secrets Manager, loaded on first use: only with EVE_WORLD_AWS_SIGNING_SECRET_ARN. */
  secretsManager(): Promise<SecretsManagerClient>;
  /** Lambda, loaded on first use: only the worker delivering to a host version calls it. */
  lambda(): Promise<LambdaClient>;
}

type Lazy<T> = (() => Promise<T>) & { created?: Promise<T> };

function lazy<T>(make: () => Promise<T>): Lazy<T> {
  const f: Lazy<T> = () => {
    f.created ??= make();
    return f.created;
  };
  return f;
}

const MAX_ATTEMPTS = 8;

/**
 * Local emulators accept any credentials: a loopback endpoint gets the configured static ones, or
 * placeholders. Everything else uses the SDK's default provider chain.
 */
function localCredentials(endpoint: string | undefined, configured: WorldConfig['emulatorCredentials']) {
  if (!endpoint) return undefined;
  const host = new URL(endpoint).hostname;
  const local = host === '127.0.0.1' || host === 'localhost' || host === '::1' || host === '[::1]';
  if (!local) return undefined;
  // A fresh object per client: the SDK annotates the credentials it is given.
  return configured ? { ...configured } : { accessKeyId: 'local', secretAccessKey: 'local' };
}

/**
 * An Invoke of the host answers when the flow route has run the delivery: up to the 15 min Lambda
 * maximum with no bytes moving. The worker's own deadline (an abort signal) ends it sooner.
 */
const INVOKE_ALLOWANCE_MS = 16 * 60_000;

/** SQS long polls wait up to 20 s with no bytes moving; their socket timeout must exceed that. */
const LONG_POLL_ALLOWANCE_MS = 30_000;

function timeouts(config: Pick<WorldConfig, 'connectTimeoutMs' | 'requestTimeoutMs'>, extraMs = 0) {
  return {
    requestHandler: { connectionTimeout: config.connectTimeoutMs, requestTimeout: config.requestTimeoutMs + extraMs },
  };
}

export function createClients(config: WorldConfig): AwsClients {
  const region = config.region ?? (Object.values(config.endpoints).some(Boolean) ? 'us-east-1' : undefined);
  const base = { region, maxAttempts: MAX_ATTEMPTS, ...timeouts(config) };
  const { dynamodb, sqs, s3, scheduler, kms, secretsManager, lambda } = config.endpoints;
  const at = (endpoint: string | undefined) => ({
    ...base,
    endpoint,
    credentials: localCredentials(endpoint, config.emulatorCredentials),
  });
  return {
    ddb: instrumentClient(new DynamoDBClient(at(dynamodb)), 'dynamodb'),
    sqs: instrumentClient(new SQSClient({ ...at(sqs), ...timeouts(config, LONG_POLL_ALLOWANCE_MS) }), 'sqs'),
    s3: lazy(async () => {
      const { S3Client } = await import('@aws-sdk/client-s3');
      return instrumentClient(
        new S3Client({
          ...at(s3),
          // Emulators serve path-style only; checksum-on-demand avoids aws-chunked uploads that
          // some emulators store verbatim (fauxqs and MinIO).
          forcePathStyle: s3 !== undefined,
          requestChecksumCalculation: s3 !== undefined ? 'WHEN_REQUIRED' : undefined,
          responseChecksumValidation: s3 !== undefined ? 'WHEN_REQUIRED' : undefined,
        }),
        's3',
      );
    }),
    scheduler: lazy(async () => {
      const { SchedulerClient } = await import('@aws-sdk/client-scheduler');
      return instrumentClient(new SchedulerClient(at(scheduler)), 'scheduler');
    }),
    kms: lazy(async () => {
      const { KMSClient } = await import('@aws-sdk/client-kms');
      return instrumentClient(new KMSClient(at(kms)), 'kms');
    }),
    secretsManager: lazy(async () => {
      const { SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
      return new SecretsManagerClient(at(secretsManager));
    }),
    lambda: lazy(async () => {
      const { LambdaClient } = await import('@aws-sdk/client-lambda');
      // One attempt per Invoke: a retried Invoke would run the flow route twice; the delivery
      // pipeline decides what a failure means (src/consumer/delivery/invoke.ts).
      return instrumentClient(
        new LambdaClient({ ...at(lambda), ...timeouts(config, INVOKE_ALLOWANCE_MS), maxAttempts: 1 }),
        'lambda',
      );
    }),
  };
}

export function destroyClients(clients: AwsClients): void {
  clients.ddb.destroy();
  clients.sqs.destroy();
  // Only the lazy clients that were created.
  const lazies = [clients.s3, clients.scheduler, clients.kms, clients.secretsManager, clients.lambda];
  for (const f of lazies as Lazy<{ destroy(): void }>[]) {
    f.created?.then((c) => c.destroy()).catch(() => {});
  }
}
