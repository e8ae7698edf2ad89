/**
 * The write gate: what this World awaits before its first write or send (events.create, queue(), a
 * run key, the deployment id core asks for first), before a delivery reaches core on the flow
 * route, and at `start()`.
 *
 * Invariants:
 * - Once per process, in order: the table, queue and bucket exist (./resources.ts), the table's
 *   format is one this build may touch (./format-check.ts: a table this build is too old, or before
 *   `init` too new, for is refused), and this process has taken its part in the table's fleet
 *   (registered, with affinity: src/deployment/membership.ts `join()`). A failed pass is not kept:
 *   the next call runs it again.
 * - core's `start()` writes run_created and queues in parallel, so both wait for the gate: a
 *   misnamed resource or a refused table leaves no run and no message behind.
 * - After a pass, every call still asks the fleet whether this process may write (`assertUsable()`:
 *   a heartbeat may since have met a refusal).
 */
import type { WorldContext } from '../context/world-context.js';
import { checkTableFormat, type TableFormat } from './format-check.js';
import { type PreflightQueues, preflight } from './resources.js';

/** This process's part in the fleet, as the gate uses it (src/deployment/membership.ts). */
export interface GateMember {
  join(format: TableFormat): Promise<void>;
  assertUsable(): void;
}

/** The gate of one World: resolves once the checks above have passed, throws their refusal else. */
export function createWriteGate(ctx: WorldContext, queues: PreflightQueues, member: GateMember): () => Promise<void> {
  let ready = false;
  return async () => {
    if (ready) return member.assertUsable();
    await preflight(ctx, queues);
    await member.join(await checkTableFormat(ctx.clients.ddb, ctx.config.tableName));
    ready = true;
  };
}
