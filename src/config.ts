/**
 * Configuration: environment variables -> one typed, frozen object, validated once.
 *
 * Under eve the World factory is called with no arguments, so the environment is the only
 * channel. Every variable is listed in {@link ENV_DOCS} (the README table is generated from the
 * same list), and every failure names the variable, what was wrong and an example value.
 */

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
  /** Fastest live-stream poll interval (ms), used while chunks flow. */
  readonly streamPollMs: number;
  /** Slowest live-stream poll interval (ms), reached by backing off on an idle stream. */
  readonly streamIdlePollMs: number;
  /** The World's `streamFlushIntervalMs`: how long core holds a stream's leading chunk to group it. */
  readonly streamFlushMs: number;
  /** HMAC secret for deliveries over HTTP; undefined disables signing and verification. */
  readonly signingSecret?: string;
  /** Flow route the in-process consumer POSTs to when no handler is registered in process. */
  readonly flowUrl?: string;
  /** Concurrent deliveries handled by the in-process consumer. */
  readonly consumerConcurrency: number;
  /** Longest single SQS delay hop (s) for long waits without a scheduler (SQS max 900). */
  readonly maxDelayHopSeconds: number;
  /** How long a used idempotency key keeps deduping (s). */
  readonly idempotencyTtlSeconds: number;
  /** SQS visibility timeout (s) the consumer and `init` use. */
  readonly visibilityTimeoutSeconds: number;
  /** Receives before SQS moves a message to the DLQ. */
  readonly maxReceiveCount: number;
  /** EventBridge Scheduler role for long waits; undefined -> 900 s SQS hops. */
  readonly schedulerRoleArn?: string;
  readonly schedulerGroup: string;
  /** Deployment id reported by getDeploymentId(). */
  readonly deploymentId: string;
}

export interface EnvDoc {
  readonly name: string;
  readonly default: string;
  readonly description: string;
}

/** The documented environment; README's table mirrors this list. */
export const ENV_DOCS: readonly EnvDoc[] = [
  { name: 'AWS_REGION', default: 'SDK default chain', description: 'Region for all clients (`AWS_DEFAULT_REGION` is also read).' },
  { name: 'AWS_PROFILE', default: '-', description: 'Shared-config profile, read by the AWS SDK.' },
  { name: 'AWS_ENDPOINT_URL', default: '-', description: 'Endpoint for every service (emulators). Per-service variables win.' },
  { name: 'AWS_ENDPOINT_URL_DYNAMODB', default: '-', description: 'DynamoDB endpoint, e.g. DynamoDB Local.' },
  { name: 'AWS_ENDPOINT_URL_SQS', default: '-', description: 'SQS endpoint, e.g. fauxqs or ElasticMQ.' },
  { name: 'AWS_ENDPOINT_URL_S3', default: '-', description: 'S3 endpoint (path-style is used whenever an endpoint is set).' },
  { name: 'AWS_ENDPOINT_URL_SCHEDULER', default: '-', description: 'EventBridge Scheduler endpoint.' },
  { name: 'EVE_WORLD_AWS_PREFIX', default: 'eve-world', description: 'Prefix for the default resource names below.' },
  { name: 'EVE_WORLD_AWS_TABLE', default: '<prefix>', description: 'DynamoDB table name.' },
  { name: 'EVE_WORLD_AWS_QUEUE', default: '<prefix>-queue', description: 'SQS queue name or URL.' },
  { name: 'EVE_WORLD_AWS_DLQ', default: '<prefix>-dlq', description: 'Dead-letter queue name or URL.' },
  { name: 'EVE_WORLD_AWS_BUCKET', default: '<prefix>-payloads', description: 'S3 bucket for large payloads.' },
  { name: 'EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES', default: '300000', description: 'Values larger than this are stored in S3 (max 350000).' },
  { name: 'EVE_WORLD_AWS_STREAM_POLL_MS', default: '50', description: 'Live stream poll interval while chunks flow.' },
  { name: 'EVE_WORLD_AWS_STREAM_IDLE_POLL_MS', default: '1000', description: 'Live stream poll interval after backing off on an idle stream.' },
  { name: 'EVE_WORLD_AWS_STREAM_FLUSH_MS', default: '30', description: "Core holds a stream's first chunk this long to write it with the next ones in one request (the World's streamFlushIntervalMs; 0 = send at once; WORKFLOW_STREAM_FLUSH_INTERVAL_MS overrides it). Trade-off table: bench/README.md." },
  { name: 'EVE_WORLD_AWS_SIGNING_SECRET', default: '-', description: 'HMAC-SHA256 secret for deliveries over HTTP (>= 16 chars). Unset: unsigned.' },
  { name: 'EVE_WORLD_AWS_FLOW_URL', default: 'http://127.0.0.1:$PORT/.well-known/workflow/v1/flow', description: 'Flow route the in-process consumer POSTs to when no handler is registered.' },
  { name: 'EVE_WORLD_AWS_CONCURRENCY', default: '8', description: 'Deliveries the in-process consumer runs at once.' },
  { name: 'EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS', default: '900', description: 'Longest SQS delay hop for long waits without a scheduler (1-900).' },
  { name: 'EVE_WORLD_AWS_IDEMPOTENCY_TTL_SECONDS', default: '604800', description: 'How long a used idempotency key keeps deduping.' },
  { name: 'EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS', default: '900', description: 'SQS visibility timeout; keep it >= your Lambda timeout.' },
  { name: 'EVE_WORLD_AWS_MAX_RECEIVE_COUNT', default: '10', description: 'Receives before a message moves to the DLQ.' },
  { name: 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN', default: '-', description: 'IAM role EventBridge Scheduler assumes to send to the queue; enables scheduler-based long waits.' },
  { name: 'EVE_WORLD_AWS_SCHEDULER_GROUP', default: 'default', description: 'Schedule group for long-wait schedules.' },
  { name: 'EVE_WORLD_AWS_DEPLOYMENT_ID', default: 'eve-world-aws', description: 'Deployment id reported to the runtime.' },
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
const PREFIX_RE = /^[a-z0-9][a-z0-9-]{0,39}$/;

function queueRef(env: Env, name: string, def: string): string {
  const raw = str(env, name) ?? def;
  if (/^https?:\/\//.test(raw)) return url(env, name, 'https://sqs.us-east-1.amazonaws.com/123456789012/eve-world-queue') ?? raw;
  if (!QUEUE_RE.test(raw)) {
    throw new ConfigError(name, `is not a valid SQS queue name or URL ("${raw}": 1-80 letters, digits, - or _)`, 'eve-world-queue');
  }
  return raw;
}

/** Parse and validate `env`. Throws {@link ConfigError} on the first bad variable. */
export function loadConfig(env: Env = process.env): WorldConfig {
  const prefix = str(env, 'EVE_WORLD_AWS_PREFIX') ?? 'eve-world';
  if (!PREFIX_RE.test(prefix)) {
    throw new ConfigError('EVE_WORLD_AWS_PREFIX', `must be 1-40 lowercase letters, digits or hyphens, got "${prefix}"`, 'my-agent');
  }
  const tableName = str(env, 'EVE_WORLD_AWS_TABLE') ?? prefix;
  if (!TABLE_RE.test(tableName)) {
    throw new ConfigError('EVE_WORLD_AWS_TABLE', `is not a valid DynamoDB table name ("${tableName}": 3-255 letters, digits, _ . -)`, 'eve-world');
  }
  const bucket = str(env, 'EVE_WORLD_AWS_BUCKET') ?? `${prefix}-payloads`;
  if (!BUCKET_RE.test(bucket) || bucket.includes('..')) {
    throw new ConfigError('EVE_WORLD_AWS_BUCKET', `is not a valid S3 bucket name ("${bucket}": 3-63 lowercase letters, digits, . or -)`, 'my-agent-payloads');
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
  });
  const signingSecret = str(env, 'EVE_WORLD_AWS_SIGNING_SECRET');
  if (signingSecret !== undefined && signingSecret.length < 16) {
    throw new ConfigError('EVE_WORLD_AWS_SIGNING_SECRET', 'must be at least 16 characters', '$(openssl rand -hex 32)');
  }
  const streamPollMs = int(env, 'EVE_WORLD_AWS_STREAM_POLL_MS', 50, 5, 60_000, '50');
  const streamIdlePollMs = int(env, 'EVE_WORLD_AWS_STREAM_IDLE_POLL_MS', 1000, 5, 60_000, '1000');
  if (streamIdlePollMs < streamPollMs) {
    throw new ConfigError('EVE_WORLD_AWS_STREAM_IDLE_POLL_MS', `must be >= EVE_WORLD_AWS_STREAM_POLL_MS (${streamPollMs})`, String(Math.max(1000, streamPollMs)));
  }
  const schedulerRoleArn = str(env, 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN');
  if (schedulerRoleArn !== undefined && !/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/.test(schedulerRoleArn)) {
    throw new ConfigError('EVE_WORLD_AWS_SCHEDULER_ROLE_ARN', `is not an IAM role ARN, got "${schedulerRoleArn}"`, 'arn:aws:iam::123456789012:role/eve-world-scheduler');
  }
  const flowUrl = url(env, 'EVE_WORLD_AWS_FLOW_URL', 'http://127.0.0.1:3000/.well-known/workflow/v1/flow');

  return Object.freeze({
    region,
    endpoints,
    prefix,
    tableName,
    queue: queueRef(env, 'EVE_WORLD_AWS_QUEUE', `${prefix}-queue`),
    deadLetterQueue: queueRef(env, 'EVE_WORLD_AWS_DLQ', `${prefix}-dlq`),
    bucket,
    payloadThresholdBytes: int(env, 'EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES', 300_000, 1, 350_000, '300000'),
    streamPollMs,
    streamIdlePollMs,
    streamFlushMs: int(env, 'EVE_WORLD_AWS_STREAM_FLUSH_MS', 30, 0, 10_000, '30'),
    signingSecret,
    flowUrl,
    consumerConcurrency: int(env, 'EVE_WORLD_AWS_CONCURRENCY', 8, 1, 1000, '8'),
    maxDelayHopSeconds: int(env, 'EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS', 900, 1, 900, '900'),
    idempotencyTtlSeconds: int(env, 'EVE_WORLD_AWS_IDEMPOTENCY_TTL_SECONDS', 604_800, 60, 31_536_000, '604800'),
    visibilityTimeoutSeconds: int(env, 'EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS', 900, 1, 43_200, '900'),
    maxReceiveCount: int(env, 'EVE_WORLD_AWS_MAX_RECEIVE_COUNT', 10, 1, 1000, '10'),
    schedulerRoleArn,
    schedulerGroup: str(env, 'EVE_WORLD_AWS_SCHEDULER_GROUP') ?? 'default',
    deploymentId: str(env, 'EVE_WORLD_AWS_DEPLOYMENT_ID') ?? 'eve-world-aws',
  });
}

let cached: WorldConfig | undefined;

/** The process-wide config from `process.env`, parsed on first use. */
export function getConfig(): WorldConfig {
  cached ??= loadConfig(process.env);
  return cached;
}
