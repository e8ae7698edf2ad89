/**
 * What a terminal run gives up: its hooks (releasing their tokens) and its pending waits.
 *
 * Runs after the terminal transaction committed, so no new hook or wait can appear (their creates
 * carry a run guard). Idempotent: each hook delete is conditioned on its owner, and a token missed
 * here (GSI lag) is taken over by the next claimant, which checks that the holder's run is
 * terminal. Hooks with a `tokenRetentionUntil` in the future are kept.
 */
import { BatchWriteItemCommand, DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.js';
import { ATTR, GSI1, keys, storageKeys } from '../ddb.js';
import { backoff } from './backoff.js';
import { str } from './codec.js';
import type { StorageCtx } from './context.js';
import { queryAll } from './table-reads.js';

export async function releaseRun(ctx: StorageCtx, runId: string): Promise<void> {
  const [hooks, waits] = await Promise.all([
    queryAll(ctx, {
      IndexName: GSI1,
      KeyConditionExpression: `${ATTR.gsi1pk} = :h`,
      ExpressionAttributeValues: { ':h': { S: keys.runHooksGsi(runId) } },
    }),
    queryAll(ctx, {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :w)',
      FilterExpression: '#st = :waiting',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: {
        ':pk': { S: keys.runPk(runId) },
        ':w': { S: keys.waitSkPrefix },
        ':waiting': { S: 'waiting' },
      },
      ProjectionExpression: 'PK, SK',
      ConsistentRead: true,
    }),
  ]);
  const now = Date.now();
  await Promise.all(
    hooks.map((h) =>
      ctx.ddb
        .send(
          new DeleteItemCommand({
            TableName: ctx.table,
            Key: { PK: h.PK, SK: { S: storageKeys.hookMetaSk } },
            // Kept while its token retention lasts (the condition reads it; the index does not hold it).
            ConditionExpression:
              'runId = :r AND hookId = :h AND (attribute_not_exists(tokenRetentionUntil) OR tokenRetentionUntil <= :now)',
            ExpressionAttributeValues: {
              ':r': { S: runId },
              ':h': { S: str(h, ATTR.gsi1sk)! },
              ':now': { N: String(now) },
            },
          }),
        )
        .catch((e) => {
          if (!isConditionalCheckFailed(e)) throw e;
        }),
    ),
  );
  for (let i = 0; i < waits.length; i += 25) {
    let req = waits.slice(i, i + 25).map((w) => ({ DeleteRequest: { Key: { PK: w.PK, SK: w.SK } } }));
    for (let attempt = 0; req.length > 0; attempt++) {
      const res = await ctx.ddb.send(new BatchWriteItemCommand({ RequestItems: { [ctx.table]: req } }));
      req = (res.UnprocessedItems?.[ctx.table] ?? []) as typeof req;
      if (req.length > 0) await backoff(attempt);
    }
  }
}
