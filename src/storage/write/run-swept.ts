/**
 * The orphan sweep's mark on a run (src/sweep/run-payloads.ts): `orphansSweptAt` on the run view,
 * set once a sweep cleaned the terminal run for good, and the run view's fields the sweep decides
 * on. The sweep reads and writes the table only through these (and run-items.ts).
 *
 * Invariants: the mark is conditioned on the run existing and being terminal, so it never lands on
 * a live run nor recreates an expired one, and setting it again is harmless (idempotent). The read
 * never returns payloads.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expression, when } from '../../aws/expression.js';
import { ATTR, keys } from '../../schema/keys.js';
import { runIsTerminal } from '../records/lifecycle.js';
import { type Attrs, keysOf } from '../table/codec.js';
import { getItem } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { ifConditionHolds } from './conditions.js';

/** The run item's mark: a sweep cleaned this terminal run (epoch ms). */
export const SWEPT_ATTR = 'orphansSweptAt';

/** The run item's fields the sweep decides on (never its payloads), strongly consistent; `undefined`: no run item. */
export async function readRunSweepState(ctx: StorageCtx, runId: string): Promise<Attrs | undefined> {
  return getItem(ctx, keys.runMeta(runId), ['PK', 'status', 'completedAt', 'updatedAt', ATTR.ttl, SWEPT_ATTR]);
}

/** Mark a terminal run as cleaned at `now`. Conditional (the run exists and is terminal) and idempotent. */
export async function markRunSwept(ctx: StorageCtx, runId: string, now: number): Promise<void> {
  const mark = expression()
    .set({ [SWEPT_ATTR]: now })
    .when(when.present, runIsTerminal);
  // The item went away (TTL) meanwhile: nothing to mark; the next sweep sees no run item.
  await ifConditionHolds(
    ctx.ddb.send(
      new UpdateItemCommand(mark.toUpdateItem(ctx.table, keysOf(keys.runMeta(runId)), { returnOld: false })),
    ),
  );
}
