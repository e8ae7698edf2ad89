/**
 * The stack outputs: the app URL and the flow URL, and every resource name, described by the
 * environment variable it fills where there is one.
 */
import { CfnOutput } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { Data } from './data.js';
import { FLOW_PATH, type Host } from './host.js';
import type { Queues } from './queue.js';
import type { Sweeper } from './sweeper.js';
import type { Worker } from './worker.js';

/** One `CfnOutput` per name, in `scope` (ids as below). */
export function addOutputs(
  scope: Construct,
  parts: {
    readonly data: Data;
    readonly queues: Queues;
    readonly signingSecretArn: string;
    readonly host: Host;
    /** Absent when the host consumes the queue. */
    readonly worker?: Worker;
    readonly sweeper?: Sweeper;
  },
): void {
  const { data, queues, host, worker, sweeper } = parts;
  const out = (id: string, value: string, description: string) => new CfnOutput(scope, id, { value, description });
  out('Url', host.hostUrl.url, 'eve app URL (Function URL, response streaming)');
  out(
    'FlowUrl',
    `${host.hostUrl.url}${FLOW_PATH}`,
    worker
      ? 'flow route the worker POSTs signed deliveries to'
      : 'flow route (the host consumes the queue itself; from the URL only signed deliveries run)',
  );
  out('TableName', data.table.tableName, 'EVE_WORLD_AWS_TABLE');
  out('QueueUrl', queues.queue.queueUrl, 'EVE_WORLD_AWS_QUEUE');
  out('QueueName', queues.queue.queueName, 'work queue name');
  out('DeadLetterQueueUrl', queues.deadLetterQueue.queueUrl, 'EVE_WORLD_AWS_DLQ');
  out('DeadLetterQueueName', queues.deadLetterQueue.queueName, 'dead-letter queue name');
  out('BucketName', data.bucket.bucketName, 'EVE_WORLD_AWS_BUCKET');
  out('ScheduleGroupName', queues.scheduleGroup.ref, 'EVE_WORLD_AWS_SCHEDULER_GROUP');
  out('SchedulerRoleArn', queues.schedulerRole.roleArn, 'EVE_WORLD_AWS_SCHEDULER_ROLE_ARN');
  out('SigningSecretArn', parts.signingSecretArn, 'signing secret (Secrets Manager)');
  out('HostFunctionName', host.hostFunction.functionName, 'host function');
  if (worker) out('WorkerFunctionName', worker.workerFunction.functionName, 'SQS worker function');
  out('HostLogGroupName', host.logGroup.logGroupName, 'host logs (`aws logs tail`)');
  if (worker) out('WorkerLogGroupName', worker.logGroup.logGroupName, 'worker logs (`aws logs tail`)');
  if (sweeper) {
    out('SweeperFunctionName', sweeper.sweeperFunction.functionName, 'scheduled orphan sweep function');
    out('SweeperLogGroupName', sweeper.logGroup.logGroupName, 'sweep logs: one JSON summary line per run');
  }
  if (data.kmsKey) out('KmsKeyArn', data.kmsKey.keyArn, 'EVE_WORLD_AWS_KMS_KEY_ID (run data key)');
}
