/**
 * SQS plumbing of the send side: resolves the queue and DLQ (name or URL, as configured) and sends
 * one logical message ({@link Envelope}) with its delay. The per-receipt calls of the receive side
 * are in src/consumer/receipts.ts.
 *
 * Invariants:
 * - A body larger than `payloadThresholdBytes` (or one SQS rejects as too long) is written to S3
 *   under `queue/<messageId>` before the message that points at it is sent.
 * - `send` resolves only once SQS (or the Scheduler) accepted the message; it throws otherwise, so
 *   callers can keep the original message until its replacement exists.
 */
import { GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { isMessageTooLong } from '../aws/errors.js';
import type { WorldContext } from '../context.js';
import {
  createOneTimeSchedule,
  type DelayPlan,
  planDelay,
  SCHEDULER_INPUT_LIMIT,
  type SchedulerPort,
  scheduleName,
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

const isUrl = (ref: string) => /^https?:\/\//.test(ref);

export class SqsTransport {
  private urls = new Map<string, Promise<string>>();
  private arns = new Map<string, Promise<string>>();

  constructor(
    readonly ctx: WorldContext,
    private readonly scheduler?: SchedulerPort,
  ) {}

  /** True when long delays go through EventBridge Scheduler. */
  get schedulerEnabled(): boolean {
    return this.scheduler !== undefined && this.ctx.config.schedulerRoleArn !== undefined;
  }

  private resolveUrl(ref: string): Promise<string> {
    let p = this.urls.get(ref);
    if (!p) {
      p = isUrl(ref)
        ? Promise.resolve(ref)
        : this.ctx.clients.sqs.send(new GetQueueUrlCommand({ QueueName: ref })).then((o) => {
            if (!o.QueueUrl) throw new Error(`GetQueueUrl returned no URL for queue ${ref}`);
            return o.QueueUrl;
          });
      // A failed lookup is retried on next use instead of being cached.
      p.catch(() => this.urls.delete(ref));
      this.urls.set(ref, p);
    }
    return p;
  }

  private resolveArn(ref: string): Promise<string> {
    let p = this.arns.get(ref);
    if (!p) {
      p = this.resolveUrl(ref)
        .then((url) =>
          this.ctx.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })),
        )
        .then((o) => {
          const arn = o.Attributes?.QueueArn;
          if (!arn) throw new Error(`GetQueueAttributes returned no QueueArn for ${ref}`);
          return arn;
        });
      p.catch(() => this.arns.delete(ref));
      this.arns.set(ref, p);
    }
    return p;
  }

  queueUrl(): Promise<string> {
    return this.resolveUrl(this.ctx.config.queue);
  }

  dlqUrl(): Promise<string> {
    return this.resolveUrl(this.ctx.config.deadLetterQueue);
  }

  /** Move the body to S3 and return the envelope that points at it. */
  private async offload(envelope: Envelope): Promise<Envelope> {
    if (envelope.body === undefined) return envelope;
    const key = `queue/${envelope.messageId}`;
    await this.ctx.payloads.putBlob(key, new Uint8Array(Buffer.from(envelope.body, 'utf8')));
    return { ...envelope, body: undefined, s3Key: key };
  }

  /**
   * Send `envelope` so that it is delivered no earlier than `delaySeconds` from now (see delays.ts).
   * `allowScheduler: false` forces SQS hops (the consumer's re-delays use that).
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
    return this.sendPlanned(envelope, plan);
  }

  /** Send with an explicit plan (used for hops, where the due time is already fixed). */
  async sendPlanned(envelope: Envelope, plan: DelayPlan): Promise<SendResult> {
    let out = envelope;
    if (out.body !== undefined && Buffer.byteLength(out.body, 'utf8') > this.ctx.config.payloadThresholdBytes) {
      out = await this.offload(out);
    }
    if (plan.kind === 'schedule') return this.sendScheduled(out, plan.deliverAt, plan.at);

    const deliverAt = plan.kind === 'sqs' ? (plan.deliverAt ?? out.deliverAt) : out.deliverAt;
    const delaySeconds = plan.kind === 'sqs' ? plan.delaySeconds : 0;
    const withDue: Envelope = { ...out, deliverAt };
    try {
      return await this.sendSqs(withDue, delaySeconds);
    } catch (err) {
      // The queue may be configured below 1 MiB (e.g. the 256 KiB default): retry through S3.
      if (withDue.body === undefined || !isMessageTooLong(err)) throw err;
      return this.sendSqs(await this.offload(withDue), delaySeconds);
    }
  }

  private async sendSqs(envelope: Envelope, delaySeconds: number): Promise<SendResult> {
    const body = envelope.s3Key !== undefined ? s3PlaceholderBody(envelope.s3Key) : (envelope.body as string);
    const out = await this.ctx.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: await this.queueUrl(),
        MessageBody: body,
        DelaySeconds: delaySeconds > 0 ? delaySeconds : undefined,
        MessageAttributes: envelopeAttributes(envelope),
      }),
    );
    return { via: 'sqs', sqsMessageId: out.MessageId, s3Key: envelope.s3Key };
  }

  private async sendScheduled(envelope: Envelope, deliverAt: number, at: Date): Promise<SendResult> {
    const config = this.ctx.config;
    let withDue: Envelope = { ...envelope, deliverAt };
    let input = encodeEnvelope(withDue);
    if (input.length > SCHEDULER_INPUT_LIMIT) {
      withDue = await this.offload(withDue);
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
  }
}
