/**
 * What the liveness backstop (src/backstop/check.ts) reads of the table, one Query each; the DUE
 * item's writes are ../write/due-moves.ts.
 *
 * The index is eventually consistent, so what {@link dueRuns} returns is only a candidate (the
 * check's fence decides); every read of a run is strongly consistent.
 */
import type { Wait } from '@workflow/world';
import { readInput, when } from '../../aws/expression.js';
import { ATTR, GSI1, keys } from '../../schema/keys.js';
import { dueSortKey } from '../records/due.js';
import { type EventRecord, eventsOf } from '../records/event.js';
import { parseRun, type RunRecord } from '../records/run.js';
import { parseStep, type StepRecord } from '../records/step.js';
import { parseWait } from '../records/wait.js';
import { queryAll, queryOnce } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { EVT_END, readRunTail } from './log-tail.js';

const UNACKED_PAGE = 50;

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
  const { run, tail } = await readRunTail(ctx, runId);
  return { run: run ? parseRun(run) : undefined, tail };
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
          ...readInput({ key: [pk, when.between('SK', keys.eventSk(acked), EVT_END)] }),
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
