/**
 * What `EveWorldAws` accepts (`EveWorldAwsProps`), and the settings every part reads from it:
 * defaults applied once, and the props that cannot work refused at synth with what to change.
 *
 * The queue's visibility is derived from the consumer's timeout (the worker's, or the host's with
 * `consumer: 'host'`; `visibilityTimeoutFactor`, default 6 as AWS advises for SQS event sources),
 * and is never below it: a factor under 1 is refused, and a timeout beyond the 12 h SQS visibility
 * maximum too. With `consumer: 'host'` the worker's props are refused (there is no worker).
 */
import { Annotations, Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { SQS_MAX_VISIBILITY_SECONDS } from '../config/limits.js';

export interface EveWorldAwsProps {
  /** Directory of the eve app: holds the Dockerfile and `.output/` from `eve build`. */
  readonly app: string;
  /** Dockerfile name inside `app` (create it with `hostDockerfile()`). Default `Dockerfile`. */
  readonly dockerfile?: string;
  /** Replace the host image entirely (e.g. `DockerImageCode.fromEcr`). */
  readonly hostCode?: lambda.DockerImageCode;
  /**
   * Replace the worker code (default: the package's pre-bundled `/lambda` handler). The sweeper
   * function runs the same code with handler `index.sweepHandler`, so a replacement must export it
   * too (or set `sweepSchedule: false`).
   */
  readonly workerCode?: lambda.Code;
  /**
   * When the orphan sweep runs (`eve-world-aws sweep`: deletes orphaned run payloads and expired
   * held queue bodies, which no lifecycle rule removes). Default once a day
   * (`events.Schedule.rate(Duration.days(1))`); `false`: no sweeper function and no rule.
   */
  readonly sweepSchedule?: events.Schedule | false;
  /** Host timeout: the longest turn a client can stream. Default 15 minutes (the Lambda maximum). */
  readonly hostTimeout?: Duration;
  /** Host memory. Default 1024 MB. */
  readonly hostMemorySize?: number;
  /** Worker timeout: it waits for the host's step to finish. Default: the host timeout. */
  readonly workerTimeout?: Duration;
  /** Worker memory. Default 256 MB. */
  readonly workerMemorySize?: number;
  /** Queue visibility = factor x worker timeout (capped at 12 h). Default 6 (AWS guidance); minimum 1. */
  readonly visibilityTimeoutFactor?: number;
  /** Receives before a message moves to the DLQ. Default 10. */
  readonly maxReceiveCount?: number;
  /** SQS records per consumer invocation (the worker's, or the host's with `consumer: 'host'`). Default 10. */
  readonly batchSize?: number;
  /** Wait to fill a batch. Default none (deliver at once: turns are latency sensitive). */
  readonly maxBatchingWindow?: Duration;
  /**
   * Concurrent consumer invocations the event source mapping may run (2-1000). Default 10. With
   * `consumer: 'host'` it is also what the queue may take of the host's concurrency: the rest
   * stays for Function URL requests (docs/deploy.md).
   */
  readonly maxConcurrency?: number;
  /** Table deletion protection. Default true. */
  readonly deletionProtection?: boolean;
  /** What `cdk destroy` does to the table and bucket. Default RETAIN. */
  readonly removalPolicy?: RemovalPolicy;
  /** Extra environment for the host (e.g. the model provider's API key reference). */
  readonly hostEnvironment?: Record<string, string>;
  /** Alarm actions go to this topic when given. */
  readonly alarmTopic?: sns.ITopic;
  /**
   * Tracing of the worker and the host (docs/observability.md). `xray`: X-Ray active tracing on
   * both functions. `adotLayerArn`: an AWS Distro for OpenTelemetry Lambda layer for the worker,
   * started by `AWS_LAMBDA_EXEC_WRAPPER` (`execWrapper`, default `/opt/otel-instrument`, the
   * current ADOT JavaScript layers'; the legacy ones use `/opt/otel-handler`); it registers the SDK
   * the World's and core's spans go to. The host is a container image, so ADOT goes into its
   * Dockerfile instead. Default: neither (the spans cost nothing without an SDK).
   */
  readonly tracing?: { readonly xray?: boolean; readonly adotLayerArn?: string; readonly execWrapper?: string };
  /** The CloudWatch dashboard (World metrics, queues, functions). Default true. */
  readonly dashboard?: boolean;
  /** Oldest-message-age alarm threshold. Default 30 minutes. */
  readonly oldestMessageAgeThreshold?: Duration;
  /** Server access logs for the payload bucket go here when given (cdk-nag AwsSolutions-S1). */
  readonly accessLogsBucket?: s3.IBucket;
  /** Log retention for the functions' log groups. Default one month. */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Customer-managed KMS key for the run data (EVE_WORLD_AWS_KMS_KEY_ID on both functions): each
   * run's payloads are envelope-encrypted under a data key it wraps, and the table, both queues and
   * the bucket are encrypted at rest under it. `'create'` makes a symmetric key with yearly
   * rotation (removed per `removalPolicy`); or pass a key (`kms.Key.fromKeyArn`, not an alias: IAM
   * grants name the key). An imported key's policy must let IAM policies of this account grant its
   * use (the default key policy does). Default: none (AWS-owned keys, no payload encryption).
   */
  readonly kmsKey?: kms.IKey | 'create';
  /**
   * Deployment affinity (docs/design.md, "Deployment affinity on Lambda"): a run finishes on the
   * host version that started it. Each deploy's host version is kept (retained on replacement), the
   * worker invokes each run's version (EVE_WORLD_AWS_HOST_FUNCTION, `lambda:InvokeFunction` on the
   * host's qualified ARNs only), and the host asks for affinity on the table
   * (EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on): a new stack's table records it at the host's first
   * write, since it holds no run yet. The table decides: an existing stack's table that already
   * holds runs keeps what it has until `eve-world-aws init --deployment-affinity`
   * (docs/operations.md, "Deployment affinity"). Default true. `false`: every message goes to the
   * `live` alias and replaced versions are deleted; never on a table that records affinity (the
   * runs of a deleted version fail).
   */
  readonly deploymentAffinity?: boolean;
  /**
   * Which function consumes the work queue (docs/deploy.md, "Who consumes the queue"). `'worker'`
   * (the default): the SQS event source feeds the worker function, which delivers each message
   * signed to the host's flow route (its Function URL, or by Invoke to a run's version). `'host'`:
   * the event source feeds the host's `live` alias itself; the Lambda Web Adapter passes the batch
   * to the flow route (AWS_LWA_PASS_THROUGH_PATH), which delivers each record in the same process:
   * no worker function, no Invoke hop, one billed wait per delivery. `batchSize`,
   * `maxBatchingWindow` and `maxConcurrency` then apply to the host's event source; the worker's
   * props (`workerTimeout`, `workerMemorySize`, `tracing.adotLayerArn`) are refused.
   */
  readonly consumer?: 'worker' | 'host';
}

/** The props the parts share, with their defaults applied and checked. */
export interface Settings {
  /** Which function the work queue's event source feeds (`consumer`). */
  readonly consumer: 'worker' | 'host';
  readonly removalPolicy: RemovalPolicy;
  readonly hostTimeout: Duration;
  readonly workerTimeout: Duration;
  /**
   * The work queue's visibility timeout: factor x the consumer's timeout (the worker's, or the
   * host's when it consumes the queue), capped at the SQS maximum.
   */
  readonly visibilitySeconds: number;
  readonly maxReceiveCount: number;
  readonly maxConcurrency: number;
  readonly deploymentAffinity: boolean;
}

/** Defaults and checks; a doubtful but workable combination is a synth warning on `scope`. */
export function resolveSettings(scope: Construct, props: EveWorldAwsProps): Settings {
  const consumer = props.consumer ?? 'worker';
  if (consumer !== 'worker' && consumer !== 'host')
    throw new Error(`EveWorldAws: consumer must be 'worker' or 'host', got ${JSON.stringify(consumer)}`);
  if (consumer === 'host') {
    const workerOnly = [
      props.workerTimeout !== undefined && 'workerTimeout',
      props.workerMemorySize !== undefined && 'workerMemorySize',
      props.tracing?.adotLayerArn !== undefined && 'tracing.adotLayerArn (put ADOT in the host Dockerfile instead)',
    ].filter(Boolean);
    if (workerOnly.length > 0)
      throw new Error(
        `EveWorldAws: consumer 'host' has no worker function, so ${workerOnly.join(', ')} cannot apply: remove it, or use consumer 'worker'`,
      );
  }
  const hostTimeout = props.hostTimeout ?? Duration.minutes(15);
  // The host consuming the queue waits for its own deliveries: its timeout is the consumer's.
  const workerTimeout = consumer === 'host' ? hostTimeout : (props.workerTimeout ?? hostTimeout);
  const factor = props.visibilityTimeoutFactor ?? 6;
  if (!(factor >= 1))
    throw new Error(
      `EveWorldAws: visibilityTimeoutFactor must be >= 1 (the queue visibility may never be below the worker timeout), got ${factor}`,
    );
  if (workerTimeout.toSeconds() < hostTimeout.toSeconds()) {
    Annotations.of(scope).addWarningV2(
      'eve-world-aws:worker-timeout',
      'workerTimeout is shorter than hostTimeout: a step that runs longer than the worker waits is retried while it still runs',
    );
  }
  const visibilitySeconds = Math.min(SQS_MAX_VISIBILITY_SECONDS, Math.ceil(workerTimeout.toSeconds() * factor));
  if (visibilitySeconds < workerTimeout.toSeconds())
    throw new Error('EveWorldAws: workerTimeout exceeds the 12 h SQS visibility maximum');
  const maxConcurrency = props.maxConcurrency ?? 10;
  if (maxConcurrency < 2 || maxConcurrency > 1000)
    throw new Error(`EveWorldAws: maxConcurrency must be 2-1000 (SQS event source limit), got ${maxConcurrency}`);
  return {
    consumer,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    hostTimeout,
    workerTimeout,
    visibilitySeconds,
    maxReceiveCount: props.maxReceiveCount ?? 10,
    maxConcurrency,
    deploymentAffinity: props.deploymentAffinity !== false,
  };
}
