/**
 * Step items as this process last committed them. A transition that starts from a remembered
 * item skips its read: the write is conditioned on the item's `ver`, so a stale memory costs one
 * cancelled transaction (which returns the current item) and never a wrong write.
 *
 * Bounded: items over 64 KB are not remembered (memory over one saved read), and past an 8 MB
 * budget the least recently remembered are forgotten (a small Lambda has 128 MB in all).
 */
import { ByteLru } from '../../util/byte-lru.js';
import { type Attrs, itemSize } from '../table/codec.js';

const STEP_ITEM_MAX_BYTES = 65_536;
const STEP_ITEMS_BUDGET_BYTES = 8 * 1024 * 1024;

export class StepItemCache {
  private readonly items = new ByteLru<string, Attrs>({
    maxBytes: STEP_ITEMS_BUDGET_BYTES,
    maxEntryBytes: STEP_ITEM_MAX_BYTES,
  });

  remember(runId: string, stepId: string, item: Attrs): void {
    this.items.set(`${runId}\u0000${stepId}`, item, itemSize(item));
  }

  known(runId: string, stepId: string): Attrs | undefined {
    return this.items.get(`${runId}\u0000${stepId}`);
  }
}
