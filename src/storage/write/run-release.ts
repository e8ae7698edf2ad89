/**
 * What a terminal run gives up: its hooks (releasing their tokens) and its pending waits.
 *
 * Runs after the terminal transaction committed, so no new hook or wait can appear (their creates
 * carry a run guard). Idempotent: each hook delete is conditioned on its owner, and a token missed
 * here (GSI lag) is taken over by the next claimant, which checks that the holder's run is
 * terminal. Hooks with a `tokenRetentionUntil` in the future are kept (the `hookRetention`
 * capability), readable and holding their token, with a TTL at the end of their retention.
 */
import { BatchWriteItemCommand, DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expression, readInput, when } from '../../aws/expression.js';
import { isConditionalCheckFailed } from '../../aws/sdk-errors.js';
import { ATTR, GSI1, keys, storageKeys } from '../../schema/keys.js';
import { type Attrs, num, str } from '../table/codec.js';
import { backoff } from '../table/contention-backoff.js';
import { queryAll } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { ifConditionHolds } from './conditions.js';

export async function releaseRun(ctx: StorageCtx, runId: string, purge = false): Promise<void> {
  const [hooks, waits] = await Promise.all([
    queryAll(ctx, { IndexName: GSI1, ...readInput({ key: [when.is(ATTR.gsi1pk, keys.runHooksGsi(runId))] }) }),
    queryAll(ctx, {
      ...readInput({
        key: [when.is('PK', keys.runPk(runId)), when.beginsWith('SK', keys.waitSkPrefix)],
        filter: [when.is('status', 'waiting')],
        projection: ['PK', 'SK'],
      }),
      ConsistentRead: true,
    }),
  ]);
  const now = Date.now();
  await Promise.all(hooks.map((h) => releaseHook(ctx, runId, h, now, purge)));
  for (let i = 0; i < waits.length; i += 25) {
    let req = waits.slice(i, i + 25).map((w) => ({ DeleteRequest: { Key: { PK: w.PK, SK: w.SK } } }));
    for (let attempt = 0; req.length > 0; attempt++) {
      const res = await ctx.ddb.send(new BatchWriteItemCommand({ RequestItems: { [ctx.table]: req } }));
      req = (res.UnprocessedItems?.[ctx.table] ?? []) as typeof req;
      if (req.length > 0) await backoff(attempt);
    }
  }
}

/**
 * Delete one hook of the finished run (releasing its token), unless its token retention lasts:
 * then it stays readable and claimed until `tokenRetentionUntil`, and gets that as its TTL (and,
 * for a `$retention: '0'` run, loses its metadata: keeping the token does not keep the payload).
 */
async function releaseHook(ctx: StorageCtx, runId: string, h: Attrs, now: number, purge: boolean): Promise<void> {
  const owned = [when.is('runId', runId), when.is('hookId', str(h, ATTR.gsi1sk))];
  const key = { PK: h.PK, SK: { S: storageKeys.hookMetaSk } };
  // The condition reads the retention (the index does not hold it).
  const retentionOver = when.any(when.lacks('tokenRetentionUntil'), when.atMost('tokenRetentionUntil', now));
  try {
    await ctx.ddb.send(
      new DeleteItemCommand(
        expression()
          .when(...owned, retentionOver)
          .toDeleteItem(ctx.table, key, { returnOld: true }),
      ),
    );
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    const old = (e as { Item?: Attrs }).Item;
    const until = old && str(old, 'runId') === runId ? num(old, 'tokenRetentionUntil') : undefined;
    if (until === undefined) return; // another run's hook holds the token now
    const keep = expression()
      .set({ [ATTR.ttl]: Math.ceil(until / 1000) })
      .when(...owned);
    if (purge) keep.remove('metadata');
    await ifConditionHolds(
      ctx.ddb.send(new UpdateItemCommand(keep.toUpdateItem(ctx.table, key, { returnOld: false }))),
    );
  }
}
