/**
 * Storage's retry pacing for contention (cancelled transactions, moved versions): full-jitter
 * exponential backoff, 10 ms, 20 ms, ... capped at 1 s per wait, so retries spread out instead of
 * colliding again.
 */
import { sleep } from '../../aws/sleep.js';

export function backoff(attempt: number): Promise<void> {
  const cap = Math.min(1000, 10 * 2 ** attempt);
  return sleep(Math.random() * cap);
}
