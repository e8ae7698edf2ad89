/**
 * Configuration: environment variables -> one typed, frozen object, validated once.
 *
 * Under eve the World factory is called with no arguments, so the environment is the only
 * channel. Every variable is listed in {@link ENV_DOCS} (the README table is generated from the
 * same list), and every failure names the variable, what was wrong and an example value.
 */
import { FLOW_PATH, SQS_MAX_DELAY_SECONDS, SQS_MAX_VISIBILITY_SECONDS } from './limits.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    readonly variable: string,
    problem: string,
    example: string,
  ) {
    super(`${variable} ${problem}. Example: ${variable}=${example}`);
  }
}

export interface Endpoints {
  readonly dynamodb?: string;
  readonly sqs?: string;
  readonly s3?: string;
  readonly scheduler?: string;
  readonly kms?: string;
}

export interface WorldConfig {
  /** Region for every client; undefined lets the SDK resolve it (profile, IMDS). */
  readonly region?: string;
  readonly endpoints: Endpoints;
  /** Prefix used to derive default resource names. */
  readonly prefix: string;
  readonly tableName: string;
  /** Queue name or full URL; resolved to a URL lazily (GetQueueUrl) when it is a name. */
  readonly queue: string;
  readonly deadLetterQueue: string;
  readonly bucket: string;
  /** Values (payloads, chunks, message bodies) larger than this go to S3. */
  readonly payloadThresholdBytes: number;
  /**
   * Stored run/step/event/hook payloads larger than this (or than `payloadThresholdBytes`, the
   * lower wins) go to S3: the storage side of the threshold, chosen by the cost model (README,
   * "Inline threshold"). Absent: `payloadThresholdBytes` alone.
   */
  readonly storageInlineBytes?: number;
  /** Fastest live-stream poll interval (ms), used while chunks flow. */
  readonly streamPollMs: number;
  /** Slowest live-stream poll interval (ms), reached by backing off on an idle stream. */
  readonly streamIdlePollMs: number;
  /** The World's `streamFlushIntervalMs`: how long core holds a stream's leading chunk to group it. */
  readonly streamFlushMs: number;
  /**
   * Burst window of core's stream writer (streams/pacing.ts): while chunks keep coming, a write
   * is acknowledged no earlier than this after it arrived, so the next group collects the chunks
   * of the window (at most 1000 / streamBurstMs PutItems per second per stream). 0 = off.
   */
  readonly streamBurstMs: number;
  /**
   * HMAC secret deliveries are signed with (the first of {@link signingSecrets}); undefined when no
   * secret is configured (then only in-process deliveries are accepted, see src/consumer/signing.ts).
   */
  readonly signingSecret?: string;
  /** Every secret a delivery may be signed with (rotation: sign with the first, verify with any). */
  readonly signingSecrets: readonly string[];
  /**
   * EVE_WORLD_AWS_ALLOW_UNSIGNED=1: the explicit opt-out for private networks. Deliveries may go
   * unsigned to a non-loopback flow route, and the flow route accepts unsigned requests.
   */
  readonly allowUnsigned: boolean;
  /** Flow route the in-process consumer POSTs to when no handler is registered in process. */
  readonly flowUrl?: string;
  /** Concurrent deliveries handled by the in-process consumer. */
  readonly consumerConcurrency: number;
  /** Longest single SQS delay hop (s) for long waits without a scheduler (SQS max 900). */
  readonly maxDelayHopSeconds: number;
  /** How long a used idempotency key keeps deduping (s). */
  readonly idempotencyTtlSeconds: number;
  /** Days a terminal run's items and objects are kept (DynamoDB TTL); undefined = kept forever. */
  readonly retentionDays?: number;
  /**
   * The queue's SQS visibility timeout (s), set by `init`: what the Lambda event source mapping's
   * copies are hidden for (keep it >= the function timeout). Also caps the failure backoff.
   */
  readonly visibilityTimeoutSeconds: number;
  /**
   * Visibility (s) the in-process consumer receives with (ReceiveMessage `VisibilityTimeout`) and
   * extends by heartbeat while a delivery runs: how long a crashed process delays its messages.
   */
  readonly consumerVisibilitySeconds: number;
  /** SDK: how long to wait for a TCP/TLS connection (ms). */
  readonly connectTimeoutMs: number;
  /**
   * SDK: how long a request may sit with no bytes moving (ms) before it is abandoned and retried.
   * SQS long polls get at least 30 s on top of their wait, so a poll is never cut short.
   */
  readonly requestTimeoutMs: number;
  /** Receives before SQS moves a message to the DLQ. */
  readonly maxReceiveCount: number;
  /** EventBridge Scheduler role for long waits; undefined -> 900 s SQS hops. */
  readonly schedulerRoleArn?: string;
  readonly schedulerGroup: string;
  /** Deployment id reported by getDeploymentId(). */
  readonly deploymentId: string;
  /**
   * Customer-managed KMS key (id, ARN, alias name or alias ARN). Set: run payloads are
   * envelope-encrypted per run (src/encryption/) and `init` puts table, queue and bucket under it.
   * Unset: no encryption by the World (the AWS-owned at-rest encryption still applies).
   */
  readonly kmsKeyId?: string;
}

export interface EnvDoc {
  readonly name: string;
  readonly default: string;
  readonly description: string;
}

/** The documented environment; README's table mirrors this list. */
export const ENV_DOCS: readonly EnvDoc[] = [
  {
    name: 'AWS_REGION',
    default: 'SDK default chain',
    description: 'Region for all clients (`AWS_DEFAULT_REGION` is also read).',
  },
  { name: 'AWS_PROFILE', default: '-', description: 'Shared-config profile, read by the AWS SDK.' },
  {
    name: 'AWS_ENDPOINT_URL',
    default: '-',
    description: 'Endpoint for every service (emulators). Per-service variables win.',
  },
  { name: 'AWS_ENDPOINT_URL_DYNAMODB', default: '-', description: 'DynamoDB endpoint, e.g. DynamoDB Local.' },
  { name: 'AWS_ENDPOINT_URL_SQS', default: '-', description: 'SQS endpoint, e.g. fauxqs or ElasticMQ.' },
  {
    name: 'AWS_ENDPOINT_URL_S3',
    default: '-',
    description: 'S3 endpoint (path-style is used whenever an endpoint is set).',
  },
  { name: 'AWS_ENDPOINT_URL_SCHEDULER', default: '-', description: 'EventBridge Scheduler endpoint.' },
  { name: 'AWS_ENDPOINT_URL_KMS', default: '-', description: "KMS endpoint, e.g. the embedded emulator's." },
  { name: 'EVE_WORLD_AWS_PREFIX', default: 'eve-world', description: 'Prefix for the default resource names below.' },
  { name: 'EVE_WORLD_AWS_TABLE', default: '<prefix>', description: 'DynamoDB table name.' },
  { name: 'EVE_WORLD_AWS_QUEUE', default: '<prefix>-queue', description: 'SQS queue name or URL.' },
  { name: 'EVE_WORLD_AWS_DLQ', default: '<prefix>-dlq', description: 'Dead-letter queue name or URL.' },
  { name: 'EVE_WORLD_AWS_BUCKET', default: '<prefix>-payloads', description: 'S3 bucket for large payloads.' },
  {
    name: 'EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES',
    default: '300000',
    description: 'Values larger than this are stored in S3 (max 350000): queue bodies and stream chunks.',
  },
  {
    name: 'EVE_WORLD_AWS_STORAGE_INLINE_BYTES',
    default: '16384',
    description:
      'Stored payloads (run/step input and output, event data, hook metadata) larger than this, or than EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES if lower, are stored in S3 (max 350000). The default is chosen by the cost model in the README ("Inline threshold").',
  },
  { name: 'EVE_WORLD_AWS_STREAM_POLL_MS', default: '50', description: 'Live stream poll interval while chunks flow.' },
  {
    name: 'EVE_WORLD_AWS_STREAM_IDLE_POLL_MS',
    default: '1000',
    description: 'Live stream poll interval after backing off on an idle stream.',
  },
  {
    name: 'EVE_WORLD_AWS_STREAM_FLUSH_MS',
    default: '0',
    description:
      "Core holds a stream's first chunk after quiet this long to write it with the next ones in one request (the World's streamFlushIntervalMs; 0 = send at once; WORKFLOW_STREAM_FLUSH_INTERVAL_MS overrides it). Trade-off table: bench/README.md.",
  },
  {
    name: 'EVE_WORLD_AWS_STREAM_BURST_MS',
    default: '60',
    description:
      "Burst window of a step's stream writer (getWritable()): while chunks keep coming (a write less than two windows after the previous one), each write is acknowledged no earlier than this after it arrived (it is stored and delivered at once), so core sends the chunks of the window as one PutItem: at most 1000 / this puts per second per stream. A chunk after quiet is acknowledged at once. A streaming step ends up to about two windows later (core's drain waits for the paced acknowledgement). 0 = off; 0-1000. Trade-off table: bench/README.md.",
  },
  {
    name: 'EVE_WORLD_AWS_SIGNING_SECRET',
    default: '-',
    description:
      'HMAC-SHA256 secret for deliveries over HTTP (>= 16 chars each); a comma-separated list rotates: sign with the first, accept any. Required when the flow URL is not a loopback address.',
  },
  {
    name: 'EVE_WORLD_AWS_ALLOW_UNSIGNED',
    default: '0',
    description:
      '`1`: allow unsigned deliveries to a non-loopback flow route and accept them there. Private networks only.',
  },
  {
    name: 'EVE_WORLD_AWS_FLOW_URL',
    default: `http://127.0.0.1:$PORT${FLOW_PATH}`,
    description: 'Flow route the in-process consumer POSTs to when no handler is registered.',
  },
  { name: 'EVE_WORLD_AWS_CONCURRENCY', default: '8', description: 'Deliveries the in-process consumer runs at once.' },
  {
    name: 'EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS',
    default: '900',
    description: 'Longest SQS delay hop for long waits without a scheduler (1-900).',
  },
  {
    name: 'EVE_WORLD_AWS_IDEMPOTENCY_TTL_SECONDS',
    default: '604800',
    description: 'How long a used idempotency key keeps deduping.',
  },
  {
    name: 'EVE_WORLD_AWS_RETENTION_DAYS',
    default: '-',
    description:
      "Days a finished run's items (and S3 objects) are kept before they expire (DynamoDB TTL). Unset: kept. A run's own $retention '0' purges its payloads and S3 objects at once and keeps the payload-free entities for these days (1 day when unset).",
  },
  {
    name: 'EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS',
    default: '900',
    description: "The queue's SQS visibility timeout (set by `init`); keep it >= your Lambda timeout.",
  },
  {
    name: 'EVE_WORLD_AWS_CONSUMER_VISIBILITY_SECONDS',
    default: '30',
    description:
      'Visibility of copies the in-process consumer receives (never above EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS), extended by heartbeat while a delivery runs; a crashed process delays its messages by at most this (5-43200).',
  },
  {
    name: 'EVE_WORLD_AWS_CONNECT_TIMEOUT_MS',
    default: '3000',
    description: 'AWS SDK connection timeout (TCP + TLS) per attempt.',
  },
  {
    name: 'EVE_WORLD_AWS_REQUEST_TIMEOUT_MS',
    default: '15000',
    description:
      'AWS SDK request timeout: a request with no bytes moving for this long is abandoned and retried (SQS long polls get 30 s more than their wait).',
  },
  {
    name: 'EVE_WORLD_AWS_MAX_RECEIVE_COUNT',
    default: '10',
    description: 'Receives before a message moves to the DLQ.',
  },
  {
    name: 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN',
    default: '-',
    description: 'IAM role EventBridge Scheduler assumes to send to the queue; enables scheduler-based long waits.',
  },
  { name: 'EVE_WORLD_AWS_SCHEDULER_GROUP', default: 'default', description: 'Schedule group for long-wait schedules.' },
  {
    name: 'EVE_WORLD_AWS_KMS_KEY_ID',
    default: '-',
    description:
      'Customer-managed KMS key (id, ARN or alias). Set: step/run/hook payloads and stream chunks are encrypted per run (envelope encryption), and `init` puts table, queue and bucket under the key. Unset: no payload encryption.',
  },
  {
    name: 'EVE_WORLD_AWS_DEPLOYMENT_ID',
    default: 'eve-world-aws',
    description: 'Deployment id reported to the runtime.',
  },
];

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}

function int(env: Env, name: string, def: number, min: number, max: number, example: string): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`, example);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`, example);
  return n;
}

function bool(env: Env, name: string): boolean {
  const raw = str(env, name);
  if (raw === undefined) return false;
  if (/^(1|true|yes)$/i.test(raw)) return true;
  if (/^(0|false|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be 1 or 0, got "${raw}"`, '1');
}

function url(env: Env, name: string, example: string): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`, example);
  }
  return raw.replace(/\/+$/, '');
}

// DynamoDB: 3-255 of [a-zA-Z0-9_.-]
const TABLE_RE = /^[a-zA-Z0-9_.-]{3,255}$/;
// SQS: 1-80 of [a-zA-Z0-9_-] (no .fifo: the design uses one standard queue), or a URL.
const QUEUE_RE = /^[a-zA-Z0-9_-]{1,80}$/;
// S3: 3-63 lowercase letters, digits, dots and hyphens, starting and ending alphanumeric.
const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
// KMS: key id (UUID or multi-Region mrk-), key ARN, alias name, alias ARN.
const KMS_KEY_RE =
  /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32}|alias\/[a-zA-Z0-9/_-]{1,250}|arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(?:key\/(?:[0-9a-f-]{36}|mrk-[0-9a-f]{32})|alias\/[a-zA-Z0-9/_-]{1,250}))$/;
const PREFIX_RE = /^[a-z0-9][a-z0-9-]{0,39}$/;

function queueRef(env: Env, name: string, def: string): string {
  const raw = str(env, name) ?? def;
  if (/^https?:\/\//.test(raw))
    return url(env, name, 'https://sqs.us-east-1.amazonaws.com/123456789012/eve-world-queue') ?? raw;
  if (!QUEUE_RE.test(raw)) {
    throw new ConfigError(
      name,
      `is not a valid SQS queue name or URL ("${raw}": 1-80 letters, digits, - or _)`,
      'eve-world-queue',
    );
  }
  return raw;
}

/** Parse and validate `env`. Throws {@link ConfigError} on the first bad variable. */
export function loadConfig(env: Env = process.env): WorldConfig {
  const prefix = str(env, 'EVE_WORLD_AWS_PREFIX') ?? 'eve-world';
  if (!PREFIX_RE.test(prefix)) {
    throw new ConfigError(
      'EVE_WORLD_AWS_PREFIX',
      `must be 1-40 lowercase letters, digits or hyphens, got "${prefix}"`,
      'my-agent',
    );
  }
  const tableName = str(env, 'EVE_WORLD_AWS_TABLE') ?? prefix;
  if (!TABLE_RE.test(tableName)) {
    throw new ConfigError(
      'EVE_WORLD_AWS_TABLE',
      `is not a valid DynamoDB table name ("${tableName}": 3-255 letters, digits, _ . -)`,
      'eve-world',
    );
  }
  const bucket = str(env, 'EVE_WORLD_AWS_BUCKET') ?? `${prefix}-payloads`;
  if (!BUCKET_RE.test(bucket) || bucket.includes('..')) {
    throw new ConfigError(
      'EVE_WORLD_AWS_BUCKET',
      `is not a valid S3 bucket name ("${bucket}": 3-63 lowercase letters, digits, . or -)`,
      'my-agent-payloads',
    );
  }
  const region = str(env, 'AWS_REGION') ?? str(env, 'AWS_DEFAULT_REGION');
  if (region !== undefined && !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region)) {
    throw new ConfigError('AWS_REGION', `is not a region name, got "${region}"`, 'us-east-1');
  }
  const all = url(env, 'AWS_ENDPOINT_URL', 'http://127.0.0.1:4566');
  const endpoints: Endpoints = Object.freeze({
    dynamodb: url(env, 'AWS_ENDPOINT_URL_DYNAMODB', 'http://127.0.0.1:8000') ?? all,
    sqs: url(env, 'AWS_ENDPOINT_URL_SQS', 'http://127.0.0.1:4566') ?? all,
    s3: url(env, 'AWS_ENDPOINT_URL_S3', 'http://127.0.0.1:4566') ?? all,
    scheduler: url(env, 'AWS_ENDPOINT_URL_SCHEDULER', 'http://127.0.0.1:4567') ?? all,
    kms: url(env, 'AWS_ENDPOINT_URL_KMS', 'http://127.0.0.1:4568') ?? all,
  });
  const signingSecrets = (str(env, 'EVE_WORLD_AWS_SIGNING_SECRET') ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  if (signingSecrets.some((x) => x.length < 16)) {
    throw new ConfigError(
      'EVE_WORLD_AWS_SIGNING_SECRET',
      'must be at least 16 characters (each, when it is a comma-separated list for rotation)',
      '$(openssl rand -hex 32)',
    );
  }
  const allowUnsigned = bool(env, 'EVE_WORLD_AWS_ALLOW_UNSIGNED');
  const streamPollMs = int(env, 'EVE_WORLD_AWS_STREAM_POLL_MS', 50, 5, 60_000, '50');
  const streamIdlePollMs = int(env, 'EVE_WORLD_AWS_STREAM_IDLE_POLL_MS', 1000, 5, 60_000, '1000');
  if (streamIdlePollMs < streamPollMs) {
    throw new ConfigError(
      'EVE_WORLD_AWS_STREAM_IDLE_POLL_MS',
      `must be >= EVE_WORLD_AWS_STREAM_POLL_MS (${streamPollMs})`,
      String(Math.max(1000, streamPollMs)),
    );
  }
  const schedulerRoleArn = str(env, 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN');
  if (schedulerRoleArn !== undefined && !/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/.test(schedulerRoleArn)) {
    throw new ConfigError(
      'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN',
      `is not an IAM role ARN, got "${schedulerRoleArn}"`,
      'arn:aws:iam::123456789012:role/eve-world-scheduler',
    );
  }
  const kmsKeyId = str(env, 'EVE_WORLD_AWS_KMS_KEY_ID');
  if (kmsKeyId !== undefined && !KMS_KEY_RE.test(kmsKeyId)) {
    throw new ConfigError(
      'EVE_WORLD_AWS_KMS_KEY_ID',
      `is not a KMS key id, key ARN, alias name or alias ARN, got "${kmsKeyId}"`,
      'alias/eve-world (or arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab)',
    );
  }
  const flowUrl = url(env, 'EVE_WORLD_AWS_FLOW_URL', `http://127.0.0.1:3000${FLOW_PATH}`);

  return Object.freeze({
    region,
    endpoints,
    prefix,
    tableName,
    queue: queueRef(env, 'EVE_WORLD_AWS_QUEUE', `${prefix}-queue`),
    deadLetterQueue: queueRef(env, 'EVE_WORLD_AWS_DLQ', `${prefix}-dlq`),
    bucket,
    payloadThresholdBytes: int(env, 'EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES', 300_000, 1, 350_000, '300000'),
    storageInlineBytes: int(env, 'EVE_WORLD_AWS_STORAGE_INLINE_BYTES', 16_384, 1, 350_000, '16384'),
    streamPollMs,
    streamIdlePollMs,
    streamFlushMs: int(env, 'EVE_WORLD_AWS_STREAM_FLUSH_MS', 0, 0, 10_000, '0'),
    streamBurstMs: int(env, 'EVE_WORLD_AWS_STREAM_BURST_MS', 60, 0, 1000, '60'),
    signingSecret: signingSecrets[0],
    signingSecrets: Object.freeze(signingSecrets),
    allowUnsigned,
    flowUrl,
    consumerConcurrency: int(env, 'EVE_WORLD_AWS_CONCURRENCY', 8, 1, 1000, '8'),
    maxDelayHopSeconds: int(env, 'EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS', 900, 1, SQS_MAX_DELAY_SECONDS, '900'),
    idempotencyTtlSeconds: int(env, 'EVE_WORLD_AWS_IDEMPOTENCY_TTL_SECONDS', 604_800, 60, 31_536_000, '604800'),
    retentionDays:
      str(env, 'EVE_WORLD_AWS_RETENTION_DAYS') === undefined
        ? undefined
        : int(env, 'EVE_WORLD_AWS_RETENTION_DAYS', 0, 0, 36_500, '30'),
    visibilityTimeoutSeconds: int(
      env,
      'EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS',
      900,
      1,
      SQS_MAX_VISIBILITY_SECONDS,
      '900',
    ),
    consumerVisibilitySeconds: int(
      env,
      'EVE_WORLD_AWS_CONSUMER_VISIBILITY_SECONDS',
      30,
      5,
      SQS_MAX_VISIBILITY_SECONDS,
      '30',
    ),
    connectTimeoutMs: int(env, 'EVE_WORLD_AWS_CONNECT_TIMEOUT_MS', 3000, 100, 60_000, '3000'),
    requestTimeoutMs: int(env, 'EVE_WORLD_AWS_REQUEST_TIMEOUT_MS', 15_000, 1000, 600_000, '15000'),
    maxReceiveCount: int(env, 'EVE_WORLD_AWS_MAX_RECEIVE_COUNT', 10, 1, 1000, '10'),
    schedulerRoleArn,
    schedulerGroup: str(env, 'EVE_WORLD_AWS_SCHEDULER_GROUP') ?? 'default',
    deploymentId: str(env, 'EVE_WORLD_AWS_DEPLOYMENT_ID') ?? 'eve-world-aws',
    kmsKeyId,
  });
}

/** True for http(s) URLs on this machine: 127.0.0.0/8, ::1 or `localhost`. */
export function isLoopbackUrl(raw: string): boolean {
  let host: string;
  try {
    host = new URL(raw).hostname.toLowerCase();
  } catch {
    return false;
  }
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Closed by default: deliveries to a flow route that is not on this machine must be signed, or
 * anyone who can reach the route could forge them. Throws a {@link ConfigError} naming
 * EVE_WORLD_AWS_SIGNING_SECRET unless a secret is configured, the URL is loopback, or the explicit
 * opt-out EVE_WORLD_AWS_ALLOW_UNSIGNED=1 is set. Pure: call it before any client is built.
 */
export function assertDeliveriesSigned(config: WorldConfig, flowUrl: string): void {
  if (config.signingSecrets.length > 0 || config.allowUnsigned || isLoopbackUrl(flowUrl)) return;
  throw new ConfigError(
    'EVE_WORLD_AWS_SIGNING_SECRET',
    `is required: deliveries go to ${flowUrl}, which is not a loopback address, and anyone who can reach an unsigned flow route can run steps. ` +
      'Set the same secret where the consumer runs and where the flow route runs (or EVE_WORLD_AWS_ALLOW_UNSIGNED=1, on a private network only)',
    '$(openssl rand -hex 32)',
  );
}

let cached: WorldConfig | undefined;

/** The process-wide config from `process.env`, parsed on first use. */
export function getConfig(): WorldConfig {
  cached ??= loadConfig(process.env);
  return cached;
}
