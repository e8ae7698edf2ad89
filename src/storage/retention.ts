/**
 * Retention: when a run reaches a terminal state, every item it owns gets a DynamoDB TTL, and its
 * S3 objects go too.
 *
 * - How long: the run's `$retention` attribute wins (`'0'`, eve's private sessions: expire at
 *   once, decided by `@workflow/world`'s `readRunRetention`, so any other value keeps the data);
 *   else `EVE_WORLD_AWS_RETENTION_DAYS`; else the run is kept (the default).
 * - What: every item of the run's partition (log, views, claims), its stream partitions (found
 *   through the run's stream index), and the `ttl` + `expiredAt` of the run view. DynamoDB deletes
 *   expired items in the background (typically within a day or two); until then reads treat an
 *   expired run as gone, so `runs.get` answers `WorkflowRunNotFoundError` from the expiry on.
 * - S3: with retention 0 the run's objects (`runs/<runId>/`) are deleted at once; with N days they
 *   are tagged `eve-world-aws-expired=true` for the bucket's lifecycle rule (`RETENTION_TAG` in
 *   resources.ts, which `init` installs when the variable is set).
 * - Safe direction: it runs after the terminal transaction committed; a failure is logged and
 *   leaves data in place (kept, never lost). Stamping is idempotent.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { readRunRetention } from '@workflow/world';
import { isConditionalCheckFailed } from '../aws/errors.js';
import { ATTR, GSI1, keys } from '../ddb.js';
import { consoleLogger } from '../log.js';
import type { Attrs } from './codec.js';
import type { StorageCtx } from './context.js';
import { runPrefix } from './payload-placement.js';
import { queryAll } from './table-reads.js';

/** Seconds a terminal run is kept, or undefined for "keep". */
export function retentionSeconds(ctx: StorageCtx, attributes: Record<string, string>): number | undefined {
  if (readRunRetention(attributes).mode === 'none') return 0;
  const days = ctx.config.retentionDays;
  return days === undefined ? undefined : days * 86_400;
}

/** Whether an item's TTL has passed (DynamoDB may not have deleted it yet). */
export function expired(item: Attrs | undefined, now = Date.now()): boolean {
  const ttl = item?.[ATTR.ttl]?.N;
  return ttl !== undefined && Number(ttl) * 1000 <= now;
}

const CONCURRENCY = 16;

async function stamp(ctx: StorageCtx, items: Attrs[], ttl: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const it = items[next++];
      await ctx.ddb
        .send(
          new UpdateItemCommand({
            TableName: ctx.table,
            Key: { PK: it.PK, SK: it.SK },
            UpdateExpression: 'SET #ttl = :t',
            ConditionExpression: 'attribute_exists(PK)',
            ExpressionAttributeNames: { '#ttl': ATTR.ttl },
            ExpressionAttributeValues: { ':t': { N: String(ttl) } },
          }),
        )
        .catch((e) => {
          if (!isConditionalCheckFailed(e)) throw e; // deleted meanwhile (a released wait): nothing to stamp
        });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
}

/** Apply the run's retention after its terminal event committed at `now`. */
export async function applyRetention(
  ctx: StorageCtx,
  runId: string,
  attributes: Record<string, string>,
  now: Date,
): Promise<void> {
  const seconds = retentionSeconds(ctx, attributes);
  if (seconds === undefined) return;
  const ttl = Math.floor(now.getTime() / 1000) + seconds;
  try {
    const [own, streams] = await Promise.all([
      queryAll(ctx, {
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': { S: keys.runPk(runId) } },
        ProjectionExpression: 'PK, SK',
        ConsistentRead: true,
      }),
      queryAll(ctx, {
        IndexName: GSI1,
        KeyConditionExpression: '#g = :g',
        ExpressionAttributeNames: { '#g': ATTR.gsi1pk },
        ExpressionAttributeValues: { ':g': { S: keys.runStreamsGsi(runId) } },
      }),
    ]);
    const chunks = (
      await Promise.all(
        streams.map((s) =>
          queryAll(ctx, {
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': s.PK },
            ProjectionExpression: 'PK, SK',
            ConsistentRead: true,
          }),
        ),
      )
    ).flat();
    // The run view last: once it carries the TTL, reads treat the run as expired.
    const view = own.filter((i) => i.SK.S === 'RUN#meta');
    await stamp(ctx, [...own.filter((i) => i.SK.S !== 'RUN#meta'), ...chunks], ttl);
    await stamp(ctx, view, ttl);
    await ctx.ddb.send(
      new UpdateItemCommand({
        TableName: ctx.table,
        Key: { PK: { S: keys.runPk(runId) }, SK: { S: 'RUN#meta' } },
        UpdateExpression: 'SET expiredAt = :e',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: { ':e': { N: String(ttl * 1000) } },
      }),
    );
    await expireObjects(ctx, runId, seconds === 0);
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
              Tagging: { TagSet: [{ Key: 'eve-world-aws-expired', Value: 'true' }] },
            }),
          ),
        ),
      );
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}
