/**
 * Circuit breaker in front of the flow route. When the route is down (connection errors, 5xx, 429,
 * 408), delivering more messages only burns their receive counts toward the DLQ, so the consumer
 * stops receiving while the breaker is open and probes with one delivery after a cool-down
 * (doubling up to `maxCooldownMs`). One log line when it opens, one when it closes.
 *
 * Invariants:
 * - Only failures that reached the network count (unreachable, 5xx, 429, 408: the pipeline never
 *   reports an error raised in this process, which is the message's fault, see pipeline.ts).
 * - Opening needs an unbroken streak of such failures spanning `threshold` DISTINCT messages: one
 *   message failing over and over (or a few copies of it) must reach the DLQ or its own backoff,
 *   never pause the whole consumer.
 * - At most one probe at a time while open; a probe that ends neither way (`neutral`) frees the
 *   slot at once.
 */
import { CONSUMER_OPTIONS } from '../../config/index.js';
import type { Logger } from '../../telemetry/log.js';
import { countMetric } from '../../telemetry/metrics.js';

export class CircuitBreaker {
  private state: 'closed' | 'open' | 'half-open' = 'closed';
  private streak = 0;
  private streakMessages = new Set<string>();
  private cooldownMs: number;
  private openedAt = 0;
  private probing = false;
  private readonly threshold: number;
  private readonly baseCooldownMs: number;
  private readonly maxCooldownMs: number;
  private readonly now: () => number;

  constructor(
    private readonly logger: Logger,
    private readonly what: string,
    opts: { threshold?: number; cooldownMs?: number; maxCooldownMs?: number; now?: () => number } = {},
  ) {
    this.threshold = opts.threshold ?? 3;
    this.baseCooldownMs = opts.cooldownMs ?? CONSUMER_OPTIONS.breakerCooldownMs.default;
    this.maxCooldownMs = opts.maxCooldownMs ?? 60_000;
    this.cooldownMs = this.baseCooldownMs;
    this.now = opts.now ?? Date.now;
  }

  get isOpen(): boolean {
    return this.state !== 'closed';
  }

  /** Seconds a parked message should stay hidden: the current cool-down. */
  get cooldownSeconds(): number {
    return Math.ceil(this.cooldownMs / 1000);
  }

  /** ms until a probe may run (0 = deliveries may go ahead now). */
  waitMs(): number {
    if (this.state === 'closed') return 0;
    if (this.probing) return 250;
    return Math.max(0, this.openedAt + this.cooldownMs - this.now());
  }

  /**
   * Take permission for one delivery: always while closed; one probe at a time once the
   * cool-down has passed while open.
   */
  tryAcquire(): boolean {
    if (this.state === 'closed') return true;
    if (this.probing || this.now() < this.openedAt + this.cooldownMs) return false;
    this.state = 'half-open';
    this.probing = true;
    return true;
  }

  succeeded(): void {
    this.streak = 0;
    this.streakMessages.clear();
    this.probing = false;
    if (this.state !== 'closed') {
      this.logger.info(`[eve-world-aws] ${this.what} answers again; circuit closed, consuming the queue`);
      this.state = 'closed';
      this.cooldownMs = this.baseCooldownMs;
    }
  }

  /**
   * Record an outage-class failure. `ambiguous` marks a plain 500 (maybe the handler threw).
   * Returns true when the failure should be treated as an outage (the breaker is open now).
   */
  failed(messageId: string, detail: string, _ambiguous = false): boolean {
    this.streak++;
    this.streakMessages.add(messageId);
    if (this.state === 'half-open') {
      this.probing = false;
      this.cooldownMs = Math.min(this.maxCooldownMs, this.cooldownMs * 2);
      this.state = 'open';
      this.openedAt = this.now();
      return true;
    }
    if (this.state === 'open') return true;
    // `_ambiguous` (a plain 500, also what a handler that throws returns) needs nothing more:
    // the streak must span distinct messages either way.
    if (this.streakMessages.size < this.threshold) return false;
    this.state = 'open';
    this.openedAt = this.now();
    countMetric('BreakerOpens');
    this.logger.warn(
      `[eve-world-aws] ${this.what} is failing (${this.streak} deliveries of ${this.streakMessages.size} messages in a row, last: ${detail.slice(0, 200)}); ` +
        'circuit open, pausing consumption (messages are kept, not dead-lettered)',
    );
    return true;
  }

  /** A delivery that ended neither way (e.g. a poison 4xx): frees a probe slot. */
  neutral(): void {
    if (this.state === 'half-open') {
      this.probing = false;
      this.state = 'open';
      this.openedAt = this.now() - this.cooldownMs; // probe again at once
    }
  }
}
