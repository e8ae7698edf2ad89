/**
 * The visibility heartbeat: a received copy stays hidden while its delivery (or the early delivery
 * it waits for) runs, so SQS does not show it again to start a second one.
 *
 * Invariant: it stops when the delivery ends or is aborted, so an abandoned copy reappears.
 */
import type { Logger } from '../../telemetry/log.js';
import type { DeliveryDeps } from './deps.js';

/**
 * Keeps the copy hidden while the handler runs: every third of the visibility in force, extend it
 * by that visibility. Returns the stop function. Stops on abort, so an abandoned copy reappears.
 */
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
