/**
 * The tuning options: knobs only tests, benchmarks and embedders turn (`createWorld({ tuning })`,
 * `loadConfig(env, tuning)`), never variables. A new option is one row of {@link TUNING} and its
 * field of {@link WorldTuning}; load.ts reads every row, and docs/configuration.md is generated
 * from them.
 */
import { SQS_MAX_DELAY_SECONDS, SQS_MAX_VISIBILITY_SECONDS } from './limits.js';
import { type AnySetting, int, text } from './setting.js';

/** The options of {@link TUNING}: each field's meaning, default and range is its row there. */
export interface WorldTuning {
  readonly payloadThresholdBytes: number;
  readonly storageInlineBytes: number;
  readonly streamPollMs: number;
  readonly streamIdlePollMs: number;
  readonly streamFlushMs: number;
  readonly streamBurstMs: number;
  readonly maxDelayHopSeconds: number;
  readonly idempotencyTtlSeconds: number;
  readonly backstopSeconds: number;
  readonly backstopTickSeconds: number;
  readonly consumerVisibilitySeconds: number;
  readonly copyRunningHoldSeconds: number;
  readonly deploymentHoldMaxSeconds: number;
  readonly retiredHoldMaxSeconds: number;
  readonly registryUnreadableHoldSeconds: number;
  readonly dependencyParkSeconds: number;
  readonly connectTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly deploymentId?: string;
  readonly buildDir?: string;
  readonly deploymentGraceSeconds: number;
}

/** The rows; an option's name is its key. */
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
  backstopSeconds: int({
    name: 'backstopSeconds',
    default: 60,
    min: 1,
    max: 3600,
    description:
      'Liveness backstop: how long an active run that owes work (a step to run, an elapsed wait, a received hook) must be quiet before it is woken, and between checks of an active run. Bound and cost: docs/operations.md, "Liveness backstop".',
  }),
  backstopTickSeconds: int({
    name: 'backstopTickSeconds',
    default: 30,
    min: 0,
    max: 3600,
    description:
      'How often the in-process consumer looks for runs due a backstop check (16 small Queries a tick); `0` = never in this process (the Lambda deployment checks once a minute from the sweeper).',
  }),
  consumerVisibilitySeconds: int({
    name: 'consumerVisibilitySeconds',
    default: 30,
    min: 5,
    max: SQS_MAX_VISIBILITY_SECONDS,
    description:
      'Visibility of copies the in-process consumer receives (never above the queue visibility), extended by heartbeat while a delivery runs; a crashed process delays its messages by at most this.',
  }),
  // The holds of a copy the consumer does not dispatch: each replaces the copy by one SQS shows
  // after the hold. A jittered hold gets up to half of it again (src/util/jitter.ts), so at most
  // 600 s keeps it within one SQS delay (900 s).
  copyRunningHoldSeconds: int({
    name: 'copyRunningHoldSeconds',
    default: 5,
    min: 1,
    max: 600,
    description:
      'How long a copy is held, undispatched, while another copy of its message is being delivered in this process (the `held` outcome, cause `copy-running`).',
  }),
  deploymentHoldMaxSeconds: int({
    name: 'deploymentHoldMaxSeconds',
    default: 60,
    min: 1,
    max: 600,
    description:
      'Deployment affinity: longest hold of another active deployment\'s message while its consumers are silent: 1 s doubling per message up to this, plus up to half again as jitter (1-2 s while they are live). docs/operations.md, "Deployment affinity".',
  }),
  retiredHoldMaxSeconds: int({
    name: 'retiredHoldMaxSeconds',
    default: 8,
    min: 1,
    max: 600,
    description:
      "Deployment affinity: longest hold of this process's own deployment's message once it is retired (left for a consumer of another deployment), doubling from 1 s like `deploymentHoldMaxSeconds`, plus jitter.",
  }),
  registryUnreadableHoldSeconds: int({
    name: 'registryUnreadableHoldSeconds',
    default: 5,
    min: 1,
    max: 600,
    description:
      "Deployment affinity: how long a message is held when its deployment's record could not be read (cause `deployment-registry-unreadable`).",
  }),
  dependencyParkSeconds: int({
    name: 'dependencyParkSeconds',
    default: 15,
    min: 1,
    max: 600,
    description:
      'Longest park of a copy whose delivery could not be built because S3 or the signing-secret source failed (the queue visibility timeout when shorter), plus up to half again as jitter.',
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
    unset: 'EVE_WORLD_AWS_DEPLOYMENT_ID, else derived',
    values: 'string',
    description: 'Deployment id reported to the runtime (`getDeploymentId()`), over EVE_WORLD_AWS_DEPLOYMENT_ID.',
    example: "'dpl_test'",
  }),
  buildDir: text({
    name: 'buildDir',
    unset:
      'found: the eve `.output` the World is bundled into or the entry script is in, else `.well-known/workflow/v1` at or above the entry script or the working folder',
    values: 'folder path',
    description:
      'The workflow build a plain Node host fingerprints into its deployment id with affinity on (and registers beside an id set by hand): the folder `wf build` ran in (or its `.well-known/workflow/v1`), or the `.output` of `eve build`. docs/operations.md, "Deployment affinity".',
    example: "'.output'",
  }),
  deploymentGraceSeconds: int({
    name: 'deploymentGraceSeconds',
    default: 86_400,
    min: 0,
    max: 31_536_000,
    description:
      'Deployment affinity: how long a deployment with no active run must have been quiet (no heartbeat of a live process, no run of it ended) before `deployments retire` without `--force` or the daily sweep retires it. docs/operations.md, "Deployment affinity".',
  }),
} as const satisfies { [K in keyof WorldTuning]: AnySetting };
