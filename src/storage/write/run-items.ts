/**
 * Every item of one run, for the two that act on all of them: retention (retention.ts: stamps each
 * with a TTL, purges its payloads) and the orphan sweep (src/sweep/run-payloads.ts: collects every
 * key an item points at). One implementation, so the two never disagree on what "a run's items"
 * are.
 *
 * A run's items: its partition `RUN#<runId>` (run view, events, steps, waits), its stream blocks
 * (GSI1 `RUNSTREAMS#<runId>` names each stream, then each stream's partition) and, when asked, its
 * hooks (GSI1 `RUNHOOKS#<runId>`, then the hook items by key). Partitions and hook items are read
 * strongly consistent; the index itself cannot be.
 */

import { readInput, when } from '../../aws/expression.js';
import { ATTR, GSI1, keys } from '../../schema/keys.js';
import type { Attrs } from '../table/codec.js';
import { getItems, queryAll } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';

export interface RunItems {
  /** The run's partition: run view, events, steps, waits. */
  readonly own: Attrs[];
  /** Its stream blocks, every stream's. */
  readonly blocks: Attrs[];
  /** Its hook items (empty unless asked for). */
  readonly hooks: Attrs[];
}

export interface RunItemsOptions {
  /** Only the keys of the partitions' items (`PK, SK`), not their attributes. */
  readonly keysOnly?: boolean;
  /** The run's hooks too. */
  readonly hooks?: boolean;
}

export async function readRunItems(
  ctx: StorageCtx,
  runId: string,
  { keysOnly = false, hooks = false }: RunItemsOptions = {},
): Promise<RunItems> {
  const byIndex = (gsi1pk: string) =>
    queryAll(ctx, { IndexName: GSI1, ...readInput({ key: [when.is(ATTR.gsi1pk, gsi1pk)] }) });
  const partition = (pk: string) =>
    queryAll(ctx, {
      ...readInput({ key: [when.is('PK', pk)], projection: keysOnly ? ['PK', 'SK'] : [] }),
      ConsistentRead: true,
    });
  const [own, hookKeys, streams] = await Promise.all([
    partition(keys.runPk(runId)),
    hooks ? byIndex(keys.runHooksGsi(runId)) : ([] as Attrs[]),
    byIndex(keys.runStreamsGsi(runId)),
  ]);
  const [hookItems, blocks] = await Promise.all([
    getItems(ctx, hookKeys),
    Promise.all(streams.map((s) => partition(s.PK.S as string))),
  ]);
  return { own, blocks: blocks.flat(), hooks: hookItems.filter((h) => h !== undefined) };
}
