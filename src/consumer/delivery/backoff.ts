/**
 * How long a copy that is not acked waits before SQS shows it (or its replacement) again.
 */

/**
 * Longest wait of a copy whose request could not be built because a dependency (S3, the
 * signing-secret source) is failing (s, before jitter; the queue visibility timeout when shorter): the
 * copy is replaced each time, so its receive count cannot pace the retries as the failure backoff
 * does.
 */
export const DEPENDENCY_PARK_SECONDS = 15;

/** Backoff before SQS shows a failed delivery again: 2, 4, 8 … 64 s, never above visibility. */
export function failureBackoffSeconds(receiveCount: number, visibilityTimeoutSeconds: number): number {
  return Math.min(visibilityTimeoutSeconds, 2 ** Math.min(Math.max(1, receiveCount), 6));
}
