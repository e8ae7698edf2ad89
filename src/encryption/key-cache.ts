/**
 * A bounded cache of unwrapped run data keys (plaintext key material, so it is kept small and
 * short-lived).
 *
 * Invariants:
 * - At most `maxEntries` keys; inserting one more evicts the least recently used.
 * - An entry older than `maxAgeMs` is never returned (it is dropped on lookup), so a key is
 *   unwrapped with KMS again at least that often per process, and a revoked KMS grant takes effect
 *   within that time.
 * - Callers get a copy: nothing outside can change the cached bytes.
 */

export interface KeyCacheOptions {
  /** Default 1000 keys (32 bytes each plus map overhead: well under 1 MB). */
  maxEntries?: number;
  /** Default 15 minutes. */
  maxAgeMs?: number;
  /** Clock, for tests of expiry. */
  now?: () => number;
}

const DEFAULT_KEY_CACHE_ENTRIES = 1000;
const DEFAULT_KEY_CACHE_AGE_MS = 15 * 60 * 1000;

export class KeyCache {
  readonly #entries = new Map<string, { key: Uint8Array; at: number }>();
  readonly #max: number;
  readonly #maxAge: number;
  readonly #now: () => number;

  constructor(opts: KeyCacheOptions = {}) {
    this.#max = opts.maxEntries ?? DEFAULT_KEY_CACHE_ENTRIES;
    this.#maxAge = opts.maxAgeMs ?? DEFAULT_KEY_CACHE_AGE_MS;
    this.#now = opts.now ?? Date.now;
    if (!Number.isInteger(this.#max) || this.#max < 1)
      throw new RangeError(`maxEntries must be a whole number >= 1, got ${this.#max}`);
    if (!(this.#maxAge > 0)) throw new RangeError(`maxAgeMs must be > 0, got ${this.#maxAge}`);
  }

  get size(): number {
    return this.#entries.size;
  }

  get(runId: string): Uint8Array | undefined {
    const e = this.#entries.get(runId);
    if (!e) return undefined;
    this.#entries.delete(runId);
    if (this.#now() - e.at >= this.#maxAge) {
      e.key.fill(0);
      return undefined;
    }
    this.#entries.set(runId, e); // most recently used goes last
    return e.key.slice();
  }

  set(runId: string, key: Uint8Array): void {
    this.#entries.delete(runId);
    this.#entries.set(runId, { key: key.slice(), at: this.#now() });
    while (this.#entries.size > this.#max) this.delete(this.#entries.keys().next().value as string);
  }

  /** Forget one key (zeroed). */
  delete(runId: string): void {
    this.#entries.get(runId)?.key.fill(0);
    this.#entries.delete(runId);
  }

  clear(): void {
    for (const e of this.#entries.values()) e.key.fill(0);
    this.#entries.clear();
  }
}
