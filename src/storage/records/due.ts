/**
 * The liveness backstop's item of an active run, `RUN#<runId> / DUE` (src/backstop/ checks it, with
 * ../read/run-check.ts and ../write/due-moves.ts): when the backstop next checks the run, indexed in GSI1 under
 * `DUE#<shard(runId)>` / `<dueAt ms, 13 digits>#<runId>`, so a check is one Query per shard for the items that are due.
 *
 * Fields (all numbers but `runId`):
 * - `dueAt`     when the run is next checked (ms, the clock of whoever set it; skew only moves a check);
 * - `seenSlot`  the log tail the last check (or the write that set `dueAt`) saw: a check that finds the
 *               same tail knows the run has been quiet since then, without comparing clocks;
 * - `ackedSlot` the highest log slot a workflow delivery read and then acknowledged (the flow route):
 *               a replay owed by an event at or below it was done;
 * - `wakes`     backstop wakes sent, or held for a backlog (src/backstop/backlog.ts), since the run
 *               last moved (the backoff's exponent);
 * - `wq`        (a string) the queue the run's last acknowledged workflow delivery came on, so a
 *               wake reaches the app's queue namespace (eve names its own) with nothing configured.
 *
 * Written in transactions that are written anyway: `run_created` puts it (../write/run-created.ts, and the resilient start in ../write/run-started.ts) and
 * `hook_received` pulls it forward (../write/hook-events.ts), so a hook received after days of
 * idling is checked within the bound. A terminal run's item is deleted by its next check.
 *
 * Format: an additive record (records format 2, no bump): no older reader queries `DUE#` partitions,
 * and the `DUE` sort key sorts before `EVT#`, outside every range an older reader reads of a run.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { expression } from '../../aws/expression.js';
import { assertItemFormat, FORMAT_ATTR, FORMATS, formatStamp } from '../../schema/formats.js';
import { ATTR, keys, shardOf } from '../../schema/keys.js';
import { type Attrs, keysOf, num, str } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';

export interface DueRecord {
  runId: string;
  dueAt: number;
  wakes: number;
  seenSlot?: number;
  ackedSlot?: number;
  /** `wq`: the workflow queue of the run's last acknowledged delivery. */
  queueName?: string;
}

/** The GSI1 sort key of a check at `dueAt`: 13-digit ms, so string order is time order until 2286. */
export const dueSortKey = (dueAt: number, runId: string) =>
  `${String(Math.max(0, Math.floor(dueAt))).padStart(13, '0')}#${runId}`;

/** The index attributes of a check at `dueAt`. */
export function dueIndexAttrs(runId: string, dueAt: number): Attrs {
  return {
    [ATTR.gsi1pk]: { S: keys.dueGsi(shardOf(runId)) },
    [ATTR.gsi1sk]: { S: dueSortKey(dueAt, runId) },
  };
}

/**
 * `run_created`'s DUE item: first check at `dueAt`, the log at slot `slot`. A plain Put: the same
 * transaction's exclusive run create is its condition (a second create fails as a whole).
 */
export function dueOnCreate(ctx: StorageCtx, runId: string, dueAt: number, slot: number): TransactWriteItem {
  return {
    Put: {
      TableName: ctx.table,
      Item: {
        ...keysOf(keys.due(runId)),
        ...formatStamp('records'),
        ...dueIndexAttrs(runId, dueAt),
        runId: { S: runId },
        dueAt: { N: String(dueAt) },
        wakes: { N: '0' },
        seenSlot: { N: String(slot) },
      },
    },
  };
}

/**
 * `hook_received`'s move of the DUE item: checked at `dueAt`, quiet since `slot`, backoff reset. An
 * upsert (a run created before the backstop gets its item here); the transaction's run guard is its
 * condition, and applying it twice sets the same values.
 */
export function dueOnHookReceived(ctx: StorageCtx, runId: string, dueAt: number, slot: number): TransactWriteItem {
  const idx = dueIndexAttrs(runId, dueAt);
  return expression()
    .set({
      [FORMAT_ATTR]: FORMATS.records.current,
      [ATTR.gsi1pk]: idx[ATTR.gsi1pk].S,
      [ATTR.gsi1sk]: idx[ATTR.gsi1sk].S,
      runId,
      dueAt,
      wakes: 0,
      seenSlot: slot,
    })
    .toUpdate(ctx.table, keysOf(keys.due(runId)), { returnOld: false });
}

export function parseDue(it: Attrs): DueRecord {
  assertItemFormat(it, 'records', `backstop item ${str(it, 'PK') ?? '?'} / ${str(it, 'SK') ?? '?'}`);
  return {
    runId: str(it, 'runId') ?? (str(it, 'PK') ?? '').slice(4),
    dueAt: num(it, 'dueAt') ?? 0,
    wakes: num(it, 'wakes') ?? 0,
    seenSlot: num(it, 'seenSlot'),
    ackedSlot: num(it, 'ackedSlot'),
    queueName: str(it, 'wq'),
  };
}
