/**
 * Delivery delays on a queue whose native delay stops at 900 s.
 *
 * - `delay <= maxDelayHopSeconds` (<= 900): SQS `DelaySeconds`, rounded up so it is never early.
 * - longer, with a scheduler role configured: one EventBridge Scheduler one-time `at()` schedule
 *   whose target is the queue (`ActionAfterCompletion: DELETE`, so schedules do not pile up).
 * - longer, without a scheduler: an SQS hop of `maxDelayHopSeconds` plus a `deliverAt` attribute;
 *   the consumer re-sends the message in further hops until `deliverAt` has passed.
 *
 * Both long paths stamp `deliverAt`, and the consumer re-checks it on every receive, so neither an
 * early schedule invocation nor a short hop ever hands the message to the handler before it is due.
 */
import type { CreateScheduleCommand } from '@aws-sdk/client-scheduler';
import type { AwsClients } from '../aws/clients.js';
import { isConflict, isNotFound } from '../aws/sdk-errors.js';
import { SQS_MAX_DELAY_SECONDS } from '../config/limits.js';

export type DelayPlan =
  | { kind: 'now' }
  | { kind: 'sqs'; delaySeconds: number; deliverAt?: number }
  | { kind: 'schedule'; deliverAt: number; at: Date };

/**
 * Decide how to delay a message by `delaySeconds` from `now` (epoch ms).
 * `hopSeconds` is `config.maxDelayHopSeconds` (1..900).
 */
export function planDelay(
  delaySeconds: number | undefined,
  now: number,
  hopSeconds: number,
  schedulerEnabled: boolean,
): DelayPlan {
  const d = Number.isFinite(delaySeconds) && (delaySeconds as number) > 0 ? (delaySeconds as number) : 0;
  if (d === 0) return { kind: 'now' };
  const hop = Math.max(1, Math.min(hopSeconds, SQS_MAX_DELAY_SECONDS));
  if (d <= hop) return { kind: 'sqs', delaySeconds: Math.ceil(d) };
  const deliverAt = now + Math.ceil(d * 1000);
  if (schedulerEnabled) return { kind: 'schedule', deliverAt, at: new Date(Math.ceil(deliverAt / 1000) * 1000) };
  return { kind: 'sqs', delaySeconds: hop, deliverAt };
}

/**
 * Next hop for a received message that is not yet due: SQS only (the message is already in the
 * queue, and a hop of at most 900 s is cheap), never longer than the remaining time, rounded up.
 */
export function planHop(
  deliverAt: number,
  now: number,
  hopSeconds: number,
): { delaySeconds: number; deliverAt: number } {
  const hop = Math.max(1, Math.min(hopSeconds, SQS_MAX_DELAY_SECONDS));
  const remaining = Math.max(1, Math.ceil((deliverAt - now) / 1000));
  return { delaySeconds: Math.min(hop, remaining), deliverAt };
}

/** `at(yyyy-mm-ddThh:mm:ss)` in UTC. */
export function atExpression(at: Date): string {
  return `at(${at.toISOString().slice(0, 19)})`;
}

/** The one Scheduler call the World makes; tests may substitute a recording fake (one that fires early). */
export interface SchedulerPort {
  send(command: CreateScheduleCommand): Promise<unknown>;
}

/** The World's Scheduler client as a port; the SDK loads on the first long wait. */
export function schedulerPort(clients: AwsClients): SchedulerPort {
  return { send: async (command) => (await clients.scheduler()).send(command) };
}

export interface OneTimeSchedule {
  /** Unique within the group and stable for one send, so a retried create is a no-op. */
  name: string;
  group: string;
  at: Date;
  queueArn: string;
  roleArn: string;
  /** Body of the SQS message the schedule sends. */
  input: string;
  /** Where the Scheduler puts an invocation it could not deliver after its retries. */
  deadLetterArn?: string;
}

/** How long the Scheduler keeps retrying a schedule's SendMessage after its time (its maximum). */
export const SCHEDULE_RETRY_SECONDS = 86_400;

/** Scheduler's `Target.Input` limit (characters); larger bodies go to S3 first. */
export const SCHEDULER_INPUT_LIMIT = 8192;

export function scheduleName(messageId: string, at: Date): string {
  // [0-9a-zA-Z-_.]{1,64}: "eve_" + 26-char ULID + "_" + epoch seconds = 41 chars.
  return `eve_${messageId
    .replace(/^msg_/, '')
    .replace(/[^0-9A-Za-z_.-]/g, '')
    .slice(0, 40)}_${Math.floor(at.getTime() / 1000)}`;
}

export async function createOneTimeSchedule(scheduler: SchedulerPort, s: OneTimeSchedule): Promise<void> {
  const { CreateScheduleCommand } = await import('@aws-sdk/client-scheduler');
  try {
    await scheduler.send(
      new CreateScheduleCommand({
        Name: s.name,
        GroupName: s.group,
        ScheduleExpression: atExpression(s.at),
        ScheduleExpressionTimezone: 'UTC',
        FlexibleTimeWindow: { Mode: 'OFF' },
        ActionAfterCompletion: 'DELETE',
        State: 'ENABLED',
        Description: 'eve-world-aws delayed queue message',
        Target: {
          Arn: s.queueArn,
          RoleArn: s.roleArn,
          Input: s.input,
          // The Scheduler's own maximums: keep retrying a failed SendMessage for a day.
          RetryPolicy: { MaximumEventAgeInSeconds: SCHEDULE_RETRY_SECONDS, MaximumRetryAttempts: 185 },
          DeadLetterConfig: s.deadLetterArn ? { Arn: s.deadLetterArn } : undefined,
        },
      }),
    );
  } catch (err) {
    // Same name = this very message was already scheduled by an earlier attempt of this send.
    if (isConflict(err)) return;
    // The group is the deployment's (made by `init` or the CDK construct), never created here.
    if (isNotFound(err)) {
      throw new Error(
        `EventBridge Scheduler: schedule group "${s.group}" does not exist (EVE_WORLD_AWS_SCHEDULER_GROUP); ` +
          'run `eve-world-aws init` to create it',
        { cause: err },
      );
    }
    throw err;
  }
}
