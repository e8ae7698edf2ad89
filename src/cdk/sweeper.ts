/**
 * The orphan sweep (`eve-world-aws sweep`: orphaned run payloads and expired held queue bodies,
 * which no lifecycle rule removes), on a schedule: a second function from the worker's asset
 * (handler `index.sweepHandler`), invoked by an EventBridge rule, daily by default
 * (`sweepSchedule`), with only the `sweeper` rows of the command table (./grants.ts). The same
 * function runs the liveness backstop's tick (src/backstop/) once a minute (`BackstopSchedule`,
 * event `{"backstop": true}`).
 */
import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventsTargets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { Data } from './data.js';
import { addFunctionBase } from './function-role.js';
import type { EveWorldAwsProps } from './props.js';
import type { Queues } from './queue.js';
import { SWEEP_HANDLER } from './worker-asset.js';

export interface Sweeper {
  readonly sweeperFunction: lambda.Function;
  readonly sweepRule: events.Rule;
  /** Invokes the sweeper with `{"backstop": true}` every minute. */
  readonly backstopRule: events.Rule;
  readonly logGroup: logs.LogGroup;
}

/** The sweeper function, its log group, role and rules, in `scope` (ids `Sweeper`, `SweeperLogs`, `SweeperRole`, `SweepSchedule`, `BackstopSchedule`); none with `sweepSchedule: false`. */
export function addSweeper(
  scope: Construct,
  props: EveWorldAwsProps,
  parts: { readonly code: lambda.Code; readonly data: Data; readonly queues: Queues },
): Sweeper | undefined {
  if (props.sweepSchedule === false) return undefined;
  const base = addFunctionBase(scope, 'Sweeper', props.logRetention);
  const sweeperFunction = new lambda.Function(scope, 'Sweeper', {
    description: 'eve-world-aws orphan sweep: deletes S3 objects no run can reference any more',
    runtime: lambda.Runtime.NODEJS_24_X,
    architecture: lambda.Architecture.ARM_64,
    handler: SWEEP_HANDLER,
    code: parts.code,
    memorySize: 256,
    // The handler stops starting runs a minute before this; what is left waits for tomorrow.
    timeout: Duration.minutes(15),
    // No reserved concurrency: a new account at the default quota of 10 refuses any reservation. A
    // daily rule and a 15-minute timeout do not overlap, and two sweeps that did would only repeat
    // each other's reads (every delete is idempotent). A failed sweep is not repeated at once: it
    // raises the alarm, and the next day's sweep (which retries everything it kept) is the retry.
    retryAttempts: 0,
    role: base.role,
    logGroup: base.logGroup,
    // Names only: the sweep needs no signing secret, no Scheduler and no KMS key (it never
    // reads an object's content, and DynamoDB/S3 decrypt at rest for it).
    environment: {
      EVE_WORLD_AWS_TABLE: parts.data.table.tableName,
      EVE_WORLD_AWS_QUEUE: parts.queues.queue.queueUrl,
      EVE_WORLD_AWS_DLQ: parts.queues.deadLetterQueue.queueUrl,
      EVE_WORLD_AWS_BUCKET: parts.data.bucket.bucketName,
    },
  });
  const sweepRule = new events.Rule(scope, 'SweepSchedule', {
    description: 'eve-world-aws: run the orphan sweep',
    schedule: props.sweepSchedule ?? events.Schedule.rate(Duration.days(1)),
    targets: [new eventsTargets.LambdaFunction(sweeperFunction, { retryAttempts: 2 })],
  });
  // The liveness backstop (src/backstop/): one tick a minute, the `T` of its bound in this shape.
  const backstopRule = new events.Rule(scope, 'BackstopSchedule', {
    description: 'eve-world-aws: the liveness backstop tick (wakes active runs left with no message)',
    schedule: events.Schedule.rate(Duration.minutes(1)),
    targets: [
      new eventsTargets.LambdaFunction(sweeperFunction, {
        event: events.RuleTargetInput.fromObject({ backstop: true }),
        retryAttempts: 0,
      }),
    ],
  });
  return { sweeperFunction, sweepRule, backstopRule, logGroup: base.logGroup };
}
