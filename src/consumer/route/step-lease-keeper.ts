/**
 * The flow route's side of the step lease (src/storage/write/step-lease.ts): while a delivery's
 * handler runs, the leases of the steps it started are extended every ttl / 3; when it settles,
 * those still held (it failed, or returned before finishing them) are released for the redelivery.
 *
 * Invariants:
 * - The heartbeat stops when the request is aborted, so an abandoned delivery's leases lapse like a
 *   crashed one's.
 * - A tick never waits for the previous heartbeat: one that hangs in its SDK retries must not
 *   silence the next (each writes a larger count, and a late one changes nothing: see
 *   `extendStepLeases`).
 */
import type { StepLease } from '../../context/delivery-scope.js';
import { describeWithStack } from '../shared/error-text.js';

/** What the flow route needs to keep a delivery's step leases: the ttl, a heartbeat and a release. */
export interface StepLeasePort {
  ttlMs: number;
  /** Extend every lease in `lease.started`; returns the step ids whose lease was lost. */
  extend(lease: StepLease): Promise<string[]>;
  /** Release the leases still in `lease.started` (conditional on the token). */
  release(lease: StepLease): Promise<void>;
}

/**
 * Keeps `lease` alive until the returned function is called, which stops the heartbeat and
 * releases the leases still held (never throws: failures are logged).
 */
export function keepStepLeases(
  lease: StepLease,
  port: StepLeasePort,
  signal: AbortSignal,
  messageId: string,
  logError: (m: string) => void,
): () => Promise<void> {
  const timer = setInterval(
    () => {
      if (lease.started.size === 0) return;
      port.extend(lease).then(
        (lost) => {
          if (lost.length > 0)
            logError(
              `[eve-world-aws] flow route: delivery ${messageId} lost the lease of step(s) ${lost.join(', ')} (seen lapsed elsewhere and taken over or revoked, or finished elsewhere)`,
            );
        },
        (err) =>
          logError(
            `[eve-world-aws] flow route: could not extend step leases of ${messageId}: ${describeWithStack(err)}`,
          ),
      );
    },
    Math.max(100, Math.floor(lease.ttlMs / 3)),
  );
  timer.unref?.();
  const stop = () => clearInterval(timer);
  signal.addEventListener('abort', stop, { once: true });
  return async () => {
    stop();
    signal.removeEventListener('abort', stop);
    if (lease.started.size === 0) return;
    await port
      .release(lease)
      .catch((err) =>
        logError(
          `[eve-world-aws] flow route: could not release step leases of ${messageId}: ${describeWithStack(err)}`,
        ),
      );
  };
}
