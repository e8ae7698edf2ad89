/**
 * How the EventBridge Scheduler emulator (./scheduler.ts) fires a schedule: an ENABLED one-time
 * `at()` schedule whose target is an SQS queue ARN sends its `Target.Input` to that queue (its URL
 * resolved by name on the SQS endpoint given), at or after its time. A failed send is retried with
 * backoff within the target's `RetryPolicy` (default 185 attempts, 1 day), then the input goes to
 * `DeadLetterConfig.Arn` (an SQS queue) with the error in message attributes. After the last
 * invocation a schedule with `ActionAfterCompletion: DELETE` is removed.
 *
 * Invariants:
 * - Never early: a schedule fires no sooner than its `at()` time by this process's clock (a timer
 *   that runs early re-arms; waits past setTimeout's limit re-arm too).
 * - A schedule deleted meanwhile never fires; `close()` stops every pending timer.
 */
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { parseArn } from '../src/aws/arn.js';
import { describeError, errorName } from '../src/aws/sdk-errors.js';
import type { Body } from './scheduler-requests.js';

/** One invocation of a schedule's target (or of its dead-letter queue). */
export interface Invocation {
  readonly scheduleArn: string;
  /** The target's ARN, or the dead-letter queue's when `deadLetter`. */
  readonly arn: string;
  /** 0 for the first attempt. */
  readonly attempt: number;
  readonly at: number;
  readonly ok: boolean;
  readonly deadLetter?: boolean;
  readonly error?: string;
}

/** A stored schedule. */
export interface Schedule {
  name: string;
  group: string;
  arn: string;
  expression: string;
  /** Epoch ms of an `at()` expression; undefined for rate/cron (never fired). */
  due?: number;
  timezone?: string;
  description?: string;
  state: 'ENABLED' | 'DISABLED';
  startDate?: number;
  endDate?: number;
  kmsKeyArn?: string;
  target: Body;
  window: Body;
  afterCompletion: 'NONE' | 'DELETE';
  created: number;
  timer?: NodeJS.Timeout;
}

export interface FiringOptions {
  /** The SQS endpoint targets (and dead-letter queues) are sent to. */
  sqsEndpoint: string;
  region: string;
  /** Whether `s` is still the stored schedule of its name (false once deleted or replaced). */
  isCurrent(s: Schedule): boolean;
  /** Remove `s` from the store (after its last invocation, with `ActionAfterCompletion: DELETE`). */
  remove(s: Schedule): void;
}

export interface Firing {
  /** Every invocation so far, in order. */
  readonly invocations: readonly Invocation[];
  /** Start `s`'s timer, if it is an ENABLED `at()` schedule. */
  arm(s: Schedule): void;
  /** Stop `s`'s pending timer. */
  disarm(s: Schedule): void;
  /** Stop every pending timer and the SQS client. */
  close(): void;
}

/** setTimeout's maximum; longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const DEFAULT_RETRY = { MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 };

export function startFiring(opts: FiringOptions): Firing {
  const invocations: Invocation[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  let sqs: SQSClient | undefined;

  /** Run `fn` after `ms`, re-arming past setTimeout's limit; cleared by `close()`. */
  const after = (ms: number, fn: () => void): NodeJS.Timeout => {
    const t = setTimeout(
      () => {
        timers.delete(t);
        if (ms > MAX_TIMER_MS) after(ms - MAX_TIMER_MS, fn);
        else fn();
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
    t.unref();
    timers.add(t);
    return t;
  };

  const sendTo = async (queueArn: string, body: string, attributes?: Record<string, string>) => {
    const parts = parseArn(queueArn);
    if (parts?.service !== 'sqs')
      throw new Error(
        `${queueArn} is not an SQS queue ARN (the eve-world-aws Scheduler emulator delivers to SQS only)`,
      );
    sqs ??= new SQSClient({
      endpoint: opts.sqsEndpoint,
      region: opts.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 3,
    });
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: parts.resource }));
    await sqs.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: body,
        MessageAttributes: attributes
          ? Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]))
          : undefined,
      }),
    );
  };

  /** The input to the dead-letter queue, once the retries are spent. */
  const deadLetter = async (s: Schedule, input: string, attempt: number, err: unknown, retry: Body) => {
    const dlq = (s.target.DeadLetterConfig as Body | undefined)?.Arn;
    if (typeof dlq !== 'string') return;
    const base = { scheduleArn: s.arn, arn: dlq, attempt, deadLetter: true };
    try {
      await sendTo(dlq, input, {
        ERROR_CODE: errorName(err) || 'Error',
        ERROR_MESSAGE: describeError(err).slice(0, 1000),
        EXHAUSTED_RETRY_CONDITION:
          attempt >= Number(retry.MaximumRetryAttempts) ? 'MaximumRetryAttempts' : 'MaximumEventAgeInSeconds',
        RETRY_ATTEMPTS: String(attempt),
        SCHEDULE_ARN: s.arn,
        TARGET_ARN: String(s.target.Arn),
      });
      invocations.push({ ...base, at: Date.now(), ok: true });
    } catch (dlqErr) {
      invocations.push({ ...base, at: Date.now(), ok: false, error: describeError(dlqErr) });
    }
  };

  const invoke = async (s: Schedule, firstAt: number, attempt: number): Promise<void> => {
    if (closed || !opts.isCurrent(s)) return; // deleted meanwhile
    const targetArn = String(s.target.Arn);
    const input = typeof s.target.Input === 'string' ? s.target.Input : '';
    try {
      await sendTo(targetArn, input);
      invocations.push({ scheduleArn: s.arn, arn: targetArn, attempt, at: Date.now(), ok: true });
    } catch (err) {
      if (closed) return;
      invocations.push({
        scheduleArn: s.arn,
        arn: targetArn,
        attempt,
        at: Date.now(),
        ok: false,
        error: describeError(err),
      });
      const retry = { ...DEFAULT_RETRY, ...((s.target.RetryPolicy as Body | undefined) ?? {}) };
      const delayMs = Math.min(60_000, 1000 * 2 ** attempt);
      const ageAfterDelay = (Date.now() + delayMs - firstAt) / 1000;
      if (attempt < Number(retry.MaximumRetryAttempts) && ageAfterDelay <= Number(retry.MaximumEventAgeInSeconds)) {
        s.timer = after(delayMs, () => void invoke(s, firstAt, attempt + 1));
        return;
      }
      await deadLetter(s, input, attempt, err, retry);
    }
    if (s.afterCompletion === 'DELETE') opts.remove(s);
  };

  return {
    invocations,
    arm(s) {
      if (s.state !== 'ENABLED' || s.due === undefined) return;
      // Never early: Date.now() >= due when the timer runs (a timer may fire a millisecond early).
      const fire = () => {
        const left = (s.due as number) - Date.now();
        if (left > 0) s.timer = after(left, fire);
        else void invoke(s, Date.now(), 0);
      };
      s.timer = after((s.due as number) - Date.now(), fire);
    },
    disarm(s) {
      if (!s.timer) return;
      clearTimeout(s.timer);
      timers.delete(s.timer);
    },
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      sqs?.destroy();
    },
  };
}
