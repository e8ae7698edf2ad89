/**
 * The variables table ({@link VARIABLES}) and the constants its rows name. A new variable is one
 * row here, its field in world-config.ts and its read in load.ts; `npm run docs:config` then prints
 * it in docs/configuration.md.
 */

import { LOG_LEVELS, type LogLevel } from '../telemetry/log.js';
import {
  BUCKET_RE,
  httpUrlProblem,
  KMS_KEY_RE,
  PREFIX_RE,
  queueProblem,
  REGION_RE,
  ROLE_ARN_RE,
  SCHEDULE_GROUP_RE,
  SECRET_ARN_RE,
  SECRET_RULE,
  TABLE_RE,
} from './checks.js';
import { FLOW_PATH, SQS_MAX_VISIBILITY_SECONDS } from './limits.js';
import { type AnySetting, external, flag, int, type TextSetting, text } from './setting.js';

/**
 * The account's shared schedule group, which always exists: every schedule of the account that
 * does not name a group is in it, so a Scheduler role trusted for it is trusted for all of them.
 */
export const SHARED_SCHEDULE_GROUP = 'default';

/** An endpoint variable; `port`: the local emulator's, for the example. */
const endpoint = (name: string, description: string, port: number): TextSetting =>
  text({ name, description, values: 'http(s) URL', example: `http://127.0.0.1:${port}`, check: httpUrlProblem });

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
  endpoint: endpoint('AWS_ENDPOINT_URL', 'Endpoint for every service (emulators). Per-service variables win.', 4566),
  endpointDynamodb: endpoint('AWS_ENDPOINT_URL_DYNAMODB', 'DynamoDB endpoint, e.g. DynamoDB Local.', 8000),
  endpointSqs: endpoint('AWS_ENDPOINT_URL_SQS', 'SQS endpoint, e.g. fauxqs or ElasticMQ.', 4566),
  endpointS3: endpoint('AWS_ENDPOINT_URL_S3', 'S3 endpoint (path-style is used whenever an endpoint is set).', 4566),
  endpointScheduler: endpoint(
    'AWS_ENDPOINT_URL_SCHEDULER',
    "EventBridge Scheduler endpoint, e.g. the embedded emulator's.",
    4567,
  ),
  endpointKms: endpoint('AWS_ENDPOINT_URL_KMS', "KMS endpoint, e.g. the embedded emulator's.", 4568),
  endpointSecretsManager: endpoint(
    'AWS_ENDPOINT_URL_SECRETS_MANAGER',
    "Secrets Manager endpoint (for EVE_WORLD_AWS_SIGNING_SECRET_ARN), e.g. the embedded emulator's.",
    4569,
  ),
  endpointLambda: endpoint(
    'AWS_ENDPOINT_URL_LAMBDA',
    "Lambda endpoint the worker invokes the host's versions on (deployment affinity in the Lambda shape), e.g. the embedded emulator's.",
    4570,
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
  hostFunction: text({
    name: 'EVE_WORLD_AWS_HOST_FUNCTION',
    unset: 'every delivery goes to EVE_WORLD_AWS_FLOW_URL',
    values: 'a Lambda function name',
    description:
      'The worker\'s host function (the CDK construct sets it): a message whose run is pinned to `lambda:<this name>:<version>` is delivered by Lambda Invoke to that published version, so a run finishes on the build that started it; a version that no longer exists retires its deployment and fails its runs with `DEPLOYMENT_MISMATCH` (docs/design.md, "Deployment affinity on Lambda").',
    example: 'my-agent-Host1234',
    check: (v) => (/^[A-Za-z0-9_-]{1,64}$/.test(v) ? undefined : `must be a Lambda function name, got "${v}"`),
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
    description:
      "Failed deliveries before a message moves to the DLQ: `init` sets it as the queue's redrive policy, which the consumer reads (it counts failures in the message).",
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
  // Deployment affinity (issue 32, src/deployment/): one block.
  deploymentId: text({
    name: 'EVE_WORLD_AWS_DEPLOYMENT_ID',
    unset:
      'derived: `lambda:<function>:<version>` in Lambda, `build:<fingerprint of the workflow build>` on a plain Node host, on a table with deployment affinity; else `eve-world-aws`',
    values: '1-128 of letters, digits and `:._@/-`',
    description:
      "The deployment (immutable build) this process is: what `getDeploymentId()` reports and what new runs are pinned to. Set it when the derived id does not name the build, e.g. a release tag: on a table with deployment affinity, a second build started under the same id is refused (the registry keeps the first build's fingerprint beside it).",
    example: 'release-2026-12-01',
    check: (v) =>
      /^[A-Za-z0-9:._@/-]{1,128}$/.test(v) ? undefined : `must be 1-128 of letters, digits and :._@/-, got "${v}"`,
  }),
  deploymentAffinity: text({
    name: 'EVE_WORLD_AWS_DEPLOYMENT_AFFINITY',
    default: 'auto',
    values: '`auto`, `on`, `off`',
    description:
      'Not what decides deployment affinity: the table does (`eve-world-aws init --deployment-affinity` records it, and every process on the table then takes part or refuses to start). `on` asks the first process on a table that no `init` recorded and that holds no run to record it there (what the CDK construct sets on a new stack\'s host); on any other table a value that disagrees with it is named in a warning and ignored. `auto` and `off`: the table decides alone. docs/operations.md, "Deployment affinity".',
    example: 'on',
    check: (v) => (/^(auto|on|off)$/.test(v) ? undefined : `must be auto, on or off, got "${v}"`),
  }),
  lambdaVersion: external({
    name: 'AWS_LAMBDA_FUNCTION_VERSION',
    default: '-',
    values: 'version number or `$LATEST`',
    description: 'Set by Lambda: the published version that runs, part of the deployment id there.',
  }),
  optimisticInlineStart: external({
    name: 'WORKFLOW_OPTIMISTIC_INLINE_START',
    default: '0',
    values: '`0` or `1`',
    description:
      "Set to the default by `createWorld()` when unset. Core's switch for running an inline step body before its `step_started` commits; core's turbo mode forces it on for a run's first delivery unless this is explicitly `0`. The World sets `0` so every body starts after its `step_started`, where the step lease fences duplicate deliveries; `1` saves one write of latency on a run's first step and allows a duplicated first delivery to run that body twice.",
  }),
  inlineOwnershipLease: external({
    name: 'WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS',
    default: '20',
    values: 'seconds',
    description:
      "Set to the default by `createWorld()` when unset (core's own default is 860). How long core treats a step an inline delivery started as owned by that delivery: another delivery of the run that finds it owned arms a wake for when this ends instead of restarting it. The World's step lease already fences the body itself, so a short value only decides how soon a step whose delivery died (e.g. an early delivery's process was killed) is picked up again; a long one leaves it waiting up to that long.",
  }),
  queueNamespace: external({
    name: 'WORKFLOW_QUEUE_NAMESPACE',
    default: '-',
    values: 'a queue namespace (eve agents: `eve<hex of the agent name>`)',
    description:
      "Core's queue namespace of the app's workflows (`__<namespace>_wkf_workflow_<name>`; unset: `__wkf_workflow_<name>`). The World reads it once, for the liveness backstop, which sends a stranded run's wake to the queue the run's last acknowledged workflow delivery came on, and to this namespace's queue only for a run none was acknowledged for yet (a run whose first message was lost): set it wherever the backstop ticks (the consumer process, the sweeper Lambda) when the app passes its namespace to core in code, as eve does.",
  }),
} as const satisfies Record<string, AnySetting>;
