/**
 * The one sleep helper. Resolves after `ms`, or at once when `signal` aborts (it never rejects:
 * callers check `signal.aborted` themselves, so an abort is a clean early wake-up, not an error).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
