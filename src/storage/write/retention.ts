/**
 * Retention: what a run gives up when it reaches a terminal state (docs/design.md, "Retention").
 *
 * Invariants:
 * - `$retention: '0'` (`readRunRetention` mode `none`) purges the run's user payloads: the
 *   payload attributes of every item (`payloadPaths`), the contents of its stream blocks (the
 *   block keeps its length), and its S3 objects; the entities stay readable.
 * - With a retention (`retentionDays`, else {@link PURGED_ENTITY_GRACE_SECONDS} after a purge)
 *   every item of the run gets a `ttl`, the run view last; without a purge the run view gets
 *   `expiredAt` = that time and the S3 objects are tagged for the bucket's lifecycle rule.
 * - Runs after the terminal transaction committed; a failure is logged and leaves data in place.
 *   Every update is conditional on the item existing, and idempotent.
 * - The run's items are the ones run-items.ts reads (the orphan sweep reads the same).
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { getEventDataRefFields, readRunRetention } from '@workflow/world';
import { expression, type Path, when } from '../../aws/expression.js';
import { RETENTION_TAG } from '../../config/limits.js';
import { ATTR, keys } from '../../schema/keys.js';
import { consoleLogger } from '../../telemetry/log.js';
import { forEachLimited } from '../../util/concurrency.js';
import { PAIR_ATTR } from '../records/event.js';
import { runPrefix } from '../records/payloads.js';
import { type Attrs, keysOf } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { ifConditionHolds } from './conditions.js';
import { readRunItems } from './run-items.js';

/** How long the payload-free entities of a `$retention: '0'` run are kept without a World-wide retention. */
const PURGED_ENTITY_GRACE_SECONDS = 86_400;

/** Whether a finished run asked for its user payloads to be purged at once (`$retention: '0'`). */
export function purgesOnFinish(attributes: Record<string, string>): boolean {
  return readRunRetention(attributes).mode === 'none';
}

/** Top-level payload attributes of run, step and hook items. */
const ENTITY_PAYLOADS = ['input', 'output', 'error', 'metadata'];
/**
 * A stream block item (streams/block-items.ts) holds its chunks in the list `c`. A purge keeps the
 * list's length (the block's chunk indices stay dense for readers) and empties every element.
 */
const BLOCK_CHUNKS = 'c';

/** The document paths holding user payloads in one item (each as its segments), to REMOVE. */
export function payloadPaths(item: Attrs): Path[] {
  const paths: Path[] = [];
  const sk = item.SK?.S ?? '';
  if (sk.startsWith(keys.chunkSkPrefix)) return paths; // see blockPurge()
  for (const a of ENTITY_PAYLOADS) if (item[a] !== undefined) paths.push([a]);
  // An event's ref fields: the item's own event, and a pair item's second event in its map.
  const eventRefs = (ev: Attrs, at: string[]) => {
    const eventDataMap = ev.ed?.M;
    const type = ev.t?.S;
    if (eventDataMap && type)
      for (const f of getEventDataRefFields(type)) if (eventDataMap[f] !== undefined) paths.push([...at, 'ed', f]);
  };
  eventRefs(item, []);
  const second = item[PAIR_ATTR]?.M;
  if (second) eventRefs(second, [PAIR_ATTR]);
  return paths;
}

/** For a stream block item: what to SET, `c = [NULL, ...]`, with as many elements as it has chunks. */
function blockPurge(item: Attrs): Record<string, null[]> {
  const list = item[BLOCK_CHUNKS]?.L;
  if (!(item.SK?.S ?? '').startsWith(keys.chunkSkPrefix) || !list) return {};
  return { [BLOCK_CHUNKS]: list.map(() => null) };
}

const CONCURRENCY = 16;

/** Stamp `ttl` on each item and, when purging, remove its payload attributes in the same update. */
async function stamp(ctx: StorageCtx, items: Attrs[], ttl: number, purge: boolean): Promise<void> {
  await forEachLimited(items, CONCURRENCY, async (it) => {
    const update = expression()
      .set({ [ATTR.ttl]: ttl })
      .when(when.present);
    if (purge) update.set(blockPurge(it)).remove(...payloadPaths(it));
    // A failed condition: deleted meanwhile (a released wait), nothing to stamp.
    await ifConditionHolds(
      ctx.ddb.send(
        new UpdateItemCommand(update.toUpdateItem(ctx.table, { PK: it.PK, SK: it.SK }, { returnOld: false })),
      ),
    );
  });
}

/**
 * Apply the run's retention after its terminal event committed at `now`. A purge reads the items
 * whole (it must see which payload fields each holds); a plain expiry reads only their keys.
 */
export async function applyRetention(
  ctx: StorageCtx,
  runId: string,
  attributes: Record<string, string>,
  now: Date,
): Promise<void> {
  const purge = purgesOnFinish(attributes);
  const days = ctx.config.retentionDays;
  const seconds = days !== undefined ? days * 86_400 : purge ? PURGED_ENTITY_GRACE_SECONDS : undefined;
  if (seconds === undefined) return; // keep
  const ttl = Math.floor(now.getTime() / 1000) + seconds;
  try {
    const { own, blocks } = await readRunItems(ctx, runId, { keysOnly: !purge });
    // The run view last: once it carries the TTL, everything else already does.
    const view = own.filter((i) => i.SK.S === 'RUN#meta');
    await stamp(ctx, [...own.filter((i) => i.SK.S !== 'RUN#meta'), ...blocks], ttl, purge);
    await stamp(ctx, view, ttl, purge);
    // A purged run's `expiredAt` (the terminal time) came with its terminal transaction.
    if (!purge) {
      const expire = expression()
        .set({ expiredAt: ttl * 1000 })
        .when(when.present);
      await ctx.ddb.send(
        new UpdateItemCommand(expire.toUpdateItem(ctx.table, keysOf(keys.runMeta(runId)), { returnOld: false })),
      );
    }
    await expireObjects(ctx, runId, purge);
  } catch (err) {
    consoleLogger.warn(
      `[eve-world-aws] retention of run ${runId} not applied (its data is kept): ${(err as Error).message}`,
    );
  }
}

/** Delete (retention 0) or tag for the lifecycle rule (N days) every object of the run. */
async function expireObjects(ctx: StorageCtx, runId: string, now: boolean): Promise<void> {
  const [s3, { ListObjectsV2Command, DeleteObjectsCommand, PutObjectTaggingCommand }] = await Promise.all([
    ctx.payloads.s3(),
    import('@aws-sdk/client-s3'),
  ]);
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: ctx.payloads.bucket,
        Prefix: `${runPrefix(runId)}/`,
        ContinuationToken: token,
      }),
    );
    const objects = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
    if (objects.length > 0 && now) {
      await s3.send(
        new DeleteObjectsCommand({ Bucket: ctx.payloads.bucket, Delete: { Objects: objects, Quiet: true } }),
      );
    } else if (objects.length > 0) {
      await Promise.all(
        objects.map((o) =>
          s3.send(
            new PutObjectTaggingCommand({
              Bucket: ctx.payloads.bucket,
              Key: o.Key,
              Tagging: { TagSet: [{ Key: RETENTION_TAG, Value: 'true' }] },
            }),
          ),
        ),
      );
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}
