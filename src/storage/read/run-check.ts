/**
 * What the liveness backstop (src/backstop/check.ts) reads of the table: the runs whose check is due
 * (one Query of a shard of GSI1, `DUE#<s>`, sort key <= now), and of one run it checks, the run view
 * and the log's tail (one Query), then, only for a run quiet since the last check, the events after
 * its `ackedSlot` (one Query, newest 50), its steps and its waits. Reads only: the DUE item's writes
 * are ../write/due-moves.ts.
 *
 * The index is eventually consistent, so what {@link dueRuns} returns is only a candidate (the
 * check's fence decides); every read of a run is strongly consistent.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { Wait } from '@workflow/world';
import { readInput, when } from '../../aws/expression.js';
import { ATTR, GSI1, keys, storageKeys } from '../../schema/keys.js';
import { dueSortKey } from '../records/due.js';
import { type EventRecord, eventsOf, lastSlotOf } from '../records/event.js';
import { parseRun, type RunRecord } from '../records/run.js';
import { parseStep, type StepRecord } from '../records/step.js';
import { parseWait } from '../records/wait.js';
import type { Attrs } from '../table/codec.js';
import { type QueryInput, queryAll } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';

const UNACKED_PAGE = 50;

/** One Query request (no paging on). */
const queryOnce = async (ctx: StorageCtx, input: QueryInput): Promise<Attrs[]> =>
  ((await ctx.ddb.send(new QueryCommand({ TableName: ctx.table, ...input }))).Items ?? []) as Attrs[];

/** At most `limit` runs of GSI1 shard `shard` whose check is due at `now`, with the `dueAt` the index showed. */
export async function dueRuns(ctx: StorageCtx, shard: number, now: number, limit: number) {
  const key = [when.is(ATTR.gsi1pk, keys.dueGsi(shard)), when.atMost(ATTR.gsi1sk, `${dueSortKey(now, '')}~`)];
  const items = await queryOnce(ctx, { IndexName: GSI1, ...readInput({ key }), Limit: limit });
  return items.map((it) => {
    const sk = it[ATTR.gsi1sk]?.S ?? '';
    return { runId: sk.slice(14), seenDueAt: Number(sk.slice(0, 13)) };
  });
}

/** The run view (undefined: no run item) and the highest slot of its log (0: none), in one Query. */
export async function readRunHead(ctx: StorageCtx, runId: string): Promise<{ run?: RunRecord; tail: number }> {
  const items = await queryOnce(ctx, {
    ...readInput({
      key: [when.is('PK', keys.runPk(runId)), when.between('SK', keys.eventSkPrefix, storageKeys.runMetaSk)],
    }),
    ScanIndexForward: false,
    Limit: 2,
    ConsistentRead: true,
  });
  const runItem = items.find((i) => i.SK.S === storageKeys.runMetaSk);
  const last = items.find((i) => i.SK.S !== storageKeys.runMetaSk);
  return { run: runItem ? parseRun(runItem) : undefined, tail: last ? lastSlotOf(last) : 0 };
}

/** Of a quiet run: the events after `acked` (newest 50, newest first, none when `tail` <= `acked`), its steps, its waits. */
export async function readQuietRun(
  ctx: StorageCtx,
  runId: string,
  acked: number,
  tail: number,
): Promise<{ unacked: EventRecord[]; steps: StepRecord[]; waits: Wait[] }> {
  const pk = when.is('PK', keys.runPk(runId));
  const view = (prefix: string) =>
    queryAll(ctx, {
      ...readInput({ key: [pk, when.beginsWith('SK', prefix)] }),
      ConsistentRead: true,
    });
  const [unacked, steps, waits] = await Promise.all([
    tail > acked
      ? queryOnce(ctx, {
          ...readInput({ key: [pk, when.between('SK', keys.eventSk(acked), `${keys.eventSkPrefix}~`)] }),
          ScanIndexForward: false,
          Limit: UNACKED_PAGE,
          ConsistentRead: true,
        }).then((items) => eventsOf(items, { after: acked }, true))
      : Promise.resolve([]),
    view(keys.stepSkPrefix),
    view(keys.waitSkPrefix),
  ]);
  return { unacked, steps: steps.map(parseStep), waits: waits.map(parseWait) };
}
