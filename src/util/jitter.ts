/**
 * The one jitter of a wait in whole seconds: copies that wait together (held, parked) do not all
 * come back in the same second.
 *
 * Invariant: `jittered(base)` is a whole number in [base, base + ceil(base / 2)] for a whole `base`
 * (`random` in [0, 1), as `Math.random`): up to half of the wait again, never less than it.
 */
export function jittered(base: number, random: () => number = Math.random): number {
  return base + Math.floor(random() * (Math.ceil(base / 2) + 1));
}
