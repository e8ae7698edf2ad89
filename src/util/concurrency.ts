/**
 * Bounded concurrency: `fn` over a list with at most `limit` calls in flight.
 *
 * Invariants:
 * - Never more than `limit` calls of `fn` run at once; items are taken in order, each once.
 * - `stop()` is checked before each item is taken: once it returns true nothing new starts (the
 *   calls in flight finish).
 * - The first call that throws stops new items from starting; once the calls in flight have
 *   settled, that first error is thrown. Callers that must go on past a failure catch in `fn`.
 */

export interface LimitOptions {
  /** Checked before each item is taken; true starts nothing new. */
  stop?: () => boolean;
}

/** `fn(item, index)` for every item, at most `limit` at once; results in input order (holes where stopped). */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  opts: LimitOptions = {},
): Promise<R[]> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a whole number >= 1, got ${limit}`);
  const results: R[] = new Array(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (next < items.length && failure === undefined && !opts.stop?.()) {
      const i = next++;
      try {
        results[i] = await fn(items[i], i);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}

/** {@link mapLimited} for calls whose results are not needed. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<unknown>,
  opts: LimitOptions = {},
): Promise<void> {
  await mapLimited(items, limit, fn, opts);
}
