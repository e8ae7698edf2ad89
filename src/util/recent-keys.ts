/**
 * The most recent `capacity` distinct keys seen, oldest forgotten first: "has this process seen
 * this key lately?" in bounded memory.
 *
 * Invariants:
 * - At most `capacity` keys are held; adding one more forgets the oldest.
 * - `add` answers whether the key was new; a key seen again keeps its place (first sight).
 */
export class RecentKeys {
  readonly #keys = new Set<string>();

  constructor(private readonly capacity: number) {}

  /** Records `key`; true when it was not among the recent keys. */
  add(key: string): boolean {
    if (this.#keys.has(key)) return false;
    this.#keys.add(key);
    if (this.#keys.size > this.capacity) this.#keys.delete(this.#keys.values().next().value as string);
    return true;
  }
}
