/**
 * The failure backoff: how long a copy whose delivery failed waits before SQS shows it again, paced
 * by its receive count. The holds and the dependency park are tuning options
 * (src/config/tuning.ts), their jitter src/util/jitter.ts.
 */

/** Backoff before SQS shows a failed delivery again: 2, 4, 8 … 64 s, never above visibility. */
export function failureBackoffSeconds(receiveCount: number, visibilityTimeoutSeconds: number): number {
  return Math.min(visibilityTimeoutSeconds, 2 ** Math.min(Math.max(1, receiveCount), 6));
}
