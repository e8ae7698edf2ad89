/**
 * Run view items as this process last read or committed them, so a run's terminal transition in
 * the process that started it (the common case: one flow invocation starts the run, a later one
 * in the same warm process finishes it) skips its read.
 *
 * Safe by conditions, not by freshness: the terminal write that starts from a remembered item is
 * conditioned on everything it decided on (not terminal, the `holds` flag, the `attrVer` of the
 * attributes), so a stale memory costs one cancelled transaction and a re-read, never a wrong
 * write. Forgotten when the run ends or a condition fails.
 *
 * Bounded: items over 64 KB are not remembered, and past a 4 MB budget the least recently
 * remembered are forgotten.
 */
import { type Attrs, itemSize } from './codec.js';

const RUN_ITEM_MAX_BYTES = 65_536;
const RUN_ITEMS_BUDGET_BYTES = 4 * 1024 * 1024;

export class RunItemCache {
  private readonly items = new Map<string, { item: Attrs; size: number }>();
  private bytes = 0;

  remember(runId: string, item: Attrs): void {
    this.forget(runId);
    const size = itemSize(item);
    if (size > RUN_ITEM_MAX_BYTES) return;
    this.items.set(runId, { item, size });
    this.bytes += size;
    while (this.bytes > RUN_ITEMS_BUDGET_BYTES) this.forget(this.items.keys().next().value as string);
  }

  /** Apply attribute changes this process committed to a remembered item (if any). */
  update(runId: string, changes: Attrs): void {
    const e = this.items.get(runId);
    if (e) this.remember(runId, { ...e.item, ...changes });
  }

  known(runId: string): Attrs | undefined {
    return this.items.get(runId)?.item;
  }

  forget(runId: string): void {
    const e = this.items.get(runId);
    if (!e) return;
    this.items.delete(runId);
    this.bytes -= e.size;
  }
}
