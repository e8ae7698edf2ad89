/**
 * SQS plumbing of the send side: resolves the queue and DLQ (name or URL, as configured) and sends
 * one logical message ({@link Envelope}) with its delay. The per-receipt calls of the receive side
 * are in src/consumer/delivery/receipts.ts.
 *
 * Invariants:
 * - A body larger than `payloadThresholdBytes` (or one SQS rejects as too long) is written to S3
 *   before the message that points at it is sent, under a key that lives at least as long as the
 *   copy being sent can be received; a copy re-sent later (hop, deferral) gets a fresh copy of the
 *   body first when the old key would expire too soon (./body-lifetime.ts).
 * - `send` resolves only once SQS (or the Scheduler) accepted the message; it throws otherwise, so
 *   callers can keep the original message until its replacement exists.
 */
import { GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { isQueueUrl, parseArn, queueNameOf } from '../aws/arn.js';
import { isMessageTooLong } from '../aws/sdk-errors.js';
import { SQS_MAX_DELAY_SECONDS } from '../config/limits.js';
import type { WorldContext } from '../context/world-context.js';
import { withSendSpan } from '../telemetry/spans.js';
import { bodyKey, bodyNeededUntil, ensureBodyLifetime } from './body-lifetime.js';
import {
  createOneTimeSchedule,
  type DelayPlan,
  planDelay,
  SCHEDULER_INPUT_LIMIT,
  type SchedulerPort,
  scheduleName,
  schedulerPort,
} from './delays.js';
import { type Envelope, encodeEnvelope, envelopeAttributes, s3PlaceholderBody } from './encoding.js';

export interface SendResult {
  via: 'sqs' | 'scheduler';
  /** SQS MessageId of the copy just sent (undefined for a schedule). */
  sqsMessageId?: string;
  scheduleName?: string;
  /** S3 key when the body was offloaded. */
  s3Key?: string;
}

/** Where the queue's redrive policy sends a message, and after how many receives. */
export interface DeadLetterTarget {
  url: string;
  maxReceiveCount: number;
}

/** How long the queue's redrive policy, as read, is reused (ms): an operator's change is seen within it. */
const REDRIVE_POLICY_TTL_MS = 10 * 60_000;

export class SqsTransport {
  private urls = new Map<string, Promise<string>>();
  private arns = new Map<string, Promise<string>>();
  private redrive?: { at: number; target: Promise<DeadLetterTarget | undefined> };

  constructor(
    readonly ctx: WorldContext,
    private readonly scheduler?: SchedulerPort,
  ) {}

  /** True when long delays go through EventBridge Scheduler. */
  get schedulerEnabled(): boolean {
    return this.scheduler !== undefined && this.ctx.config.schedulerRoleArn !== undefined;
  }

  /** The URL of queue `ref` (name or URL), in `account` if a redrive policy's ARN named it. */
  private resolveUrl(ref: string, account?: string): Promise<string> {
    if (isQueueUrl(ref)) return Promise.resolve(ref);
    return cached(this.urls, account === undefined ? ref : `${account}/${ref}`, async () => {
      const o = await this.ctx.clients.sqs.send(
        new GetQueueUrlCommand({ QueueName: ref, ...(account ? { QueueOwnerAWSAccountId: account } : {}) }),
      );
      if (!o.QueueUrl) throw new Error(`GetQueueUrl returned no URL for queue ${ref}`);
      return o.QueueUrl;
    });
  }

  private resolveArn(ref: string): Promise<string> {
    return cached(this.arns, ref, async () => {
      const url = await this.resolveUrl(ref);
      const o = await this.ctx.clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
      );
      const arn = o.Attributes?.QueueArn;
      if (!arn) throw new Error(`GetQueueAttributes returned no QueueArn for ${ref}`);
      return arn;
    });
  }

  queueUrl(): Promise<string> {
    return this.resolveUrl(this.ctx.config.queue);
  }

  dlqUrl(): Promise<string> {
    return this.resolveUrl(this.ctx.config.deadLetterQueue);
  }

  /**
   * The queue's redrive policy as SQS has it (not as configured): the DLQ it names, resolved to a
   * URL, and its `maxReceiveCount`; undefined when the queue has none. Read once per
   * {@link REDRIVE_POLICY_TTL_MS}; a failed read is retried on next use and rejects.
   */
  deadLetterTarget(now = Date.now()): Promise<DeadLetterTarget | undefined> {
    if (this.redrive && now - this.redrive.at < REDRIVE_POLICY_TTL_MS) return this.redrive.target;
    const target = (async (): Promise<DeadLetterTarget | undefined> => {
      const out = await this.ctx.clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: await this.queueUrl(), AttributeNames: ['RedrivePolicy'] }),
      );
      const raw = out.Attributes?.RedrivePolicy;
      if (!raw) return undefined;
      const policy = JSON.parse(raw) as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
      const arn = typeof policy.deadLetterTargetArn === 'string' ? parseArn(policy.deadLetterTargetArn) : undefined;
      const max = Number(policy.maxReceiveCount);
      if (!arn || !Number.isInteger(max) || max < 1) throw new Error(`the queue's RedrivePolicy is unreadable: ${raw}`);
      const url = await this.resolveUrl(arn.resource, arn.account);
      return { url, maxReceiveCount: max };
    })();
    const entry = { at: now, target };
    this.redrive = entry;
    target.catch(() => {
      if (this.redrive === entry) this.redrive = undefined;
    });
    return target;
  }

  /**
   * Send `envelope` to the dead-letter queue at `url` (the redrive policy's, {@link
   * deadLetterTarget}), visible at once, in this build's format like any copy: `eve-world-aws
   * redrive` replays it.
   */
  sendDeadLetter(envelope: Envelope, url: string, now = Date.now()): Promise<SendResult> {
    return this.sendPlanned({ ...envelope, deliverAt: undefined }, { kind: 'now' }, now, url);
  }

  /**
   * Send a received message again exactly as it came (body and string attributes unchanged), a
   * fresh copy whose receive count starts over. For a message of a format this build cannot read
   * (src/schema/formats.ts): re-encoding it would rewrite it in this build's format.
   */
  async sendVerbatim(
    body: string,
    attributes: Record<string, string | undefined>,
    delaySeconds: number,
  ): Promise<void> {
    const MessageAttributes = Object.fromEntries(
      Object.entries(attributes)
        .filter((e): e is [string, string] => e[1] !== undefined)
        .map(([k, v]) => [k, { DataType: 'String', StringValue: v }]),
    );
    await this.ctx.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: await this.queueUrl(),
        MessageBody: body,
        DelaySeconds: Math.max(0, Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(delaySeconds))),
        MessageAttributes,
      }),
    );
  }

  /** Move the body to S3, under a key alive until `neededUntil`, and return the envelope that points at it. */
  private async offload(envelope: Envelope, neededUntil: number, now: number): Promise<Envelope> {
    if (envelope.body === undefined) return envelope;
    const key = bodyKey(envelope.messageId, neededUntil, now);
    await this.ctx.payloads.putBlob(key, new Uint8Array(Buffer.from(envelope.body, 'utf8')));
    return { ...envelope, body: undefined, s3Key: key };
  }

  /**
   * Send `envelope` so that it is delivered no earlier than `delaySeconds` from now (see
   * delays.ts). `allowScheduler: false` forces SQS hops (the consumer's re-delays use that).
   */
  async send(
    envelope: Envelope,
    delaySeconds?: number,
    opts: { allowScheduler?: boolean; now?: number } = {},
  ): Promise<SendResult> {
    const now = opts.now ?? Date.now();
    const plan = planDelay(
      delaySeconds,
      now,
      this.ctx.config.maxDelayHopSeconds,
      this.schedulerEnabled && opts.allowScheduler !== false,
    );
    return this.sendPlanned(envelope, plan, now);
  }

  /**
   * Send with an explicit plan (used for hops, where the due time is already fixed). `now` is the
   * clock the body's lifetime is judged by (tests move it forward instead of waiting days).
   */
  async sendPlanned(
    envelope: Envelope,
    plan: DelayPlan,
    now: number = Date.now(),
    /** Another queue than the World's (the DLQ): SQS only, never a schedule. */
    queueUrl?: string,
  ): Promise<SendResult> {
    const neededUntil = bodyNeededUntil(plan, now);
    // A body already in S3 (a hop or re-send of an offloaded message) must outlive this copy.
    let out = await ensureBodyLifetime(this.ctx.payloads, envelope, neededUntil, now);
    if (out.body !== undefined && Buffer.byteLength(out.body, 'utf8') > this.ctx.config.payloadThresholdBytes) {
      out = await this.offload(out, neededUntil, now);
    }
    if (plan.kind === 'schedule' && queueUrl === undefined)
      return this.sendScheduled(out, plan.deliverAt, plan.at, neededUntil, now);

    const deliverAt = plan.kind === 'sqs' ? (plan.deliverAt ?? out.deliverAt) : out.deliverAt;
    const delaySeconds = plan.kind === 'sqs' ? plan.delaySeconds : 0;
    const withDue: Envelope = { ...out, deliverAt };
    try {
      return await this.sendSqs(withDue, delaySeconds, queueUrl);
    } catch (err) {
      // The queue may be configured below 1 MiB (e.g. the 256 KiB default): retry through S3.
      if (withDue.body === undefined || !isMessageTooLong(err)) throw err;
      return this.sendSqs(await this.offload(withDue, neededUntil, now), delaySeconds, queueUrl);
    }
  }

  private sendSqs(envelope: Envelope, delaySeconds: number, queueUrl?: string): Promise<SendResult> {
    const queue = queueNameOf(queueUrl ?? this.ctx.config.queue);
    return withSendSpan({ queue, via: 'sqs', messageId: envelope.messageId, delaySeconds }, async (span) => {
      const body = envelope.s3Key !== undefined ? s3PlaceholderBody(envelope.s3Key) : (envelope.body as string);
      const out = await this.ctx.clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl ?? (await this.queueUrl()),
          MessageBody: body,
          DelaySeconds: delaySeconds > 0 ? delaySeconds : undefined,
          MessageAttributes: envelopeAttributes(envelope),
        }),
      );
      span.setAttributes({
        'messaging.message.id': out.MessageId,
        'eve_world_aws.offloaded': envelope.s3Key !== undefined,
      });
      return { via: 'sqs', sqsMessageId: out.MessageId, s3Key: envelope.s3Key };
    });
  }

  private sendScheduled(
    envelope: Envelope,
    deliverAt: number,
    at: Date,
    neededUntil: number,
    now: number,
  ): Promise<SendResult> {
    const config = this.ctx.config;
    const info = {
      queue: queueNameOf(config.queue),
      via: 'scheduler' as const,
      messageId: envelope.messageId,
      delaySeconds: Math.max(0, Math.round((deliverAt - now) / 1000)),
    };
    return withSendSpan(info, async () => {
      let withDue: Envelope = { ...envelope, deliverAt };
      let input = encodeEnvelope(withDue);
      if (input.length > SCHEDULER_INPUT_LIMIT) {
        withDue = await this.offload(withDue, neededUntil, now);
        input = encodeEnvelope(withDue);
      }
      const name = scheduleName(envelope.messageId, at);
      const [queueArn, deadLetterArn] = await Promise.all([
        this.resolveArn(config.queue),
        this.resolveArn(config.deadLetterQueue),
      ]);
      await createOneTimeSchedule(this.scheduler as SchedulerPort, {
        name,
        group: config.schedulerGroup,
        at,
        queueArn,
        roleArn: config.schedulerRoleArn as string,
        input,
        deadLetterArn,
      });
      return { via: 'scheduler', scheduleName: name, s3Key: withDue.s3Key };
    });
  }
}

/** `make()`'s promise, kept in `cache` under `ref`; a failed one is dropped, so it is retried on next use. */
function cached(cache: Map<string, Promise<string>>, ref: string, make: () => Promise<string>): Promise<string> {
  let p = cache.get(ref);
  if (!p) {
    p = make();
    p.catch(() => cache.delete(ref));
    cache.set(ref, p);
  }
  return p;
}

/**
 * The SQS transport of `ctx`'s queue and DLQ: long delays through the Scheduler when a scheduler
 * role is configured (or `scheduler` is given), else SQS hops.
 */
export function createTransport(ctx: WorldContext, scheduler?: SchedulerPort): SqsTransport {
  return new SqsTransport(ctx, scheduler ?? (ctx.config.schedulerRoleArn ? schedulerPort(ctx.clients) : undefined));
}
