/**
 * `EveWorldAws`: the whole stack for an eve agent on AWS Lambda, nothing always on. It composes the
 * parts of this folder, one file each (docs/layout.md lists them).
 *
 * The parts are functions that add their resources to this construct, not nested constructs: a
 * nested construct adds a segment to every construct path, and so changes every CloudFormation
 * logical ID, and CloudFormation replaces a resource whose ID changed (a user's table with a new,
 * empty one). test/unit/cdk/template.test.ts pins the synthesized template.
 */
import { Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { addData } from './data.js';
import { grantWorld } from './grants.js';
import { addHost, queueSource } from './host.js';
import { addObservability } from './observability.js';
import { addOutputs } from './outputs.js';
import { type EveWorldAwsProps, resolveSettings } from './props.js';
import { addQueues } from './queue.js';
import { addSweeper } from './sweeper.js';
import { addWorker } from './worker.js';
import { requireWorkerAsset } from './worker-asset.js';
import { addSigningSecret, worldEnvironment } from './world-env.js';

export { FLOW_PATH } from './host.js';
export type { EveWorldAwsProps } from './props.js';

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
  /** The host's `live` alias (the version the last deploy published; the Function URL serves it). */
  readonly hostLiveAlias: lambda.Alias;
  /** The SQS worker; absent with `consumer: 'host'` (the host consumes the queue itself). */
  readonly workerFunction?: lambda.Function;
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
    const settings = resolveSettings(this, props);
    const data = addData(this, props, settings);
    const queues = addQueues(this, settings, data.kmsKey);
    const signingSecret = addSigningSecret(this);
    const worldEnv = worldEnvironment(data, queues, signingSecret, settings);
    const host = addHost(this, props, settings, worldEnv);
    // One asset for the worker and the sweeper (both handlers are in the bundle).
    const code = props.workerCode ?? lambda.Code.fromAsset(requireWorkerAsset());
    const worker =
      settings.consumer === 'worker'
        ? addWorker(this, props, settings, {
            code,
            worldEnv,
            hostUrl: host.hostUrl,
            queue: queues.queue,
            hostFunction: settings.deploymentAffinity ? host.hostFunction : undefined,
          })
        : undefined;
    if (settings.consumer === 'host') host.liveAlias.addEventSource(queueSource(props, settings, queues.queue));
    const sweeper = addSweeper(this, props, { code, data, queues });
    const functions = {
      hostFunction: host.hostFunction,
      workerFunction: worker?.workerFunction,
      sweeperFunction: sweeper?.sweeperFunction,
    };
    grantWorld(Stack.of(this), {
      data,
      queues,
      signingSecret,
      ...functions,
      invokeHostVersions: settings.deploymentAffinity,
    });
    const observed = addObservability(this, props, {
      ...functions,
      queue: queues.queue,
      deadLetterQueue: queues.deadLetterQueue,
    });
    addOutputs(this, { data, queues, signingSecretArn: signingSecret.secretArn, host, worker, sweeper });

    this.kmsKey = data.kmsKey;
    this.table = data.table;
    this.bucket = data.bucket;
    this.queue = queues.queue;
    this.deadLetterQueue = queues.deadLetterQueue;
    this.scheduleGroup = queues.scheduleGroup;
    this.schedulerRole = queues.schedulerRole;
    this.signingSecret = signingSecret;
    this.hostFunction = host.hostFunction;
    this.hostUrl = host.hostUrl;
    this.hostLiveAlias = host.liveAlias;
    this.workerFunction = worker?.workerFunction;
    this.sweeperFunction = sweeper?.sweeperFunction;
    this.sweepRule = sweeper?.sweepRule;
    this.alarms = observed.alarms;
    this.dashboard = observed.dashboard;
  }
}
