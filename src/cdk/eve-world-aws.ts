/**
 * `EveWorldAws`: the whole stack for an eve agent on AWS Lambda, nothing always on.
 *
 * - Table from the same schema `init` creates (src/ddb.ts TABLE_SCHEMA), on demand, PITR on,
 *   deletion protection on by default.
 * - Work queue + DLQ (redrive after `maxReceiveCount`), SSE-SQS, TLS only. The visibility timeout
 *   is derived from the worker timeout (`visibilityTimeoutFactor`, default 6 as AWS advises for
 *   SQS event sources; validated to be at least 1, i.e. never below the timeout).
 * - Payload bucket: public access blocked, SSE-S3, TLS-only policy, the lifecycle rules of `init`.
 * - EventBridge Scheduler group + a role that can only `sqs:SendMessage` to this queue.
 * - A generated signing secret (Secrets Manager) shared by the host and the worker: they get its
 *   ARN and `secretsmanager:GetSecretValue` on it, never the value (docs/security.md).
 * - Host: the eve app (`eve build` output) in a container with the Lambda Web Adapter, Function
 *   URL in RESPONSE_STREAM mode. Worker: the package's bundled `/lambda` handler on Node 24, an SQS
 *   event source with ReportBatchItemFailures, delivering signed to the host's flow route.
 * - Optional customer-managed KMS key (`kmsKey`: an existing key, or `'create'` for a new one with
 *   yearly rotation): table, both queues and the bucket are encrypted under it, both functions get
 *   EVE_WORLD_AWS_KMS_KEY_ID (per-run envelope encryption of payloads), and the Scheduler role may
 *   use it to send to the SSE-KMS queue.
 * - Grants generated from the command table shared with `init --print-iam-policy`.
 * - The orphan sweep, daily by default (`sweepSchedule`): a second function from the worker's
 *   asset (handler `index.sweepHandler`), triggered by an EventBridge rule, reserved concurrency 1
 *   (two sweeps never overlap), with only the `sweeper` rows of the command table.
 * - Alarms on DLQ depth, oldest-message age, worker errors and sweep failures, and on the World's
 *   own metrics (dead-letters, breaker opens, sustained throttling); a dashboard (./observability.ts);
 *   X-Ray / ADOT tracing as an option (`tracing`). Optional SNS topic for the alarm actions.
 *
 * The flow route is public on the Function URL but refuses unsigned requests: the World's queue
 * handler verifies the HMAC signature with the secret EVE_WORLD_AWS_SIGNING_SECRET_ARN names (see
 * README "Deploy to AWS" and docs/security.md).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Annotations, ArnFormat, CfnOutput, Duration, Names, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventsTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TABLE_SCHEMA } from '../ddb.js';
import {
  FLOW_PATH as FLOW_ROUTE,
  MAX_MESSAGE_SIZE,
  MESSAGE_RETENTION_SECONDS,
  PAYLOAD_EXPIRY_DAYS,
  PAYLOAD_PREFIXES,
  SQS_MAX_VISIBILITY_SECONDS,
} from '../limits.js';
import { SCHEDULER_ROLE_ACTIONS, SCHEDULER_ROLE_KMS_ACTIONS } from '../provision/iam-actions.js';
import { HOST_PORT, READINESS_PATH } from './dockerfile.js';
import { grantFromTable, nagResourceName } from './grants.js';
import { worldAlarms, worldDashboard } from './observability.js';
import { requireWorkerAsset, SWEEP_HANDLER, WORKER_HANDLER } from './worker-asset.js';

/** The flow route path eve serves (and the worker POSTs to), relative to the host URL. */
export const FLOW_PATH = FLOW_ROUTE.slice(1);

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
  /** SQS records per worker invocation. Default 10. */
  readonly batchSize?: number;
  /** Wait to fill a batch. Default none (deliver at once: turns are latency sensitive). */
  readonly maxBatchingWindow?: Duration;
  /** Concurrent worker invocations the event source mapping may run (2-1000). Default 10. */
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
   * current ADOT JavaScript layers'; the legacy ones use `/opt/otel-handler`); it registers the
   * SDK the World's and core's spans go to. The host is a container image, so ADOT goes into its
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
}

export class EveWorldAws extends Construct {
  readonly table: dynamodb.Table;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly bucket: s3.Bucket;
  readonly scheduleGroup: scheduler.CfnScheduleGroup;
  readonly schedulerRole: iam.Role;
  readonly signingSecret: secretsmanager.Secret;
  readonly hostFunction: lambda.DockerImageFunction;
  readonly hostUrl: lambda.FunctionUrl;
  readonly workerFunction: lambda.Function;
  /** The scheduled orphan sweep (absent with `sweepSchedule: false`). */
  readonly sweeperFunction?: lambda.Function;
  /** The EventBridge rule that invokes {@link sweeperFunction}. */
  readonly sweepRule?: events.Rule;
  readonly alarms: cloudwatch.Alarm[];
  /** The operator's dashboard, unless `dashboard: false`. */
  readonly dashboard?: cloudwatch.Dashboard;
  /** The run-data key, when `kmsKey` is set. */
  readonly kmsKey?: kms.IKey;

  constructor(scope: Construct, id: string, props: EveWorldAwsProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const hostTimeout = props.hostTimeout ?? Duration.minutes(15);
    const workerTimeout = props.workerTimeout ?? hostTimeout;
    const factor = props.visibilityTimeoutFactor ?? 6;
    if (!(factor >= 1))
      throw new Error(
        `EveWorldAws: visibilityTimeoutFactor must be >= 1 (the queue visibility may never be below the worker timeout), got ${factor}`,
      );
    if (workerTimeout.toSeconds() < hostTimeout.toSeconds()) {
      Annotations.of(this).addWarningV2(
        'eve-world-aws:worker-timeout',
        'workerTimeout is shorter than hostTimeout: a step that runs longer than the worker waits is retried while it still runs',
      );
    }
    const visibilitySeconds = Math.min(SQS_MAX_VISIBILITY_SECONDS, Math.ceil(workerTimeout.toSeconds() * factor));
    if (visibilitySeconds < workerTimeout.toSeconds())
      throw new Error('EveWorldAws: workerTimeout exceeds the 12 h SQS visibility maximum');
    const maxReceiveCount = props.maxReceiveCount ?? 10;
    const maxConcurrency = props.maxConcurrency ?? 10;
    if (maxConcurrency < 2 || maxConcurrency > 1000)
      throw new Error(`EveWorldAws: maxConcurrency must be 2-1000 (SQS event source limit), got ${maxConcurrency}`);

    // ---- optional customer-managed key for everything the runs write ----
    this.kmsKey =
      props.kmsKey === 'create'
        ? new kms.Key(this, 'Key', {
            description: 'eve-world-aws run data: per-run data keys, and the table, queues and bucket at rest',
            enableKeyRotation: true,
            removalPolicy,
          })
        : props.kmsKey;
    const key = this.kmsKey;

    // ---- table: the schema `init` creates ----
    const attrType = (name: string) => {
      const def = TABLE_SCHEMA.attributeDefinitions.find((a) => a.AttributeName === name);
      if (!def) throw new Error(`TABLE_SCHEMA has no attribute definition for ${name}`);
      return def.AttributeType === 'S'
        ? dynamodb.AttributeType.STRING
        : def.AttributeType === 'N'
          ? dynamodb.AttributeType.NUMBER
          : dynamodb.AttributeType.BINARY;
    };
    const keyOf = (type: 'HASH' | 'RANGE') => {
      const k = TABLE_SCHEMA.keySchema.find((x) => x.KeyType === type);
      if (!k) throw new Error(`TABLE_SCHEMA has no ${type} key`);
      return { name: k.AttributeName, type: attrType(k.AttributeName) };
    };
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: keyOf('HASH'),
      sortKey: keyOf('RANGE'),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: props.deletionProtection ?? true,
      ...(key ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: key } : {}),
      removalPolicy,
    });
    for (const g of TABLE_SCHEMA.gsis) {
      this.table.addGlobalSecondaryIndex({
        indexName: g.name,
        partitionKey: { name: g.pk, type: attrType(g.pk) },
        sortKey: { name: g.sk, type: attrType(g.sk) },
        // The projection `init` creates: the listing attributes only, not every item's payload.
        projectionType: dynamodb.ProjectionType.INCLUDE,
        nonKeyAttributes: [...g.projection.NonKeyAttributes],
      });
    }

    // ---- queues (SSE-SQS, or SSE-KMS under the key with the 5-minute data key reuse `init` sets) ----
    const queueEncryption = key
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key, dataKeyReuse: Duration.minutes(5) }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED };
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      retentionPeriod: Duration.seconds(MESSAGE_RETENTION_SECONDS),
      maxMessageSizeBytes: MAX_MESSAGE_SIZE,
      ...queueEncryption,
      enforceSSL: true,
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      visibilityTimeout: Duration.seconds(visibilitySeconds),
      retentionPeriod: Duration.seconds(MESSAGE_RETENTION_SECONDS),
      maxMessageSizeBytes: MAX_MESSAGE_SIZE,
      receiveMessageWaitTime: Duration.seconds(20),
      ...queueEncryption,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount },
    });

    // ---- bucket: the settings `init` applies, plus TLS only ----
    this.bucket = new s3.Bucket(this, 'Payloads', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      // SSE-KMS with an S3 Bucket Key: one KMS call per bucket key period, not per object.
      ...(key
        ? { encryption: s3.BucketEncryption.KMS, encryptionKey: key, bucketKeyEnabled: true }
        : { encryption: s3.BucketEncryption.S3_MANAGED }),
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: props.accessLogsBucket,
      serverAccessLogsPrefix: props.accessLogsBucket ? 'eve-world-aws-payloads/' : undefined,
      lifecycleRules: PAYLOAD_PREFIXES.map((prefix) => ({
        id: `expire-${prefix.replace('/', '')}`,
        prefix,
        expiration: Duration.days(PAYLOAD_EXPIRY_DAYS),
      })),
      removalPolicy,
    });

    // ---- long waits: Scheduler group + the role it assumes ----
    this.scheduleGroup = new scheduler.CfnScheduleGroup(this, 'ScheduleGroup', {
      name: Names.uniqueResourceName(this, { maxLength: 64, separator: '-' }),
    });
    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      description: 'EventBridge Scheduler delivers eve-world-aws long waits to the work queue',
      // Only schedules of this stack's group may use it (confused deputy: not any schedule of the account).
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account, 'aws:SourceArn': this.scheduleGroup.attrArn },
        },
      }),
    });
    this.schedulerRole.addToPolicy(
      new iam.PolicyStatement({ actions: [...SCHEDULER_ROLE_ACTIONS], resources: [this.queue.queueArn] }),
    );
    // Sending to an SSE-KMS queue needs the key too (as `init --print-iam-policy --scheduler-role` prints).
    if (key)
      this.schedulerRole.addToPolicy(
        new iam.PolicyStatement({ actions: [...SCHEDULER_ROLE_KMS_ACTIONS], resources: [key.keyArn] }),
      );

    // ---- signing secret ----
    this.signingSecret = new secretsmanager.Secret(this, 'SigningSecret', {
      description:
        'HMAC secret: the worker signs deliveries, the host verifies them (EVE_WORLD_AWS_SIGNING_SECRET_ARN)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });

    const worldEnv: Record<string, string> = {
      EVE_WORLD_AWS_TABLE: this.table.tableName,
      EVE_WORLD_AWS_QUEUE: this.queue.queueUrl,
      EVE_WORLD_AWS_DLQ: this.deadLetterQueue.queueUrl,
      EVE_WORLD_AWS_BUCKET: this.bucket.bucketName,
      EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: this.schedulerRole.roleArn,
      EVE_WORLD_AWS_SCHEDULER_GROUP: this.scheduleGroup.ref,
      EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: String(visibilitySeconds),
      EVE_WORLD_AWS_MAX_RECEIVE_COUNT: String(maxReceiveCount),
      // The ARN only: each function reads the value at its first delivery (GetSecretValue on this
      // secret alone), so the function configuration never holds it (src/consumer/secret-source.ts).
      EVE_WORLD_AWS_SIGNING_SECRET_ARN: this.signingSecret.secretArn,
      ...(key ? { EVE_WORLD_AWS_KMS_KEY_ID: key.keyArn } : {}),
    };

    const logGroup = (name: string) =>
      new logs.LogGroup(this, `${name}Logs`, {
        retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      });
    const functionRole = (name: string, lg: logs.LogGroup) => {
      const role = new iam.Role(this, `${name}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
      role.addToPolicy(
        new iam.PolicyStatement({
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [lg.logGroupArn],
        }),
      );
      return role;
    };

    // ---- host: eve behind the Lambda Web Adapter ----
    let hostCode = props.hostCode;
    if (!hostCode) {
      const appDir = path.resolve(props.app);
      const dockerfile = props.dockerfile ?? 'Dockerfile';
      if (!existsSync(path.join(appDir, dockerfile))) {
        throw new Error(
          `EveWorldAws: ${path.join(appDir, dockerfile)} is missing. Generate it once with ` +
            `\`node --input-type=module -e "import {hostDockerfile} from '@portfolio/eve-world-aws/cdk'; process.stdout.write(hostDockerfile())" > ${path.join(props.app, dockerfile)}\``,
        );
      }
      if (!existsSync(path.join(appDir, '.output/server/index.mjs'))) {
        Annotations.of(this).addWarningV2(
          'eve-world-aws:no-eve-build',
          `${appDir}/.output is missing: run \`npx eve build\` in the app before \`cdk deploy\``,
        );
      }
      hostCode = lambda.DockerImageCode.fromImageAsset(appDir, {
        file: dockerfile,
        platform: Platform.LINUX_AMD64,
        exclude: ['node_modules', 'cdk.out', '.git', '.eve', '.workflow-data'],
      });
    }
    const hostLogs = logGroup('Host');
    this.hostFunction = new lambda.DockerImageFunction(this, 'Host', {
      description: 'eve app (Nitro server behind the Lambda Web Adapter)',
      code: hostCode,
      architecture: lambda.Architecture.X86_64,
      memorySize: props.hostMemorySize ?? 1024,
      timeout: hostTimeout,
      role: functionRole('Host', hostLogs),
      logGroup: hostLogs,
      tracing: props.tracing?.xray ? lambda.Tracing.ACTIVE : undefined,
      environment: {
        ...props.hostEnvironment,
        ...worldEnv,
        AWS_LWA_INVOKE_MODE: 'response_stream',
        AWS_LWA_READINESS_CHECK_PATH: READINESS_PATH,
        AWS_LWA_PORT: String(HOST_PORT),
        PORT: String(HOST_PORT),
      },
    });
    // Public URL: eve's routes are the product; the flow route verifies the HMAC signature and
    // answers 401 to anything unsigned, forged, stale or replayed.
    this.hostUrl = this.hostFunction.addFunctionUrl({
      authType: lambda.FunctionUrlAuthType.NONE,
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
    });

    // ---- worker: SQS -> signed POST to the host's flow route ----
    const workerLogs = logGroup('Worker');
    // One asset for the worker and the sweeper (both handlers are in the bundle).
    const workerCode = props.workerCode ?? lambda.Code.fromAsset(requireWorkerAsset());
    this.workerFunction = new lambda.Function(this, 'Worker', {
      description: 'eve-world-aws SQS worker: delivers queue messages to the flow route, signed',
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      handler: WORKER_HANDLER,
      code: workerCode,
      memorySize: props.workerMemorySize ?? 256,
      timeout: workerTimeout,
      role: functionRole('Worker', workerLogs),
      logGroup: workerLogs,
      tracing: props.tracing?.xray ? lambda.Tracing.ACTIVE : undefined,
      environment: {
        ...worldEnv,
        EVE_WORLD_AWS_FLOW_URL: `${this.hostUrl.url}${FLOW_PATH}`,
        ...(props.tracing?.adotLayerArn
          ? { AWS_LAMBDA_EXEC_WRAPPER: props.tracing.execWrapper ?? '/opt/otel-instrument' }
          : {}),
      },
    });
    if (props.tracing?.adotLayerArn) {
      this.workerFunction.addLayers(
        lambda.LayerVersion.fromLayerVersionArn(this, 'AdotLayer', props.tracing.adotLayerArn),
      );
    }
    this.workerFunction.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: props.batchSize ?? 10,
        maxBatchingWindow: props.maxBatchingWindow,
        maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );

    // ---- the orphan sweep: daily, one at a time, stopping itself before its timeout ----
    let sweeperLogs: logs.LogGroup | undefined;
    if (props.sweepSchedule !== false) {
      sweeperLogs = logGroup('Sweeper');
      this.sweeperFunction = new lambda.Function(this, 'Sweeper', {
        description: 'eve-world-aws orphan sweep: deletes S3 objects no run can reference any more',
        runtime: lambda.Runtime.NODEJS_24_X,
        architecture: lambda.Architecture.ARM_64,
        handler: SWEEP_HANDLER,
        code: workerCode,
        memorySize: 256,
        // The handler stops starting runs a minute before this; what is left waits for tomorrow.
        timeout: Duration.minutes(15),
        // No reserved concurrency: a new account at the default quota of 10 refuses any
        // reservation. A daily rule and a 15-minute timeout do not overlap, and two sweeps that
        // did would only repeat each other's reads (every delete is idempotent).
        // A failed sweep is not repeated at once: it raises the alarm, and the next day's sweep
        // (which retries everything it kept) is the retry.
        retryAttempts: 0,
        role: functionRole('Sweeper', sweeperLogs),
        logGroup: sweeperLogs,
        // Names only: the sweep needs no signing secret, no Scheduler and no KMS key (it never
        // reads an object's content, and DynamoDB/S3 decrypt at rest for it).
        environment: {
          EVE_WORLD_AWS_TABLE: this.table.tableName,
          EVE_WORLD_AWS_QUEUE: this.queue.queueUrl,
          EVE_WORLD_AWS_DLQ: this.deadLetterQueue.queueUrl,
          EVE_WORLD_AWS_BUCKET: this.bucket.bucketName,
        },
      });
      this.sweepRule = new events.Rule(this, 'SweepSchedule', {
        description: 'eve-world-aws: run the orphan sweep',
        schedule: props.sweepSchedule ?? events.Schedule.rate(Duration.days(1)),
        targets: [new eventsTargets.LambdaFunction(this.sweeperFunction, { retryAttempts: 2 })],
      });
    }

    // ---- least privilege, from the command table ----
    const scheduleArn = stack.formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${this.scheduleGroup.ref}/*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    const arns = {
      table: [this.table.tableArn],
      tableIndexes: [`${this.table.tableArn}/index/*`],
      queue: [this.queue.queueArn],
      bucket: [this.bucket.bucketArn],
      bucketObjects: [this.bucket.arnForObjects('*')],
      scheduleGroup: [this.scheduleGroup.attrArn],
      scheduleGroupSchedules: [scheduleArn],
      schedulerRole: [this.schedulerRole.roleArn],
      kmsKey: key ? [key.keyArn] : [],
      // GetSecretValue on this one secret (the runtime row of the table).
      signingSecret: [this.signingSecret.secretArn],
    };
    grantFromTable(this.hostFunction, 'runtime', arns);
    grantFromTable(this.workerFunction, 'runtime', arns);
    if (this.sweeperFunction) grantFromTable(this.sweeperFunction, 'sweeper', arns);

    // ---- cdk-nag acknowledgements, each with its reason (cdk-nag 3 reads CDK's Validations metadata) ----
    const wildcardReasons: Array<[string, string]> = [
      [
        arns.tableIndexes[0],
        'Query on the indexes of this one table only (index names come from TABLE_SCHEMA and may grow); no other table.',
      ],
      [
        arns.bucketObjects[0],
        'Get/Put/DeleteObject and PutObjectTagging (the sweeper: DeleteObject only) on objects of this one payload bucket: keys are per run and entity, unknown at deploy time.',
      ],
      [
        scheduleArn,
        'CreateSchedule for one-time long-wait schedules in this stack’s own schedule group; schedule names are per wait.',
      ],
    ];
    for (const role of [this.hostFunction.role, this.workerFunction.role, this.sweeperFunction?.role]) {
      const policy = role?.node.tryFindChild('DefaultPolicy');
      if (!policy) continue;
      for (const [arn, reason] of wildcardReasons) {
        Validations.of(policy).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${nagResourceName(stack, arn)}]`,
          reason,
        });
      }
    }
    if (!props.accessLogsBucket) {
      Validations.of(this.bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Only the World’s function roles can reach this private, TLS-only bucket; pass accessLogsBucket to turn server access logs on.',
      });
    }
    Validations.of(this.signingSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'No rotation Lambda: rotate by putting a new value (aws secretsmanager put-secret-value); both functions pick it up ' +
        'without a redeploy (the new AWSCURRENT signs, AWSCURRENT and AWSPREVIOUS verify; docs/security.md).',
    });

    // ---- alarms ----
    const alarm = (id: string, a: cloudwatch.AlarmProps) => {
      const x = new cloudwatch.Alarm(this, id, a);
      if (props.alarmTopic) x.addAlarmAction(new cwActions.SnsAction(props.alarmTopic));
      return x;
    };
    const ageThreshold = props.oldestMessageAgeThreshold ?? Duration.minutes(30);
    this.alarms = [
      alarm('DeadLetterAlarm', {
        alarmDescription: 'Messages reached the DLQ: inspect with `eve-world-aws redrive --dry-run`',
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      alarm('OldestMessageAlarm', {
        alarmDescription: 'The oldest queue message waits too long: the worker is failing or throttled',
        metric: this.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
        threshold: ageThreshold.toSeconds(),
        evaluationPeriods: 5,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      alarm('WorkerErrorsAlarm', {
        alarmDescription: 'The SQS worker function failed invocations',
        metric: this.workerFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    ];
    // The World's own metrics (EMF from the worker and the host): dead-letters, breaker, throttling.
    this.alarms.push(...worldAlarms(this, alarm));
    if (props.dashboard !== false) this.dashboard = worldDashboard(this, 'Dashboard', this);
    if (this.sweeperFunction)
      this.alarms.push(
        alarm('SweeperErrorsAlarm', {
          alarmDescription:
            'The orphan sweep failed (objects or runs it could not sweep, or a bad environment): see the sweeper log; `eve-world-aws sweep` runs it by hand',
          metric: this.sweeperFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
      );

    // ---- outputs ----
    const out = (id: string, value: string, description: string) => new CfnOutput(this, id, { value, description });
    out('Url', this.hostUrl.url, 'eve app URL (Function URL, response streaming)');
    out('FlowUrl', `${this.hostUrl.url}${FLOW_PATH}`, 'flow route the worker POSTs signed deliveries to');
    out('TableName', this.table.tableName, 'EVE_WORLD_AWS_TABLE');
    out('QueueUrl', this.queue.queueUrl, 'EVE_WORLD_AWS_QUEUE');
    out('QueueName', this.queue.queueName, 'work queue name');
    out('DeadLetterQueueUrl', this.deadLetterQueue.queueUrl, 'EVE_WORLD_AWS_DLQ');
    out('DeadLetterQueueName', this.deadLetterQueue.queueName, 'dead-letter queue name');
    out('BucketName', this.bucket.bucketName, 'EVE_WORLD_AWS_BUCKET');
    out('ScheduleGroupName', this.scheduleGroup.ref, 'EVE_WORLD_AWS_SCHEDULER_GROUP');
    out('SchedulerRoleArn', this.schedulerRole.roleArn, 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN');
    out('SigningSecretArn', this.signingSecret.secretArn, 'signing secret (Secrets Manager)');
    out('HostFunctionName', this.hostFunction.functionName, 'host function');
    out('WorkerFunctionName', this.workerFunction.functionName, 'SQS worker function');
    out('HostLogGroupName', hostLogs.logGroupName, 'host logs (`aws logs tail`)');
    out('WorkerLogGroupName', workerLogs.logGroupName, 'worker logs (`aws logs tail`)');
    if (this.sweeperFunction && sweeperLogs) {
      out('SweeperFunctionName', this.sweeperFunction.functionName, 'scheduled orphan sweep function');
      out('SweeperLogGroupName', sweeperLogs.logGroupName, 'sweep logs: one JSON summary line per run');
    }
    if (key) out('KmsKeyArn', key.keyArn, 'EVE_WORLD_AWS_KMS_KEY_ID (run data key)');
  }
}
