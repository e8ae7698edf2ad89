/**
 * The held queue bodies' part of the sweep: deletes `queue-held/<messageId>/<untilSec>` objects
 * whose `untilSec` has passed. The key scheme and the invariant that makes this safe (a copy is
 * sent only pointing at a body that outlives it) are src/queue/body-lifetime.ts's.
 */
import { HELD_BODY_PREFIX } from '../config/limits.js';
import type { WorldContext } from '../context/world-context.js';
import { bodyAliveUntil } from '../queue/body-lifetime.js';

export interface HeldBodySweep {
  scanned: number;
  /** Deleted (or, in a dry run, that would be). */
  expired: number;
  expiredBytes: number;
  keys: string[];
  failures: Array<{ key: string; error: string }>;
  /** `signal` was aborted before the listing ended: the next sweep continues. */
  stopped: boolean;
}

export async function sweepHeldBodies(
  ctx: WorldContext,
  opts: { now?: number; dryRun?: boolean; signal?: AbortSignal } = {},
): Promise<HeldBodySweep> {
  const now = opts.now ?? Date.now();
  const out: HeldBodySweep = { scanned: 0, expired: 0, expiredBytes: 0, keys: [], failures: [], stopped: false };
  if (opts.signal?.aborted) {
    out.stopped = true;
    return out;
  }
  for await (const page of ctx.payloads.list(HELD_BODY_PREFIX)) {
    // Checked per listed page (up to 1,000 keys): an aborted signal deletes nothing more.
    if (opts.signal?.aborted) {
      out.stopped = true;
      break;
    }
    out.scanned += page.length;
    const due = page.filter((o) => {
      const until = bodyAliveUntil(o.key);
      return until > 0 && until < now;
    });
    const failures = opts.dryRun ? [] : await ctx.payloads.deleteKeys(due.map((o) => o.key));
    const failed = new Set(failures.map((f) => f.key));
    out.failures.push(...failures);
    for (const o of due) {
      if (failed.has(o.key)) continue;
      out.expired++;
      out.expiredBytes += o.size;
      if (out.keys.length < 1000) out.keys.push(o.key);
    }
  }
  return out;
}
