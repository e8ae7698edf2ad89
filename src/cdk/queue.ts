/**
 * The work queue and what feeds it besides `queue()`: its dead-letter queue, and the EventBridge
 * Scheduler group whose one-time schedules deliver long waits into it, with the role they assume.
 *
 * - Both queues: SSE-SQS, or SSE-KMS under the run-data key with the 5-minute data key reuse
 *   `init` sets; TLS only; the retention and size caps of src/config/limits.ts.
 * - The work queue redrives to the DLQ after `maxReceiveCount` receives; its visibility is the
 *   one ./props.ts derives from the worker timeout.
 * - The Scheduler role may only `sqs:SendMessage` to this queue (and use the key to do so), and
 *   only schedules of this stack's group may assume it, not any of the account (confused deputy).
 */
import { Duration, Names, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { MAX_MESSAGE_SIZE, MESSAGE_RETENTION_SECONDS } from '../config/limits.js';
import { SCHEDULER_ROLE_ACTIONS, SCHEDULER_ROLE_KMS_ACTIONS } from '../provision/principal-actions.js';
import type { Settings } from './props.js';

export interface Queues {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly scheduleGroup: scheduler.CfnScheduleGroup;
  readonly schedulerRole: iam.Role;
}

/** Queue, DLQ, schedule group and Scheduler role, in `scope` (ids `Queue`, `DeadLetterQueue`, `ScheduleGroup`, `SchedulerRole`). */
export function addQueues(scope: Construct, settings: Settings, key: kms.IKey | undefined): Queues {
  const encryption = key
    ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key, dataKeyReuse: Duration.minutes(5) }
    : { encryption: sqs.QueueEncryption.SQS_MANAGED };
  const deadLetterQueue = new sqs.Queue(scope, 'DeadLetterQueue', {
    retentionPeriod: Duration.seconds(MESSAGE_RETENTION_SECONDS),
    maxMessageSizeBytes: MAX_MESSAGE_SIZE,
    ...encryption,
    enforceSSL: true,
  });
  const queue = new sqs.Queue(scope, 'Queue', {
    visibilityTimeout: Duration.seconds(settings.visibilitySeconds),
    retentionPeriod: Duration.seconds(MESSAGE_RETENTION_SECONDS),
    maxMessageSizeBytes: MAX_MESSAGE_SIZE,
    receiveMessageWaitTime: Duration.seconds(20),
    ...encryption,
    enforceSSL: true,
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
  });

  // ---- long waits: Scheduler group + the role it assumes ----
  const scheduleGroup = new scheduler.CfnScheduleGroup(scope, 'ScheduleGroup', {
    name: Names.uniqueResourceName(scope, { maxLength: 64, separator: '-' }),
  });
  const schedulerRole = new iam.Role(scope, 'SchedulerRole', {
    description: 'EventBridge Scheduler delivers eve-world-aws long waits to the work queue',
    assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
      conditions: {
        StringEquals: { 'aws:SourceAccount': Stack.of(scope).account, 'aws:SourceArn': scheduleGroup.attrArn },
      },
    }),
  });
  schedulerRole.addToPolicy(
    new iam.PolicyStatement({ actions: [...SCHEDULER_ROLE_ACTIONS], resources: [queue.queueArn] }),
  );
  // Sending to an SSE-KMS queue needs the key too (as `init --print-iam-policy --scheduler-role` prints).
  if (key)
    schedulerRole.addToPolicy(
      new iam.PolicyStatement({ actions: [...SCHEDULER_ROLE_KMS_ACTIONS], resources: [key.keyArn] }),
    );
  return { queue, deadLetterQueue, scheduleGroup, schedulerRole };
}
