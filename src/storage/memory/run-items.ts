/**
 * Run view items as this process last committed them (run_created, run_started, hook/wait
 * holds), so that in a warm process `run_started` without a preload and the terminal transition
 * skip their read of the run (a 1-step run then reads only core's `events.list`).
 *
 * Safe by conditions, not by freshness: a write that starts from a remembered item is conditioned
 * on everything it decided on (`run_started`: pending and `attrVer`; terminal: not terminal, the
 * `holds` flag and `attrVer`), so a stale memory costs one cancelled transaction and a re-read,
 * never a wrong write. Forgotten when the run ends, on `attr_set`, or when a condition fails.
 *
 * Bounded: items over 64 KB are not remembered, and past a 4 MB budget the least recently
 * remembered are forgotten.
 */
import { ByteLru } from '../../util/byte-lru.js';
import { type Attrs, itemSize } from '../table/codec.js';

const RUN_ITEM_MAX_BYTES = 65_536;
const RUN_ITEMS_BUDGET_BYTES = 4 * 1024 * 1024;

export class RunItemCache {
  private readonly items = new ByteLru<string, Attrs>({
    maxBytes: RUN_ITEMS_BUDGET_BYTES,
    maxEntryBytes: RUN_ITEM_MAX_BYTES,
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
