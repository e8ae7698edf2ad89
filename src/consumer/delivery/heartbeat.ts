/**
 * The visibility heartbeat: a received copy stays hidden while its delivery (or the early delivery
 * it waits for) runs, so SQS does not show it again to start a second one.
 *
 * Invariant: it stops when the delivery ends or is aborted, so an abandoned copy reappears.
 */
import type { Logger } from '../../telemetry/log.js';
import type { DeliveryDeps } from './deps.js';

/** Every third of the visibility in force, extends the copy's by that visibility; returns the stop function. */
export function startHeartbeat(receiptHandle: string, deps: DeliveryDeps, logger: Logger): () => void {
  const signal = deps.signal;
  if (!receiptHandle || signal?.aborted) return () => {};
  const seconds = Math.max(1, deps.visibilitySeconds);
  const timer = setInterval(
    () => {
      deps.receipts.changeVisibility(receiptHandle, seconds).catch((err) => {
        logger.warn(`[eve-world-aws] could not extend visibility of a running delivery: ${String(err)}`);
      });
    },
    Math.max(500, (seconds * 1000) / 3),
  );
  timer.unref?.();
  const stop = () => clearInterval(timer);
  signal?.addEventListener('abort', stop, { once: true });
  return () => {
    stop();
    signal?.removeEventListener('abort', stop);
  };
}
