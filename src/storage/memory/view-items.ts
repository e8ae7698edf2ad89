/**
 * View items as this process last committed them, so a warm process skips the read a transition
 * would start from: run view items (run_created, run_started, hook/wait holds; `run_started`
 * without a preload and the terminal transition then skip their read of the run, and a 1-step run
 * reads only core's `events.list`) and step items.
 *
 * Invariants:
 * - Safe by conditions, not by freshness: a write that starts from a remembered item is conditioned
 *   on everything it decided on (a step: its `ver`; `run_started`: pending and `attrVer`; terminal:
 *   not terminal, the `holds` flag and `attrVer`), so a stale memory costs one cancelled
 *   transaction (and a re-read), never a wrong write.
 * - A run item is forgotten when the run ends, on `attr_set`, or when a condition fails.
 * - Bounded (../../util/byte-lru.ts): items over 64 KB are not remembered (memory over one saved
 *   read); past 4 MB of run items or 8 MB of step items the least recently remembered are forgotten
 *   (a small Lambda has 128 MB in all).
 */
import { ByteLru } from '../../util/byte-lru.js';
import { type Attrs, itemSize } from '../table/codec.js';

const ITEM_MAX_BYTES = 65_536;
const RUN_ITEMS_BUDGET_BYTES = 4 * 1024 * 1024;
const STEP_ITEMS_BUDGET_BYTES = 8 * 1024 * 1024;

export class RunItemCache {
  private readonly items = new ByteLru<string, Attrs>({
    maxBytes: RUN_ITEMS_BUDGET_BYTES,
    maxEntryBytes: ITEM_MAX_BYTES,
  });

  remember(runId: string, item: Attrs): void {
    this.items.set(runId, item, itemSize(item));
  }

  /** Apply attribute changes this process committed to a remembered item (if any). */
  update(runId: string, changes: Attrs): void {
    const item = this.items.get(runId);
    if (item) this.remember(runId, { ...item, ...changes });
  }

  known(runId: string): Attrs | undefined {
    return this.items.get(runId);
  }

  forget(runId: string): void {
    this.items.delete(runId);
  }
}

export class StepItemCache {
  private readonly items = new ByteLru<string, Attrs>({
    maxBytes: STEP_ITEMS_BUDGET_BYTES,
    maxEntryBytes: ITEM_MAX_BYTES,
  });

  remember(runId: string, stepId: string, item: Attrs): void {
    this.items.set(`${runId}\u0000${stepId}`, item, itemSize(item));
  }

  known(runId: string, stepId: string): Attrs | undefined {
    return this.items.get(`${runId}\u0000${stepId}`);
  }
}
