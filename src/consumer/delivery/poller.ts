/**
 * In-process SQS long-poll consumer for plain Node hosts (`eve start`), run by World `start()`.
 *
 * Invariants:
 * - At most `concurrency` deliveries run at once, early ones (./early/verdict-registry.ts)
 *   included; a receive asks only for free slots (<= 10), and an early delivery starts only in a
 *   free slot.
 * - Copies are received with the consumer's own short visibility (`visibilitySeconds`, default 30
 *   s) and the pipeline's heartbeat extends it while the handler runs, so a process killed
 *   mid-delivery delays its messages by at most that visibility, not the queue's 900 s.
 * - A copy is deleted only when the pipeline says so (ack, or its replacement was sent).
 * - `close()` never strands a received copy: it lets the current long poll finish (it is not
 *   aborted: SQS may hand a message to an abandoned receive) and releases (visibility 0) whatever
 *   that poll returns; deliveries still running after `drainTimeoutMs` are aborted and released.
 * - `close()` also receives, for at most {@link EARLY_COPY_WAIT_MS}, the copies of early deliveries
 *   begun in that window that have not arrived yet, and settles them by their verdicts (anything
 *   else it receives then is released): an acked early delivery is not delivered again after a
 *   restart. A copy another process received is that process's to deliver.
 * - The loop survives any error (receive, `ready()`, the pipeline): it logs, backs off, goes on.
 * - While the circuit breaker is open (the flow route is down) nothing is received.
 * - `close()` is idempotent; `start()` after `close()` is refused.
 */
import { AsyncResource } from 'node:async_hooks';
import type { Message } from '@aws-sdk/client-sqs';
import { queueNameOf } from '../../aws/arn.js';
import { sleep } from '../../aws/sleep.js';
import { CONSUMER_OPTIONS } from '../../config/index.js';
import { type Envelope, MSG_ATTR } from '../../queue/encoding.js';
import { consoleLogger, type Logger } from '../../telemetry/log.js';
import { observeEarlyDelivery } from './delivery-telemetry.js';
import { EarlyDeliveries } from './early/verdict-registry.js';
import {
  type DeliveryDeps,
  type DeliveryOutcome,
  deliverEarly,
  deliverMessage,
  type InboundMessage,
  type Verdict,
} from './pipeline.js';

export interface PollerOptions extends Omit<DeliveryDeps, 'signal'> {
  concurrency: number;
  /** Long-poll wait (s), 0..20. */
  waitTimeSeconds: number;
  drainTimeoutMs?: number;
  /**
   * Resolves true when deliveries can be attempted (e.g. the HTTP flow route accepts
   * connections). While false the poller does not receive, so no receive count is burned.
   */
  ready?: () => Promise<boolean>;
  /** Observes every outcome (tests, metrics). */
  onOutcome?: (outcome: DeliveryOutcome, msg: InboundMessage) => void;
}

export function inboundFromSdk(m: Message): InboundMessage {
  const attributes: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) attributes[k] = v.StringValue;
  return {
    sqsMessageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes,
    receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? '1') || 1,
    sentAt: Number(m.Attributes?.SentTimestamp) || undefined,
  };
}

/** How long `close()` waits for the copies of recent early deliveries (ms). */
const EARLY_COPY_WAIT_MS = 5_000;

export class SqsPoller {
  private readonly logger: Logger;
  private readonly inFlight = new Set<Promise<void>>();
  /** Receipt handles of the copies being delivered, released if still running at shutdown. */
  private readonly receiptsHeld = new Set<string>();
  /** Logical message ids being handled, so a duplicate copy never runs concurrently. */
  private readonly handling = new Set<string>();
  /** Messages delivered early whose SQS copies have not been received here yet. */
  private readonly early = new EarlyDeliveries<Verdict>();
  /**
   * Runs an early delivery in the loop's async context (`start()`'s), not the sender's: like a
   * received copy, it must not inherit the sender's span, log context or delivery scope.
   */
  private inLoopContext: (fn: () => Promise<Verdict | undefined>) => Promise<Verdict | undefined> = (fn) => fn();
  /** Wakes sleeps of the loop at close; never aborts a receive. */
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

  start(): void {
    if (this.closed) throw new Error('SqsPoller was closed; create a new one');
    if (this.loop) return;
    this.inLoopContext = AsyncResource.bind((fn: () => Promise<Verdict | undefined>) => fn());
    this.loop = this.run();
  }

  /** Whether an early delivery may start now (./early/offer.ts asks). */
  hasFreeSlot(): boolean {
    return this.inFlight.size < Math.max(1, this.opts.concurrency);
  }

  /**
   * Delivers the message whose SQS copy is `copy`, being sent by this process right now, at once
   * under its own id `earlyId` (attempt 1), which no SQS copy carries. Its verdict waits in the
   * registry for the copy, if the copy comes here (./early/verdict-registry.ts). Eligibility is the
   * offer's to decide (./early/offer.ts).
   */
  deliverEarly(copy: Envelope, earlyId: string, producer?: string): void {
    const envelope: Envelope = { ...copy, attemptOffset: 0 };
    const deps: DeliveryDeps = { ...this.opts, signal: this.deliveryController.signal, inFlight: this.handling };
    const verdict = this.inLoopContext(() =>
      observeEarlyDelivery(envelope, earlyId, queueNameOf(this.opts.config.queue), producer, () =>
        deliverEarly(envelope, earlyId, deps),
      ),
    );
    this.early.begin(copy.messageId, earlyId, verdict);
    this.track(
      verdict.then(
        () => undefined,
        () => undefined,
      ),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return this.loop?.then(() => undefined);
    this.closed = true;
    this.stopController.abort();
    this.slotFreed?.();
    await this.loop;
    await this.settleEarlyCopies();
    if (this.inFlight.size > 0) {
      const drained = Promise.allSettled([...this.inFlight]).then(() => true);
      const timedOut = sleep(this.opts.drainTimeoutMs ?? CONSUMER_OPTIONS.drainTimeoutMs.default).then(() => false);
      if (!(await Promise.race([drained, timedOut]))) {
        this.logger.warn(
          `[eve-world-aws] ${this.inFlight.size} deliveries still running at shutdown; releasing them for redelivery`,
        );
        this.deliveryController.abort();
        // An in-process handler may ignore the abort: release its copy now instead of waiting.
        await Promise.all([...this.receiptsHeld].map((r) => this.opts.receipts.release(r).catch(() => undefined)));
      }
    }
  }

  /** At close: receive the copies of recent early deliveries (see the invariants above). */
  private async settleEarlyCopies(): Promise<void> {
    const started = Date.now();
    for (;;) {
      const newest = this.early.newestAt();
      const now = Date.now();
      if (newest === undefined || now - newest > EARLY_COPY_WAIT_MS || now - started > EARLY_COPY_WAIT_MS) return;
      let messages: Message[];
      try {
        messages = await this.opts.receipts.receive({
          max: 10,
          waitTimeSeconds: 1,
          visibilitySeconds: this.opts.visibilitySeconds,
        });
      } catch {
        return;
      }
      for (const m of messages) {
        const msg = inboundFromSdk(m);
        const id = msg.attributes[MSG_ATTR.id];
        if (id !== undefined && this.early.has(id)) this.track(this.handle(msg));
        else await this.opts.receipts.release(msg.receiptHandle).catch(() => undefined);
      }
    }
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    const concurrency = Math.max(1, this.opts.concurrency);
    let failures = 0;
    while (!signal.aborted) {
      try {
        while (this.inFlight.size >= concurrency && !signal.aborted) {
          await new Promise<void>((r) => {
            this.slotFreed = r;
          });
        }
        if (signal.aborted) break;
        const breaker = this.opts.breaker;
        if (breaker && !breaker.tryAcquire()) {
          await sleep(Math.max(100, breaker.waitMs()), signal);
          continue;
        }
        const probing = breaker?.isOpen === true;
        if (this.opts.ready && !(await this.opts.ready())) {
          breaker?.neutral();
          await sleep(500, signal);
          continue;
        }
        // Not aborted on close: the poll finishes and what it returns is released below.
        const messages = await this.opts.receipts.receive({
          max: probing ? 1 : concurrency - this.inFlight.size,
          waitTimeSeconds: this.opts.waitTimeSeconds,
          visibilitySeconds: this.opts.visibilitySeconds,
        });
        failures = 0;
        if (probing && messages.length === 0) breaker?.neutral();
        if (this.closed) {
          await Promise.all(
            messages.map((m) => this.opts.receipts.release(m.ReceiptHandle ?? '').catch(() => undefined)),
          );
          break;
        }
        for (const m of messages) this.track(this.handle(inboundFromSdk(m)));
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        if (failures === 1 || failures % 30 === 0) {
          this.logger.warn(`[eve-world-aws] SQS consumer loop failed (${failures}x), retrying: ${String(err)}`);
        }
        await sleep(Math.min(10_000, 250 * 2 ** Math.min(failures, 6)), signal);
      }
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
    this.receiptsHeld.add(msg.receiptHandle);
    try {
      await this.deliver(msg);
    } finally {
      this.receiptsHeld.delete(msg.receiptHandle);
    }
  }

  private async deliver(msg: InboundMessage): Promise<void> {
    let outcome: DeliveryOutcome;
    try {
      outcome = await deliverMessage(msg, {
        ...this.opts,
        signal: this.deliveryController.signal,
        inFlight: this.handling,
        early: this.early,
      });
    } catch (err) {
      // An SQS/S3 call inside the pipeline failed (e.g. sending the next hop): keep the copy.
      this.logger.warn(
        `[eve-world-aws] delivery of SQS message ${msg.sqsMessageId} failed, it will be retried: ${String(err)}`,
      );
      outcome = { action: 'keep', reason: 'failed', detail: String(err) };
    }
    // A probe that ended in neither success nor failure (a hop, a poison message) frees the slot.
    this.opts.breaker?.neutral();
    if (outcome.action === 'delete') {
      try {
        await this.opts.receipts.delete(msg.receiptHandle);
      } catch (err) {
        // Worst case the message is delivered again: at-least-once, never lost.
        this.logger.warn(`[eve-world-aws] could not delete SQS message ${msg.sqsMessageId}: ${String(err)}`);
      }
    }
    try {
      this.opts.onOutcome?.(outcome, msg);
    } catch (err) {
      this.logger.warn(`[eve-world-aws] delivery outcome observer threw: ${String(err)}`);
    }
  }
}
