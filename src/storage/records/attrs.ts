/**
 * Small helpers every record mapping shares. Times on entity items are epoch-ms numbers (so they
 * compare in conditions, e.g. `retryAfter`); inside opaque event data they use the codec's tagged
 * form instead.
 */
export function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

export const epochMs = (d: Date | undefined) => (d === undefined ? undefined : d.getTime());
