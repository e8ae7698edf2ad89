/**
 * Which formats wrote a run: the run view's `fv` and that of its newest log items, in log order
 * (src/schema/formats.ts: an unstamped item is format 1, written by 0.1.0 or older). `doctor`
 * reads it to notice an older build writing to the table (src/cli/doctor-builds.ts).
 *
 * One Query, backwards from `RUN#meta` over the log (nothing sorts between the last `EVT#` item
 * and `RUN#meta`: src/schema/keys.ts), projecting the key and `fv` only. A log item is put whole
 * by the process that committed its event(s), so its `fv` is its writer's format; the run view is
 * updated in place by later writers and keeps the format of the one that created it.
 */
import { readInput, when } from '../../aws/expression.js';
import { FORMAT_ATTR, itemFormatOf } from '../../schema/formats.js';
import { keys } from '../../schema/keys.js';
import { queryOnce } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';

export interface WriterFormats {
  /** The format of the process that created the run (its view's stamp); undefined: no run view. */
  created?: number;
  /** The newest log items, oldest first: slot and the format of the process that wrote it. */
  log: { slot: number; format: number }[];
}

/** {@link WriterFormats} of run `runId`, from its newest `items` log items (strongly consistent). */
export async function readWriterFormats(ctx: StorageCtx, runId: string, items = 8): Promise<WriterFormats> {
  const newest = await queryOnce(ctx, {
    ...readInput({
      key: [when.is('PK', keys.runPk(runId)), when.between('SK', keys.eventSkPrefix, keys.runMeta(runId).SK)],
      projection: ['SK', FORMAT_ATTR],
    }),
    ScanIndexForward: false,
    Limit: items + 1,
    ConsistentRead: true,
  });
  const out: WriterFormats = { log: [] };
  for (const it of newest) {
    const sk = it.SK?.S ?? '';
    // An unreadable stamp is no writer's format: counted as the newest, so it never looks older.
    const format = itemFormatOf(it) ?? Number.POSITIVE_INFINITY;
    if (sk === keys.runMeta(runId).SK) out.created = format;
    else if (sk.startsWith(keys.eventSkPrefix)) out.log.unshift({ slot: keys.slotFromEventSk(sk), format });
  }
  return out;
}
