/**
 * The queue and its dead-letter queue: created when missing (the DLQ first, so the queue's redrive
 * policy can name it), and the queue's settings compared with the config ({@link queueDrift}).
 * A drifted standard queue is fixed in place; a FIFO queue cannot be and is reported.
 */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { isQueueUrl, queueNameOf } from '../aws/arn.js';
import { unlessMissing } from '../aws/sdk-errors.js';
import type { WorldConfig } from '../config/index.js';
import { MAX_MESSAGE_SIZE, MESSAGE_RETENTION_SECONDS } from '../config/limits.js';
import type { ReconcileMode, ResourceReport } from './settings.js';

/** The queue's URL (`ref`: a name or a URL), undefined when it does not exist. */
export async function queueUrl(sqs: SQSClient, ref: string): Promise<string | undefined> {
  if (isQueueUrl(ref)) {
    // Check that the URL answers.
    const answer = await unlessMissing(
      sqs.send(new GetQueueAttributesCommand({ QueueUrl: ref, AttributeNames: ['QueueArn'] })),
    );
    return answer && ref;
  }
  return (await unlessMissing(sqs.send(new GetQueueUrlCommand({ QueueName: ref }))))?.QueueUrl;
}

async function queueAttrs(sqs: SQSClient, url: string): Promise<Record<string, string>> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  return out.Attributes ?? {};
}

export async function reconcileQueues(
  sqs: SQSClient,
  config: WorldConfig,
  mode: ReconcileMode,
): Promise<{ dlq: ResourceReport; queue: ResourceReport }> {
  const dlqName = queueNameOf(config.deadLetterQueue);
  const qName = queueNameOf(config.queue);
  const dlq: ResourceReport = { kind: 'dlq', name: dlqName, state: 'present', details: [] };
  const queue: ResourceReport = { kind: 'queue', name: qName, state: 'present', details: [] };

  let dlqUrl = await queueUrl(sqs, config.deadLetterQueue);
  if (!dlqUrl) {
    if (mode !== 'apply') {
      dlq.state = mode === 'dry-run' ? 'would-create' : 'missing';
      dlq.details.push(`create queue ${dlqName} (retention ${MESSAGE_RETENTION_SECONDS / 86400} days)`);
      if (mode === 'verify') dlq.fix = 'run `eve-world-aws init`';
    } else {
      dlqUrl = (
        await sqs.send(
          new CreateQueueCommand({
            QueueName: dlqName,
            Attributes: {
              MessageRetentionPeriod: String(MESSAGE_RETENTION_SECONDS),
              MaximumMessageSize: String(MAX_MESSAGE_SIZE),
            },
          }),
        )
      ).QueueUrl;
      dlq.state = 'created';
      dlq.details.push(`created, retention ${MESSAGE_RETENTION_SECONDS / 86400} days`);
    }
  } else {
    dlq.details.push('exists');
  }
  const dlqArn = dlqUrl ? (await queueAttrs(sqs, dlqUrl)).QueueArn : undefined;

  const wanted = {
    VisibilityTimeout: String(config.visibilityTimeoutSeconds),
    MaximumMessageSize: String(MAX_MESSAGE_SIZE),
    MessageRetentionPeriod: String(MESSAGE_RETENTION_SECONDS),
    ReceiveMessageWaitTimeSeconds: '20',
  };
  const url = await queueUrl(sqs, config.queue);
  if (!url) {
    if (mode !== 'apply') {
      queue.state = mode === 'dry-run' ? 'would-create' : 'missing';
      queue.details.push(
        `create queue ${qName} (max message 1 MiB, visibility ${config.visibilityTimeoutSeconds} s, ` +
          `redrive to ${dlqName} after ${config.maxReceiveCount} receives)`,
      );
      if (mode === 'verify') queue.fix = 'run `eve-world-aws init`';
      return { dlq, queue };
    }
    await sqs.send(
      new CreateQueueCommand({
        QueueName: qName,
        Attributes: {
          ...wanted,
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: config.maxReceiveCount }),
        },
      }),
    );
    queue.state = 'created';
    queue.details.push(`created, redrive to ${dlqName} after ${config.maxReceiveCount} receives`);
    return { dlq, queue };
  }
  const drift = queueDrift(await queueAttrs(sqs, url), config, dlqArn);
  if (drift.problems.length === 0) {
    queue.details.push(
      `visibility ${config.visibilityTimeoutSeconds} s; redrive to ${dlqName} after ${config.maxReceiveCount} receives`,
    );
    return { dlq, queue };
  }
  queue.details.push(...drift.problems);
  const fixable = !drift.unfixable && dlqArn !== undefined;
  if (fixable && mode === 'apply') {
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: drift.wanted }));
    queue.state = 'updated';
    queue.details.push('fixed: queue attributes set to the configured values');
  } else if (fixable && mode === 'dry-run') {
    queue.state = 'would-update';
  } else {
    queue.state = 'drift';
    queue.fix = drift.unfixable
      ? 'create a standard (non-FIFO) queue and point EVE_WORLD_AWS_QUEUE at it'
      : `run \`eve-world-aws init\`, or \`aws sqs set-queue-attributes --queue-url ${url} --attributes '${JSON.stringify(drift.wanted)}'\``;
  }
  return { dlq, queue };
}

/**
 * Where the queue differs from the config. The consumer relies on these: the visibility is what
 * Lambda's copies are hidden for (and what the heartbeat reads), the redrive policy bounds poison
 * retries, the retention must outlast long-wait hops and DLQ triage.
 */
export function queueDrift(
  attrs: Record<string, string>,
  config: Pick<WorldConfig, 'visibilityTimeoutSeconds' | 'maxReceiveCount'>,
  dlqArn: string | undefined,
): { problems: string[]; wanted: Record<string, string>; unfixable: boolean } {
  const problems: string[] = [];
  let redrive: { deadLetterTargetArn?: string; maxReceiveCount?: number | string } | undefined;
  try {
    redrive = attrs.RedrivePolicy ? JSON.parse(attrs.RedrivePolicy) : undefined;
  } catch {
    redrive = undefined;
  }
  if (!redrive) problems.push('has no redrive policy (failed messages would be retried until retention expires)');
  else {
    if (dlqArn && redrive.deadLetterTargetArn !== dlqArn)
      problems.push(`redrives to ${redrive.deadLetterTargetArn}, expected ${dlqArn}`);
    if (Number(redrive.maxReceiveCount) !== config.maxReceiveCount)
      problems.push(`redrives after ${redrive.maxReceiveCount} receives, configured ${config.maxReceiveCount}`);
  }
  if (Number(attrs.VisibilityTimeout) !== config.visibilityTimeoutSeconds)
    problems.push(
      `visibility timeout is ${attrs.VisibilityTimeout} s, configured ${config.visibilityTimeoutSeconds} s`,
    );
  if (Number(attrs.MessageRetentionPeriod) !== MESSAGE_RETENTION_SECONDS)
    problems.push(
      `message retention is ${attrs.MessageRetentionPeriod} s, expected ${MESSAGE_RETENTION_SECONDS} s (14 days)`,
    );
  if (Number(attrs.MaximumMessageSize) < MAX_MESSAGE_SIZE)
    problems.push(`maximum message size is ${attrs.MaximumMessageSize} bytes, expected ${MAX_MESSAGE_SIZE}`);
  const unfixable = attrs.FifoQueue === 'true';
  if (unfixable) problems.push('is a FIFO queue; eve-world-aws needs a standard queue');
  const wanted: Record<string, string> = {
    VisibilityTimeout: String(config.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(MESSAGE_RETENTION_SECONDS),
    MaximumMessageSize: String(MAX_MESSAGE_SIZE),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlqArn ?? '<dlq-arn>',
      maxReceiveCount: config.maxReceiveCount,
    }),
  };
  return { problems, wanted, unfixable };
}
