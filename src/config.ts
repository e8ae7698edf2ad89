/**
 * Configuration: the environment and the tuning options -> one typed, frozen object, validated
 * once.
 *
 * Under eve the World factory is called with no arguments, so the environment is the only channel
 * an operator has: it carries the settings a deployment chooses (names, the signing secret, the
 * flow URL, limits, the scheduler role, the KMS key), listed in {@link VARIABLES}. Knobs only tests,
 * benchmarks and embedders turn (poll intervals, thresholds, timeouts) are {@link TUNING} options
 * (`createWorld({ tuning })`, `loadConfig(env, tuning)`), never variables.
 *
 * Invariants:
 * - Each setting's name, default, accepted values and description are written once, in these two
 *   tables; the parser reads them and docs/configuration.md is generated from them
 *   (`npm run docs:config`, checked by test/unit/config-docs.test.ts).
 * - Every failure is a {@link ConfigError} naming the setting, what was wrong and an example.
 * - This is the only module of the runtime that reads `process.env` (components get the parsed
 *   config), and the only one that writes it ({@link applyCoreDefaults}).
 * - Closed by default: cleartext to a remote flow route, unsigned remote deliveries and weak
 *   secrets are refused unless an explicit, documented opt-out is set.
 */
import { FLOW_PATH, SQS_MAX_DELAY_SECONDS, SQS_MAX_VISIBILITY_SECONDS } from './limits.js';
import { LOG_LEVELS, type LogLevel } from './log.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    /** The environment variable, or `tuning.<option>` for an option. */
    readonly variable: string,
    problem: string,
    example: string,
  ) {
    const option = variable.startsWith('tuning.') ? variable.slice('tuning.'.length) : undefined;
    super(
      `${variable} ${problem}. Example: ${option === undefined ? `${variable}=${example}` : `{ tuning: { ${option}: ${example} } }`}`,
    );
  }
}

export interface Endpoints {
  readonly dynamodb?: string;
  readonly sqs?: string;
  readonly s3?: string;
  readonly scheduler?: string;
  readonly kms?: string;
  readonly secretsManager?: string;
}

/** The options of {@link TUNING}: for tests, benchmarks and embedders (`createWorld({ tuning })`). */
export interface WorldTuning {
  /** Values (payloads, chunks, message bodies) larger than this go to S3. */
  readonly payloadThresholdBytes: number;
  /**
   * Stored run/step/event/hook payloads larger than this (or than `payloadThresholdBytes`, the
   * lower wins) go to S3: the storage side of the threshold, chosen by the cost model (docs/design.md,
   * "Inline threshold").
   */
  readonly storageInlineBytes: number;
  /** Fastest live-stream poll interval (ms), used while chunks flow. */
  readonly streamPollMs: number;
  /** Slowest live-stream poll interval (ms), reached by backing off on an idle stream; >= streamPollMs. */
  readonly streamIdlePollMs: number;
  /** The World's `streamFlushIntervalMs`: how long core holds a stream's leading chunk to group it. */
  readonly streamFlushMs: number;
  /**
   * Burst window of core's stream writer (streams/pacing.ts): while chunks keep coming, a write
   * from a burst's third on is acknowledged no earlier than this after it arrived, so the next
   * group collects the chunks of the window (at most 1000 / streamBurstMs PutItems per second per
   * stream); a short reply (two writes) is not held. 0 = off.
   */
  readonly streamBurstMs: number;
  /** Longest single SQS delay hop (s) for long waits without a scheduler (SQS max 900). */
  readonly maxDelayHopSeconds: number;
  /** How long a used idempotency key keeps deduping (s). */
  readonly idempotencyTtlSeconds: number;
  /**
   * Visibility (s) the in-process consumer receives with (ReceiveMessage `VisibilityTimeout`) and
   * extends by heartbeat while a delivery runs: how long a crashed process delays its messages.
   * Never above `visibilityTimeoutSeconds`.
   */
  readonly consumerVisibilitySeconds: number;
  /** SDK: how long to wait for a TCP/TLS connection (ms). */
  readonly connectTimeoutMs: number;
  /**
   * SDK: how long a request may sit with no bytes moving (ms) before it is abandoned and retried.
   * SQS long polls get at least 30 s on top of their wait, so a poll is never cut short.
   */
  readonly requestTimeoutMs: number;
  /** Deployment id reported by getDeploymentId(). */
  readonly deploymentId: string;
}

export interface WorldConfig extends WorldTuning {
  /**
   * `EVE_WORLD_AWS_*` variables set in the environment read that this World does not read (former
   * variables, typos), sorted; {@link variableWarnings} names each one.
   */
  readonly ignoredVariables: readonly string[];
  /** Region for every client; undefined lets the SDK resolve it (profile, IMDS). */
  readonly region?: string;
  readonly endpoints: Endpoints;
  /**
   * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY of the environment read, when both are set: given to
   * clients of loopback endpoints (emulators) only. Real AWS always uses the SDK's provider chain.
   */
  readonly emulatorCredentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Prefix used to derive default resource names. */
  readonly prefix: string;
  readonly tableName: string;
  /** Queue name or full URL; resolved to a URL lazily (GetQueueUrl) when it is a name. */
  readonly queue: string;
  readonly deadLetterQueue: string;
  readonly bucket: string;
  /**
   * Every secret a delivery may be signed with (rotation: sign with the first, verify with any).
   * Empty: only in-process deliveries are accepted (src/consumer/signing.ts).
   */
  readonly signingSecrets: readonly string[];
  /**
   * Secrets Manager secret holding the signing secret(s) (EVE_WORLD_AWS_SIGNING_SECRET_ARN), read
   * at first use instead of {@link signingSecrets} (src/consumer/secret-source.ts).
   */
  readonly signingSecretArn?: string;
  /**
   * EVE_WORLD_AWS_ALLOW_UNSIGNED=1: the explicit opt-out for private networks. Deliveries may go
   * unsigned to a non-loopback flow route, and the flow route accepts unsigned requests.
   */
  readonly allowUnsigned: boolean;
  /**
   * EVE_WORLD_AWS_TRUST_FORWARDED_HOST=1: the flow route also takes the first `x-forwarded-host`
   * as the host a delivery was signed for (behind a proxy that sets it). Off: only `Host` and the
   * request URL's host (src/consumer/signing.ts).
   */
  readonly trustForwardedHost: boolean;
  /** Flow route the consumer POSTs to when no handler is registered in process (explicitly set). */
  readonly flowUrl?: string;
  /** EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1: an `http://` flow URL to a non-loopback host is allowed. */
  readonly allowInsecureFlowUrl: boolean;
  /** PORT: the local `eve start` server, the flow route when no flow URL is set. */
  readonly port: number;
  /** Running inside AWS Lambda (AWS_LAMBDA_FUNCTION_NAME set): the event source mapping consumes. */
  readonly inLambda: boolean;
  /** Concurrent deliveries handled by the in-process consumer (and per Lambda batch). */
  readonly consumerConcurrency: number;
  /** Days a terminal run's items and objects are kept (DynamoDB TTL); undefined = kept forever. */
  readonly retentionDays?: number;
  /**
   * The queue's SQS visibility timeout (s), set by `init`: what the Lambda event source mapping's
   * copies are hidden for (keep it >= the function timeout). Also caps the failure backoff.
   */
  readonly visibilityTimeoutSeconds: number;
  /** Receives before SQS moves a message to the DLQ. */
  readonly maxReceiveCount: number;
  /** EventBridge Scheduler role for long waits; undefined -> 900 s SQS hops. */
  readonly schedulerRoleArn?: string;
  /**
   * Schedule group of the long-wait schedules: by default this World's own, named like the table
   * from {@link prefix}; `init` creates it when a scheduler role is set.
   */
  readonly schedulerGroup: string;
  /**
   * Customer-managed KMS key (id, ARN, alias name or alias ARN). Set: run payloads are
   * envelope-encrypted per run (src/encryption/) and `init` puts table, queue and bucket under it.
   * Unset: no encryption by the World (the AWS-owned at-rest encryption still applies).
   */
  readonly kmsKeyId?: string;
  /** Write EMF metrics (src/telemetry/metrics.ts): EVE_WORLD_AWS_METRICS; unset, on in Lambda only. */
  readonly metrics: boolean;
  /** EVE_WORLD_AWS_LOG_LEVEL (src/log.ts). Lines are JSON in Lambda, text elsewhere. */
  readonly logLevel: LogLevel;
}

/** One row of the documentation, as docs/configuration.md prints it. */
export interface EnvDoc {
  readonly name: string;
  /** The default as the docs show it, in Markdown: a value in code font, prose for a rule (`—`: none). */
  readonly default: string;
  /** Accepted values, e.g. `1-1000`. */
  readonly values: string;
  readonly description: string;
}

type Env = Record<string, string | undefined>;

interface Setting {
  readonly name: string;
  readonly description: string;
  /** A valid value, quoted in error messages. */
  readonly example: string;
}

interface IntSetting extends Setting {
  readonly kind: 'int';
  readonly default?: number;
  readonly min: number;
  readonly max: number;
}

interface FlagSetting extends Setting {
  readonly kind: 'flag';
}

interface TextSetting extends Setting {
  readonly kind: 'text';
  /** The default; `<prefix>` stands for EVE_WORLD_AWS_PREFIX. Absent: unset. */
  readonly default?: string;
  /** Without a default: what happens when it is unset, as the docs show it (Markdown: literals in backticks). */
  readonly unset?: string;
  /** Accepted values, in words (the docs' "Values" column). */
  readonly values: string;
  /** Undefined when `value` is acceptable, else the problem, e.g. `is not a region name`. */
  readonly check?: (value: string) => string | undefined;
}

/** Documented, read by someone else (the SDK, Lambda, core). */
interface ExternalSetting extends Setting {
  readonly kind: 'external';
  readonly default: string;
  readonly values: string;
}

type AnySetting = IntSetting | FlagSetting | TextSetting | ExternalSetting;

const int = <S extends Omit<IntSetting, 'kind' | 'example'> & { example?: string }>(s: S): IntSetting & S => ({
  kind: 'int',
  example: String(s.default ?? s.min),
  ...s,
});
const flag = (s: Omit<FlagSetting, 'kind' | 'example'>): FlagSetting => ({ kind: 'flag', example: '1', ...s });
const text = <S extends Omit<TextSetting, 'kind'>>(s: S): TextSetting & S => ({ kind: 'text', ...s });
const external = (s: Omit<ExternalSetting, 'kind' | 'example'>): ExternalSetting => ({
  kind: 'external',
  example: '',
  ...s,
});

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

function httpUrlProblem(raw: string): string | undefined {
  try {
    const u = new URL(raw);
    if (u.protocol === 'http:' || u.protocol === 'https:') return undefined;
  } catch {
    // fall through
  }
  return `must be an http(s) URL, got "${raw}"`;
}

const endpoint = (name: string, service: string, example: string): TextSetting =>
  text({
    name,
    description: service,
    values: 'http(s) URL',
    example,
    check: httpUrlProblem,
  });

/** The minimum strength of a signing secret (each one, when it is a rotation list). */
export const SECRET_RULE = {
  minLength: 32,
  minDistinct: 8,
  words: 'at least 32 characters, at least 8 distinct characters, and not one shorter string repeated',
} as const;

/** Undefined when `secret` meets {@link SECRET_RULE}, else what is wrong. */
export function secretWeakness(secret: string): string | undefined {
  if (secret.length < SECRET_RULE.minLength) return `is ${secret.length} characters`;
  if (new Set(secret).size < SECRET_RULE.minDistinct) return `has only ${new Set(secret).size} distinct characters`;
  for (let p = 1; p <= secret.length / 2; p++) {
    if (secret.length % p === 0 && secret.slice(0, p).repeat(secret.length / p) === secret)
      return `repeats "${secret.slice(0, p)}"`;
  }
  return undefined;
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
const ROLE_ARN_RE = /^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/;
const SECRET_ARN_RE = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$/;
const REGION_RE = /^[a-z]{2}(-[a-z]+)+-\d+$/;
// EventBridge Scheduler: schedule group names are 1-64 of [0-9a-zA-Z-_.].
const SCHEDULE_GROUP_RE = /^[0-9a-zA-Z_.-]{1,64}$/;

/**
 * The account's shared schedule group, which always exists: every schedule of the account that
 * does not name a group is in it, so a Scheduler role trusted for it is trusted for all of them.
 */
export const SHARED_SCHEDULE_GROUP = 'default';

function queueProblem(raw: string): string | undefined {
  if (/^https?:\/\//.test(raw)) return httpUrlProblem(raw);
  return QUEUE_RE.test(raw)
    ? undefined
    : `is not a valid SQS queue name or URL ("${raw}": 1-80 letters, digits, - or _)`;
}

/**
 * The environment the World reads: the user-facing settings. Order is the documentation's.
 * Why these and no others: docs/configuration.md, "Why these variables".
 */
export const VARIABLES = {
  region: text({
    name: 'AWS_REGION',
    unset: 'SDK default chain',
    values: 'region name',
    description: 'Region for all clients (`AWS_DEFAULT_REGION` is also read).',
    example: 'us-east-1',
    check: (v) => (REGION_RE.test(v) ? undefined : `is not a region name, got "${v}"`),
  }),
  profile: external({
    name: 'AWS_PROFILE',
    default: '-',
    values: 'profile name',
    description: 'Shared-config profile, read by the AWS SDK.',
  }),
  endpoint: endpoint(
    'AWS_ENDPOINT_URL',
    'Endpoint for every service (emulators). Per-service variables win.',
    'http://127.0.0.1:4566',
  ),
  endpointDynamodb: endpoint(
    'AWS_ENDPOINT_URL_DYNAMODB',
    'DynamoDB endpoint, e.g. DynamoDB Local.',
    'http://127.0.0.1:8000',
  ),
  endpointSqs: endpoint('AWS_ENDPOINT_URL_SQS', 'SQS endpoint, e.g. fauxqs or ElasticMQ.', 'http://127.0.0.1:4566'),
  endpointS3: endpoint(
    'AWS_ENDPOINT_URL_S3',
    'S3 endpoint (path-style is used whenever an endpoint is set).',
    'http://127.0.0.1:4566',
  ),
  endpointScheduler: endpoint(
    'AWS_ENDPOINT_URL_SCHEDULER',
    "EventBridge Scheduler endpoint, e.g. the embedded emulator's.",
    'http://127.0.0.1:4567',
  ),
  endpointKms: endpoint('AWS_ENDPOINT_URL_KMS', "KMS endpoint, e.g. the embedded emulator's.", 'http://127.0.0.1:4568'),
  endpointSecretsManager: endpoint(
    'AWS_ENDPOINT_URL_SECRETS_MANAGER',
    "Secrets Manager endpoint (for EVE_WORLD_AWS_SIGNING_SECRET_ARN), e.g. the embedded emulator's.",
    'http://127.0.0.1:4569',
  ),
  port: int({
    name: 'PORT',
    default: 3000,
    min: 1,
    max: 65_535,
    description: 'Port of the local `eve start` server: the flow route is on it when EVE_WORLD_AWS_FLOW_URL is unset.',
  }),
  lambda: external({
    name: 'AWS_LAMBDA_FUNCTION_NAME',
    default: '-',
    values: 'set by Lambda',
    description: 'Set inside AWS Lambda: `start()` then runs no poller (the event source mapping consumes the queue).',
  }),
  prefix: text({
    name: 'EVE_WORLD_AWS_PREFIX',
    default: 'eve-world',
    values: '1-40 of a-z 0-9 -',
    description: 'Prefix for the default resource names below.',
    example: 'my-agent',
    check: (v) => (PREFIX_RE.test(v) ? undefined : `must be 1-40 lowercase letters, digits or hyphens, got "${v}"`),
  }),
  tableName: text({
    name: 'EVE_WORLD_AWS_TABLE',
    default: '<prefix>',
    values: 'DynamoDB table name',
    description: 'DynamoDB table name.',
    example: 'eve-world',
    check: (v) =>
      TABLE_RE.test(v) ? undefined : `is not a valid DynamoDB table name ("${v}": 3-255 letters, digits, _ . -)`,
  }),
  queue: text({
    name: 'EVE_WORLD_AWS_QUEUE',
    default: '<prefix>-queue',
    values: 'SQS queue name or URL',
    description: 'SQS queue name or URL.',
    example: 'eve-world-queue',
    check: queueProblem,
  }),
  deadLetterQueue: text({
    name: 'EVE_WORLD_AWS_DLQ',
    default: '<prefix>-dlq',
    values: 'SQS queue name or URL',
    description: 'Dead-letter queue name or URL.',
    example: 'eve-world-queue',
    check: queueProblem,
  }),
  bucket: text({
    name: 'EVE_WORLD_AWS_BUCKET',
    default: '<prefix>-payloads',
    values: 'S3 bucket name',
    description: 'S3 bucket for large payloads.',
    example: 'my-agent-payloads',
    check: (v) =>
      BUCKET_RE.test(v) && !v.includes('..')
        ? undefined
        : `is not a valid S3 bucket name ("${v}": 3-63 lowercase letters, digits, . or -)`,
  }),
  signingSecret: text({
    name: 'EVE_WORLD_AWS_SIGNING_SECRET',
    values: `comma-separated list, each ${SECRET_RULE.words}`,
    description:
      'HMAC-SHA256 secret for deliveries over HTTP; a comma-separated list rotates: sign with the first, accept any. Required when the flow URL is not a loopback address.',
    example: '$(openssl rand -hex 32)',
  }),
  signingSecretArn: text({
    name: 'EVE_WORLD_AWS_SIGNING_SECRET_ARN',
    values: 'Secrets Manager secret ARN',
    description:
      'Secrets Manager secret holding the signing secret, instead of EVE_WORLD_AWS_SIGNING_SECRET (never both): read at the first delivery and cached; its AWSCURRENT value signs, AWSCURRENT and AWSPREVIOUS verify, so a rotation needs no redeploy. Needs `secretsmanager:GetSecretValue` on that secret. What the CDK construct sets.',
    example: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:eve-world-signing-AbCdEf',
    check: (v) => (SECRET_ARN_RE.test(v) ? undefined : `is not a Secrets Manager secret ARN, got "${v}"`),
  }),
  allowUnsigned: flag({
    name: 'EVE_WORLD_AWS_ALLOW_UNSIGNED',
    description:
      '`1`: allow unsigned deliveries to a non-loopback flow route and accept them there. Private networks only; `start()` logs a warning while it is set.',
  }),
  trustForwardedHost: flag({
    name: 'EVE_WORLD_AWS_TRUST_FORWARDED_HOST',
    description:
      '`1`: the flow route also accepts a delivery signed for the host in the first `x-forwarded-host` header, as well as for `Host`. Set it only where every request reaches the route through a proxy that rewrites `Host` and sets `x-forwarded-host` itself, replacing any the client sent; otherwise a sender chooses the destination its signature is checked against.',
  }),
  flowUrl: text({
    name: 'EVE_WORLD_AWS_FLOW_URL',
    unset: `\`http://127.0.0.1:$PORT${FLOW_PATH}\``,
    values: 'https URL (http only to loopback)',
    description:
      'Flow route the consumer POSTs to when no handler is registered in process. `http://` is refused unless the host is loopback or EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1.',
    example: `https://agent.example.com${FLOW_PATH}`,
    check: httpUrlProblem,
  }),
  allowInsecureFlowUrl: flag({
    name: 'EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL',
    description:
      '`1`: allow an `http://` flow URL to a host that is not loopback (bodies travel in cleartext). Private networks only.',
  }),
  consumerConcurrency: int({
    name: 'EVE_WORLD_AWS_CONCURRENCY',
    default: 8,
    min: 1,
    max: 1000,
    description: 'Deliveries the in-process consumer runs at once (and a Lambda runs per batch).',
  }),
  retentionDays: int({
    name: 'EVE_WORLD_AWS_RETENTION_DAYS',
    min: 1,
    max: 36_500,
    example: '30',
    description:
      "Days a finished run's items and S3 objects are kept before they expire (DynamoDB TTL, bucket lifecycle). Unset: kept. A run's own `$retention: '0'` purges its payloads and S3 objects at once and keeps the payload-free entities for these days (1 day when unset).",
  }),
  visibilityTimeoutSeconds: int({
    name: 'EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS',
    default: 900,
    min: 1,
    max: SQS_MAX_VISIBILITY_SECONDS,
    description: "The queue's SQS visibility timeout (set by `init`); keep it >= your Lambda timeout.",
  }),
  maxReceiveCount: int({
    name: 'EVE_WORLD_AWS_MAX_RECEIVE_COUNT',
    default: 10,
    min: 1,
    max: 1000,
    description: 'Receives before a message moves to the DLQ (set by `init`).',
  }),
  schedulerRoleArn: text({
    name: 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN',
    values: 'IAM role ARN',
    description: 'IAM role EventBridge Scheduler assumes to send to the queue; enables scheduler-based long waits.',
    example: 'arn:aws:iam::123456789012:role/eve-world-scheduler',
    check: (v) => (ROLE_ARN_RE.test(v) ? undefined : `is not an IAM role ARN, got "${v}"`),
  }),
  schedulerGroup: text({
    name: 'EVE_WORLD_AWS_SCHEDULER_GROUP',
    default: '<prefix>',
    values: 'schedule group name (1-64 of a-z A-Z 0-9 - _ .)',
    description: `Schedule group for long-wait schedules: this World's own, which \`init\` creates when EVE_WORLD_AWS_SCHEDULER_ROLE_ARN is set; the Scheduler role trusts only schedules of this group. \`${SHARED_SCHEDULE_GROUP}\` (the account's shared group) only as an explicit choice, which \`init\` warns about.`,
    example: 'eve-world',
    check: (v) =>
      SCHEDULE_GROUP_RE.test(v) ? undefined : `is not a schedule group name ("${v}": 1-64 letters, digits, - _ .)`,
  }),
  kmsKeyId: text({
    name: 'EVE_WORLD_AWS_KMS_KEY_ID',
    values: 'key id, key ARN, alias or alias ARN',
    description:
      'Customer-managed KMS key. Set: step/run/hook payloads and stream chunks are encrypted per run (envelope encryption), and `init` puts table, queue and bucket under the key. Unset: no payload encryption.',
    example: 'alias/eve-world (or arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab)',
    check: (v) =>
      KMS_KEY_RE.test(v) ? undefined : `is not a KMS key id, key ARN, alias name or alias ARN, got "${v}"`,
  }),
  metrics: text({
    name: 'EVE_WORLD_AWS_METRICS',
    unset: '`1` in Lambda, else `0`',
    values: '`1` / `0`',
    description:
      "Write the World's metrics as CloudWatch EMF lines on stdout (namespace `EveWorldAws`, dimension `Queue`): once per Lambda invocation or flow-route request, every minute from the in-process poller. docs/observability.md lists them.",
    example: '1',
    check: (v) => (/^(0|1)$/.test(v) ? undefined : `must be 1 or 0, got "${v}"`),
  }),
  logLevel: text({
    name: 'EVE_WORLD_AWS_LOG_LEVEL',
    default: 'info',
    values: LOG_LEVELS.map((l) => `\`${l}\``).join(', '),
    description:
      'Lowest level logged. Lines are JSON inside Lambda (level, message, runId, messageId, queue, attempt, errorName), text elsewhere.',
    example: 'warn',
    check: (v) =>
      LOG_LEVELS.includes(v as LogLevel) ? undefined : `must be one of ${LOG_LEVELS.join(', ')}, got "${v}"`,
  }),
  optimisticInlineStart: external({
    name: 'WORKFLOW_OPTIMISTIC_INLINE_START',
    default: '0',
    values: '`0` or `1`',
    description:
      "Set to the default by `createWorld()` when unset. Core's switch for running an inline step body before its `step_started` commits; core's turbo mode forces it on for a run's first delivery unless this is explicitly `0`. The World sets `0` so every body starts after its `step_started`, where the step lease fences duplicate deliveries; `1` saves one write of latency on a run's first step and allows a duplicated first delivery to run that body twice.",
  }),
} as const satisfies Record<string, AnySetting>;

/** Options, not variables: `createWorld({ tuning })` or `loadConfig(env, tuning)`. Names are the keys. */
export const TUNING = {
  payloadThresholdBytes: int({
    name: 'payloadThresholdBytes',
    default: 300_000,
    min: 1,
    max: 350_000,
    description: 'Queue bodies and stream chunks larger than this are stored in S3; also caps `storageInlineBytes`.',
  }),
  storageInlineBytes: int({
    name: 'storageInlineBytes',
    default: 16_384,
    min: 1,
    max: 350_000,
    description:
      'Stored payloads (run/step input and output, event data, hook metadata) larger than this, or than `payloadThresholdBytes` if lower, go to S3. Chosen by the cost model (docs/design.md, "Inline threshold").',
  }),
  streamPollMs: int({
    name: 'streamPollMs',
    default: 50,
    min: 5,
    max: 60_000,
    description: 'Live stream poll interval while chunks flow.',
  }),
  streamIdlePollMs: int({
    name: 'streamIdlePollMs',
    default: 1000,
    min: 5,
    max: 60_000,
    description: 'Live stream poll interval after backing off on an idle stream (>= `streamPollMs`).',
  }),
  streamFlushMs: int({
    name: 'streamFlushMs',
    default: 0,
    min: 0,
    max: 10_000,
    description:
      "The World's `streamFlushIntervalMs`: core holds a stream's first chunk after quiet this long to write it with the next ones (`0` = at once; core's `WORKFLOW_STREAM_FLUSH_INTERVAL_MS` overrides it). Trade-off table: bench/README.md.",
  }),
  streamBurstMs: int({
    name: 'streamBurstMs',
    default: 60,
    min: 0,
    max: 1000,
    description:
      "Burst window of a step's stream writer: while chunks keep coming, each write from a burst's third on is acknowledged no earlier than this after it arrived, so core sends the window's chunks as one PutItem (at most 1000 / this puts per second per stream); a short reply (two writes) is acknowledged when durable. `0` = off. Trade-off table: bench/README.md.",
  }),
  maxDelayHopSeconds: int({
    name: 'maxDelayHopSeconds',
    default: 900,
    min: 1,
    max: SQS_MAX_DELAY_SECONDS,
    description: 'Longest SQS delay hop for long waits without a scheduler.',
  }),
  idempotencyTtlSeconds: int({
    name: 'idempotencyTtlSeconds',
    default: 604_800,
    min: 60,
    max: 31_536_000,
    description: 'How long a used idempotency key keeps deduping.',
  }),
  consumerVisibilitySeconds: int({
    name: 'consumerVisibilitySeconds',
    default: 30,
    min: 5,
    max: SQS_MAX_VISIBILITY_SECONDS,
    description:
      'Visibility of copies the in-process consumer receives (never above the queue visibility), extended by heartbeat while a delivery runs; a crashed process delays its messages by at most this.',
  }),
  connectTimeoutMs: int({
    name: 'connectTimeoutMs',
    default: 3000,
    min: 100,
    max: 60_000,
    description: 'AWS SDK connection timeout (TCP + TLS) per attempt.',
  }),
  requestTimeoutMs: int({
    name: 'requestTimeoutMs',
    default: 15_000,
    min: 1000,
    max: 600_000,
    description:
      'AWS SDK request timeout: a request with no bytes moving for this long is abandoned and retried (SQS long polls get 30 s more than their wait).',
  }),
  deploymentId: text({
    name: 'deploymentId',
    default: 'eve-world-aws',
    values: 'string',
    description: 'Deployment id reported to the runtime (`getDeploymentId()`).',
    example: "'dpl_test'",
  }),
} as const satisfies { [K in keyof WorldTuning]: AnySetting };

function documented(s: AnySetting): EnvDoc {
  const values =
    s.kind === 'int'
      ? `${s.min}-${s.max}`
      : s.kind === 'flag'
        ? '`1` / `0`'
        : (s as TextSetting | ExternalSetting).values;
  const def =
    s.kind === 'flag'
      ? '`0`'
      : s.default !== undefined && s.default !== '-'
        ? `\`${s.default}\``
        : s.kind === 'text'
          ? (s.unset ?? '—')
          : '—';
  return { name: s.name, default: def, values, description: s.description };
}

/** The documented environment, from {@link VARIABLES}. */
export const ENV_DOCS: readonly EnvDoc[] = Object.values(VARIABLES).map(documented);
/** The documented tuning options, from {@link TUNING}. */
export const TUNING_DOCS: readonly EnvDoc[] = Object.values(TUNING).map(documented);

// --- parsing --------------------------------------------------------------------------------

/** A source of raw values: the environment, or the tuning options (keyed by option name). */
interface Source {
  raw(s: Setting): string | undefined;
  /** The name errors carry. */
  label(s: Setting): string;
}

function envSource(env: Env): Source {
  return {
    raw: (s) => {
      const v = env[s.name]?.trim();
      return v === undefined || v === '' ? undefined : v;
    },
    label: (s) => s.name,
  };
}

function tuningSource(tuning: Partial<Record<string, unknown>>): Source {
  return {
    raw: (s) => {
      const v = tuning[s.name];
      return v === undefined ? undefined : String(v);
    },
    label: (s) => `tuning.${s.name}`,
  };
}

function readInt(src: Source, s: IntSetting): number | undefined {
  const raw = src.raw(s);
  if (raw === undefined) return s.default;
  if (!/^\d+$/.test(raw)) throw new ConfigError(src.label(s), `must be a whole number, got "${raw}"`, s.example);
  const n = Number(raw);
  if (n < s.min || n > s.max)
    throw new ConfigError(src.label(s), `must be between ${s.min} and ${s.max}, got ${n}`, s.example);
  return n;
}

/** {@link readInt} for a setting with a default. */
function readCount(src: Source, s: IntSetting & { default: number }): number {
  return readInt(src, s) as number;
}

function readFlag(src: Source, s: FlagSetting): boolean {
  const raw = src.raw(s);
  if (raw === undefined) return false;
  if (/^(1|true|yes)$/i.test(raw)) return true;
  if (/^(0|false|no)$/i.test(raw)) return false;
  throw new ConfigError(src.label(s), `must be 1 or 0, got "${raw}"`, s.example);
}

/** The value (or the default, `<prefix>` filled in), checked; undefined when unset without default. */
function readText(src: Source, s: TextSetting, prefix = ''): string | undefined {
  const raw = src.raw(s) ?? s.default?.replace('<prefix>', prefix);
  if (raw === undefined) return undefined;
  const problem = s.check?.(raw);
  if (problem !== undefined) throw new ConfigError(src.label(s), problem, s.example);
  return raw;
}

function readUrl(src: Source, s: TextSetting): string | undefined {
  return readText(src, s)?.replace(/\/+$/, '');
}

function readSecrets(src: Source, s: TextSetting): readonly string[] {
  const secrets = (src.raw(s) ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  secrets.forEach((secret, i) => {
    const weak = secretWeakness(secret);
    if (weak === undefined) return;
    const which = secrets.length > 1 ? `secret ${i + 1} of the rotation list` : 'the secret';
    throw new ConfigError(
      src.label(s),
      `is too weak (${which} ${weak}): each secret must have ${SECRET_RULE.words}`,
      s.example,
    );
  });
  return Object.freeze(secrets);
}

function readTuning(tuning: Partial<WorldTuning>): WorldTuning {
  const src = tuningSource(tuning as Record<string, unknown>);
  const T = TUNING;
  const streamPollMs = readCount(src, T.streamPollMs);
  const streamIdlePollMs = readCount(src, T.streamIdlePollMs);
  if (streamIdlePollMs < streamPollMs) {
    throw new ConfigError(
      src.label(T.streamIdlePollMs),
      `must be >= streamPollMs (${streamPollMs})`,
      String(Math.max(1000, streamPollMs)),
    );
  }
  return {
    payloadThresholdBytes: readCount(src, T.payloadThresholdBytes),
    storageInlineBytes: readCount(src, T.storageInlineBytes),
    streamPollMs,
    streamIdlePollMs,
    streamFlushMs: readCount(src, T.streamFlushMs),
    streamBurstMs: readCount(src, T.streamBurstMs),
    maxDelayHopSeconds: readCount(src, T.maxDelayHopSeconds),
    idempotencyTtlSeconds: readCount(src, T.idempotencyTtlSeconds),
    consumerVisibilitySeconds: readCount(src, T.consumerVisibilitySeconds),
    connectTimeoutMs: readCount(src, T.connectTimeoutMs),
    requestTimeoutMs: readCount(src, T.requestTimeoutMs),
    deploymentId: readText(src, T.deploymentId) as string,
  };
}

/**
 * Parse and validate `env` (user-facing settings) and `tuning` (options). Throws a
 * {@link ConfigError} on the first bad value.
 */
export function loadConfig(env: Env = process.env, tuning: Partial<WorldTuning> = {}): WorldConfig {
  const src = envSource(env);
  const V = VARIABLES;
  const prefix = readText(src, V.prefix) as string;
  // AWS_DEFAULT_REGION is the SDK's older spelling; a bad value is reported as AWS_REGION.
  const region = readText(
    envSource({ [V.region.name]: env[V.region.name]?.trim() || env.AWS_DEFAULT_REGION }),
    V.region,
  );
  const all = readUrl(src, V.endpoint);
  const endpoints: Endpoints = Object.freeze({
    dynamodb: readUrl(src, V.endpointDynamodb) ?? all,
    sqs: readUrl(src, V.endpointSqs) ?? all,
    s3: readUrl(src, V.endpointS3) ?? all,
    scheduler: readUrl(src, V.endpointScheduler) ?? all,
    kms: readUrl(src, V.endpointKms) ?? all,
    secretsManager: readUrl(src, V.endpointSecretsManager) ?? all,
  });
  const signingSecrets = readSecrets(src, V.signingSecret);
  const signingSecretArn = readText(src, V.signingSecretArn);
  if (signingSecretArn !== undefined && signingSecrets.length > 0) {
    throw new ConfigError(
      V.signingSecretArn.name,
      `cannot be set together with ${V.signingSecret.name} (which one would sign?); keep one of them`,
      V.signingSecretArn.example,
    );
  }
  const flowUrl = readUrl(src, V.flowUrl);
  const allowInsecureFlowUrl = readFlag(src, V.allowInsecureFlowUrl);
  if (flowUrl !== undefined) assertFlowUrlEncrypted(flowUrl, allowInsecureFlowUrl);

  return Object.freeze({
    ...readTuning(tuning),
    region,
    endpoints,
    emulatorCredentials:
      env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
        ? Object.freeze({ accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY })
        : undefined,
    prefix,
    tableName: readText(src, V.tableName, prefix) as string,
    queue: readUrlOrName(src, V.queue, prefix),
    deadLetterQueue: readUrlOrName(src, V.deadLetterQueue, prefix),
    bucket: readText(src, V.bucket, prefix) as string,
    signingSecrets,
    signingSecretArn,
    allowUnsigned: readFlag(src, V.allowUnsigned),
    trustForwardedHost: readFlag(src, V.trustForwardedHost),
    flowUrl,
    allowInsecureFlowUrl,
    port: readCount(src, V.port),
    inLambda: src.raw(V.lambda) !== undefined,
    consumerConcurrency: readCount(src, V.consumerConcurrency),
    retentionDays: readInt(src, V.retentionDays),
    visibilityTimeoutSeconds: readCount(src, V.visibilityTimeoutSeconds),
    maxReceiveCount: readCount(src, V.maxReceiveCount),
    schedulerRoleArn: readText(src, V.schedulerRoleArn),
    schedulerGroup: readText(src, V.schedulerGroup, prefix) as string,
    kmsKeyId: readText(src, V.kmsKeyId),
    // Unset: on inside Lambda, whose stdout CloudWatch Logs reads (a terminal would only print JSON).
    metrics: (readText(src, V.metrics) ?? (src.raw(V.lambda) !== undefined ? '1' : '0')) === '1',
    logLevel: readText(src, V.logLevel) as LogLevel,
    ignoredVariables: Object.freeze(ignoredVariables(env)),
  });
}

/**
 * Variables earlier versions read, each with the `createWorld({ tuning })` option that replaced
 * it (docs/configuration.md, "What is no longer a variable"). One still set is ignored, and
 * {@link variableWarnings} says what to do instead.
 */
export const FORMER_VARIABLES: Readonly<Record<string, keyof WorldTuning>> = Object.freeze({
  EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES: 'payloadThresholdBytes',
  EVE_WORLD_AWS_STORAGE_INLINE_BYTES: 'storageInlineBytes',
  EVE_WORLD_AWS_STREAM_POLL_MS: 'streamPollMs',
  EVE_WORLD_AWS_STREAM_IDLE_POLL_MS: 'streamIdlePollMs',
  EVE_WORLD_AWS_STREAM_FLUSH_MS: 'streamFlushMs',
  EVE_WORLD_AWS_STREAM_BURST_MS: 'streamBurstMs',
  EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS: 'maxDelayHopSeconds',
  EVE_WORLD_AWS_IDEMPOTENCY_TTL_SECONDS: 'idempotencyTtlSeconds',
  EVE_WORLD_AWS_CONSUMER_VISIBILITY_SECONDS: 'consumerVisibilitySeconds',
  EVE_WORLD_AWS_CONNECT_TIMEOUT_MS: 'connectTimeoutMs',
  EVE_WORLD_AWS_REQUEST_TIMEOUT_MS: 'requestTimeoutMs',
  EVE_WORLD_AWS_DEPLOYMENT_ID: 'deploymentId',
});

/** `EVE_WORLD_AWS_*` names read by the CLI and the test tooling, not by the World. */
export const TOOL_VARIABLES: readonly string[] = Object.freeze([
  'EVE_WORLD_AWS_DEBUG',
  'EVE_WORLD_AWS_JAVA',
  'EVE_WORLD_AWS_SKIP_BUILD',
]);

function ignoredVariables(env: Env): string[] {
  const read = new Set<string>([...Object.values(VARIABLES).map((v) => v.name), ...TOOL_VARIABLES]);
  return Object.keys(env)
    .filter((k) => k.startsWith('EVE_WORLD_AWS_') && !read.has(k) && (env[k]?.trim() ?? '') !== '')
    .sort();
}

function readUrlOrName(src: Source, s: TextSetting, prefix: string): string {
  const v = readText(src, s, prefix) as string;
  return /^https?:\/\//.test(v) ? v.replace(/\/+$/, '') : v;
}

/** `config` with `tuning` applied over it, validated like {@link loadConfig}'s. */
export function withTuning(config: WorldConfig, tuning: Partial<WorldTuning> | undefined): WorldConfig {
  if (tuning === undefined || Object.keys(tuning).length === 0) return config;
  const current: Partial<WorldTuning> = {};
  for (const k of Object.keys(TUNING) as (keyof WorldTuning)[]) (current as Record<string, unknown>)[k] = config[k];
  return Object.freeze({ ...config, ...readTuning({ ...current, ...tuning }) });
}

/** Where deliveries go over HTTP: the configured flow URL, else the local `eve start` flow route. */
export function defaultFlowUrl(config: Pick<WorldConfig, 'flowUrl' | 'port'>): string {
  return config.flowUrl ?? `http://127.0.0.1:${config.port}${FLOW_PATH}`;
}

/**
 * Closed by default: bodies travel to a remote flow route encrypted. Throws a {@link ConfigError}
 * naming EVE_WORLD_AWS_FLOW_URL for an `http://` URL to a host that is not loopback, unless the
 * explicit opt-out EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1 is set.
 */
function assertFlowUrlEncrypted(flowUrl: string, allowInsecure: boolean): void {
  if (allowInsecure || isLoopbackUrl(flowUrl) || new URL(flowUrl).protocol === 'https:') return;
  throw new ConfigError(
    VARIABLES.flowUrl.name,
    `is cleartext http to a host that is not loopback (${flowUrl}): step inputs and outputs would cross the network unencrypted. ` +
      `Use https (or set ${VARIABLES.allowInsecureFlowUrl.name}=1, on a private network only)`,
    VARIABLES.flowUrl.example,
  );
}

/**
 * Closed by default, checked before any client is built: deliveries to a flow route that is not
 * on this machine must be encrypted (https) and signed, or anyone who can see or reach the route
 * could read bodies or forge deliveries. Throws a {@link ConfigError} naming the setting to fix,
 * unless the URL is loopback or the explicit opt-outs (EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1,
 * EVE_WORLD_AWS_ALLOW_UNSIGNED=1) are set.
 */
export function assertDeliveriesSafe(config: WorldConfig, flowUrl: string): void {
  assertFlowUrlEncrypted(flowUrl, config.allowInsecureFlowUrl);
  if (config.signingSecrets.length > 0 || config.signingSecretArn || config.allowUnsigned || isLoopbackUrl(flowUrl))
    return;
  throw new ConfigError(
    VARIABLES.signingSecret.name,
    `is required: deliveries go to ${flowUrl}, which is not a loopback address, and anyone who can reach an unsigned flow route can run steps. ` +
      `Set the same secret where the consumer runs and where the flow route runs (or ${VARIABLES.allowUnsigned.name}=1, on a private network only)`,
    VARIABLES.signingSecret.example,
  );
}

/**
 * One line per ignored variable ({@link WorldConfig.ignoredVariables}): a former variable with the
 * option that replaced it, any other with the closest name this World reads ({@link closestVariable}).
 */
export function variableWarnings(config: Pick<WorldConfig, 'ignoredVariables'>): string[] {
  return config.ignoredVariables.map((name) => {
    const option = FORMER_VARIABLES[name];
    return option
      ? `[eve-world-aws] ${name} is set but no longer read: it is the option createWorld({ tuning: { ${option} } }) now; unset it (docs/configuration.md).`
      : `[eve-world-aws] ${name} is set but is not a variable of this World (a typo?); it is ignored. Did you mean ${closestVariable(name)}? The variables are listed in docs/configuration.md.`;
  });
}

/** Variables {@link variableWarningsOnce} has named in this process. */
const warnedVariables = new Set<string>();

/**
 * {@link variableWarnings} for the variables no earlier call in this process named: `createWorld()`
 * and the Lambda consumer log these, so each ignored variable is named once per process however
 * many Worlds it builds.
 */
export function variableWarningsOnce(config: Pick<WorldConfig, 'ignoredVariables'>): string[] {
  const fresh = config.ignoredVariables.filter((name) => !warnedVariables.has(name));
  for (const name of fresh) warnedVariables.add(name);
  return variableWarnings({ ignoredVariables: fresh });
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/**
 * The `EVE_WORLD_AWS_*` name this World (or its CLI) reads that is closest to `name` by edit
 * distance (the first of the table's order on a tie), e.g. EVE_WORLD_AWS_PREFIX for the prefix
 * variable with a letter left out.
 */
export function closestVariable(name: string): string {
  const known = [
    ...Object.values(VARIABLES)
      .map((v) => v.name)
      .filter((n) => n.startsWith('EVE_WORLD_AWS_')),
    ...TOOL_VARIABLES,
  ];
  const upper = name.toUpperCase();
  let best = known[0];
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = editDistance(upper, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** The settings that name a resource. */
export type ResourceSetting = 'tableName' | 'queue' | 'deadLetterQueue' | 'bucket';

/**
 * The variable that chose a resource's name, as `NAME=value`: its own variable, or
 * EVE_WORLD_AWS_PREFIX when the name is the one the prefix gives (then the variable of its own is
 * unset, or set to that same name).
 */
export function nameChosenBy(config: Pick<WorldConfig, 'prefix' | ResourceSetting>, setting: ResourceSetting): string {
  const own = VARIABLES[setting];
  if (config[setting] !== own.default.replace('<prefix>', config.prefix)) return `${own.name}=${config[setting]}`;
  const isDefault = config.prefix === VARIABLES.prefix.default;
  return `${VARIABLES.prefix.name}=${config.prefix}${isDefault ? ' (the default)' : ''}`;
}

/** The line `start()` logs while unsigned deliveries are allowed; undefined when they are not. */
export function unsignedWarning(config: Pick<WorldConfig, 'allowUnsigned'>): string | undefined {
  if (!config.allowUnsigned) return undefined;
  return (
    `[eve-world-aws] WARNING: ${VARIABLES.allowUnsigned.name}=1: deliveries may go unsigned and the flow route accepts unsigned requests; ` +
    'anyone who can reach the flow route can run steps. Use it on a private network only; set EVE_WORLD_AWS_SIGNING_SECRET and unset it otherwise.'
  );
}

let cached: WorldConfig | undefined;

/** The process-wide config from `process.env`, parsed on first use. */
export function getConfig(): WorldConfig {
  cached ??= loadConfig(process.env);
  return cached;
}

/**
 * The one write to the environment, for `@workflow/core`, which reads its own variable.
 *
 * Core's turbo mode (default on) forces an optimistic inline start on a run's first delivery: the
 * first step's body runs BEFORE its `step_started` commits (@workflow/core step-executor.js,
 * `optimisticStart`). Two copies of that delivery (SQS at-least-once) would both run it, and no
 * fence on `step_started` (src/storage/write/step-lease.ts) can stop a body that precedes it. Core defers
 * to an explicit `WORKFLOW_OPTIMISTIC_INLINE_START=0` (turbo stays on otherwise), so the World sets
 * that when the operator has set nothing: every body then starts after its `step_started` (cost:
 * the first step's body waits for that one write instead of overlapping it). An explicit `1`
 * keeps optimistic starts, and with them possible duplicate bodies of a run's first step.
 */
export function applyCoreDefaults(env: Env = process.env): void {
  const name = VARIABLES.optimisticInlineStart.name;
  if (env[name] === undefined || env[name] === '') env[name] = VARIABLES.optimisticInlineStart.default;
  // Core's inline-ownership lease (860 s by default) delays the backstop wake another invocation
  // arms for a step a live delivery owns (docs/design.md, "Early delivery"). The step lease fences
  // the body itself, so the World shortens it: a dead owner's step is recovered within 20 s.
  const lease = 'WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS';
  if (env[lease] === undefined || env[lease] === '') env[lease] = '20';
}
