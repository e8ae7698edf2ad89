/**
 * A cache bounded by bytes (and optionally by entries), evicting the least recently written.
 *
 * Invariants:
 * - After every `set`, the entries' sizes sum to at most `maxBytes` and there are at most
 *   `maxEntries` of them, except that the entry just set is never evicted by its own `set` (a
 *   single entry larger than `maxBytes` stays alone until the next write).
 * - An entry over `maxEntryBytes` is not kept: its `set` removes the key and returns false.
 * - Recency is by write: `set` makes an entry the most recent; `get` does not reorder. Eviction
 *   takes the least recently written first.
 * - Sizes are the caller's (`set(key, value, bytes)`); re-setting a key replaces its size.
 */

export interface ByteLruOptions {
  /** Budget for the sum of entry sizes. */
  maxBytes: number;
  /** Entries larger than this are not kept (default: no limit). */
  maxEntryBytes?: number;
  /** At most this many entries (default: no limit). */
  maxEntries?: number;
}

export class ByteLru<K, V> {
  readonly #entries = new Map<K, { value: V; bytes: number }>();
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  readonly #maxEntries: number;
  #bytes = 0;

  constructor(opts: ByteLruOptions) {
    this.#maxBytes = opts.maxBytes;
    this.#maxEntryBytes = opts.maxEntryBytes ?? Number.POSITIVE_INFINITY;
    this.#maxEntries = opts.maxEntries ?? Number.POSITIVE_INFINITY;
    if (!(this.#maxBytes >= 0)) throw new RangeError(`maxBytes must be >= 0, got ${opts.maxBytes}`);
    if (!(this.#maxEntries >= 1)) throw new RangeError(`maxEntries must be >= 1, got ${opts.maxEntries}`);
  }

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /** Keep `value` under `key` as the most recent entry; false (and `key` removed) when it is too large. */
  set(key: K, value: V, bytes: number): boolean {
    this.delete(key);
    if (bytes > this.#maxEntryBytes) return false;
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    while (this.#entries.size > 1 && (this.#bytes > this.#maxBytes || this.#entries.size > this.#maxEntries))
      this.delete(this.#entries.keys().next().value as K);
    return true;
  }

  delete(key: K): boolean {
    const e = this.#entries.get(key);
    if (!e) return false;
    this.#entries.delete(key);
    this.#bytes -= e.bytes;
    return true;
  }
}
