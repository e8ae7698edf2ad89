/**
 * In-process SQS long-poll consumer for plain Node hosts (`eve start`), run by the World's
 * `start()`.
 *
 * Invariants:
 * - At most `concurrency` deliveries run at once; a receive asks only for free slots (<= 10).
 * - A message is deleted only when the shared delivery core says so (ack, or its replacement was
 *   sent); anything else stays in SQS and reappears after its visibility timeout.
 * - `close()` stops receiving (aborting the current long poll), waits up to `drainTimeoutMs` for
 *   in-flight deliveries, then aborts what is left; those messages simply reappear later.
 * - `close()` is idempotent; `start()` after `close()` is refused.
 */
import { type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { setTimeout as sleep } from 'node:timers/promises';
import { consoleLogger, type DeliveryDeps, type DeliveryOutcome, deliverMessage, type InboundMessage, type Logger } from '../queue/delivery.js';
import type { SqsTransport } from '../queue/transport.js';

export interface PollerOptions extends Omit<DeliveryDeps, 'signal' | 'transport'> {
  transport: SqsTransport;
  concurrency: number;
  /** Long-poll wait (s), 0..20. */
  waitTimeSeconds?: number;
  drainTimeoutMs?: number;
  /**
   * Resolves true when deliveries can be attempted (e.g. the HTTP flow route accepts
   * connections). While false the poller does not receive, so no receive count is burned.
   */
  ready?: () => Promise<boolean>;
  /** Observes every outcome (tests, metrics). */
  onOutcome?: (outcome: DeliveryOutcome, msg: InboundMessage) => void;
}

/** Normalise an SDK message. */
export function inboundFromSdk(m: Message): InboundMessage {
  const attributes: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) attributes[k] = v.StringValue;
  return {
    sqsMessageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes,
    receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? '1') || 1,
  };
}

export class SqsPoller {
  private readonly logger: Logger;
  private readonly inFlight = new Set<Promise<void>>();
  /** Logical message ids being handled, so a duplicate copy never runs concurrently. */
  private readonly handling = new Set<string>();
  private readonly stopController = new AbortController();
  /** Aborts deliveries still running when the drain timeout passes. */
  private readonly deliveryController = new AbortController();
  private loop?: Promise<void>;
  private slotFreed?: () => void;
  private closed = false;

  constructor(private readonly opts: PollerOptions) {
    this.logger = opts.logger ?? consoleLogger;
  }

  get running(): boolean {
    return this.loop !== undefined && !this.closed;
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  start(): void {
    if (this.closed) throw new Error('SqsPoller was closed; create a new one');
    this.loop ??= this.run().catch((err) => this.logger.error(`[eve-world-aws] SQS consumer stopped: ${String(err)}`));
  }

  async close(): Promise<void> {
    if (this.closed) return this.loop?.then(() => undefined);
    this.closed = true;
    this.stopController.abort();
    this.slotFreed?.();
    await this.loop;
    if (this.inFlight.size > 0) {
      const drained = Promise.allSettled([...this.inFlight]).then(() => true);
      const timedOut = sleep(this.opts.drainTimeoutMs ?? 30_000, false, { ref: false });
      if (!(await Promise.race([drained, timedOut]))) {
        this.logger.warn(
          `[eve-world-aws] ${this.inFlight.size} deliveries still running at shutdown; they will be redelivered after the visibility timeout`,
        );
        this.deliveryController.abort();
      }
    }
  }

  private async run(): Promise<void> {
    const { transport } = this.opts;
    const signal = this.stopController.signal;
    const concurrency = Math.max(1, this.opts.concurrency);
    let failures = 0;
    while (!signal.aborted) {
      while (this.inFlight.size >= concurrency && !signal.aborted) {
        await new Promise<void>((r) => {
          this.slotFreed = r;
        });
      }
      if (signal.aborted) break;
      if (this.opts.ready && !(await this.opts.ready())) {
        await sleep(500, undefined, { signal }).catch(() => undefined);
        continue;
      }
      let messages: Message[] = [];
      try {
        const out = await transport.ctx.clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: await transport.queueUrl(),
            MaxNumberOfMessages: Math.min(10, concurrency - this.inFlight.size),
            WaitTimeSeconds: this.opts.waitTimeSeconds ?? 20,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          }),
          { abortSignal: signal },
        );
        messages = out.Messages ?? [];
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        if (failures === 1 || failures % 30 === 0) {
          this.logger.warn(`[eve-world-aws] SQS receive failed (${failures}x), retrying: ${String(err)}`);
        }
        await sleep(Math.min(10_000, 250 * 2 ** Math.min(failures, 6)), undefined, { signal }).catch(() => undefined);
        continue;
      }
      for (const m of messages) this.track(this.handle(inboundFromSdk(m)));
    }
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    p.finally(() => {
      this.inFlight.delete(p);
      const wake = this.slotFreed;
      this.slotFreed = undefined;
      wake?.();
    });
  }

  private async handle(msg: InboundMessage): Promise<void> {
    let outcome: DeliveryOutcome;
    try {
      outcome = await deliverMessage(msg, { ...this.opts, signal: this.deliveryController.signal, inFlight: this.handling });
    } catch (err) {
      // An SQS/S3 call inside the core failed (e.g. sending the next hop): keep the message.
      this.logger.warn(`[eve-world-aws] delivery of SQS message ${msg.sqsMessageId} failed, it will be retried: ${String(err)}`);
      outcome = { action: 'keep', reason: 'failed', detail: String(err) };
    }
    if (outcome.action === 'delete') {
      try {
        await this.opts.transport.deleteMessage(msg.receiptHandle);
      } catch (err) {
        // Worst case the message is delivered again: at-least-once, never lost.
        this.logger.warn(`[eve-world-aws] could not delete SQS message ${msg.sqsMessageId}: ${String(err)}`);
      }
    }
    this.opts.onOutcome?.(outcome, msg);
  }
}
