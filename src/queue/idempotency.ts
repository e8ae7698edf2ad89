/**
 * Durable idempotency-key dedupe for `queue()`.
 *
 * A key is claimed with one conditional PutItem on `QKEY#<key>`: it succeeds when no claim exists or
 * the existing claim's TTL has passed (DynamoDB deletes expired items lazily, up to days later, so
 * the condition re-checks the TTL itself). A lost claim returns the stored message id, so the same
 * key enqueued twice, from any number of processes at once, yields one message and one id.
 *
 * Invariants:
 * - A used key keeps deduping for `idempotencyTtlSeconds` (the runtime mints fresh keys for
 *   re-arms and relies on a used key staying used).
 * - A claim whose send failed is released (conditional on still holding it), so a retry can send:
 *   a key is never burned without a message behind it by this process.
 */
import { createHash } from 'node:crypto';
import { type ConditionalCheckFailedException, DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.js';
import type { WorldContext } from '../context.js';
import { ATTR, keys } from '../ddb.js';

export type ClaimResult = { claimed: true } | { claimed: false; messageId: string };

/** DynamoDB key attributes are capped at 2048 bytes; very long keys are hashed. */
function storedKey(idempotencyKey: string): string {
  return Buffer.byteLength(idempotencyKey) > 1024
    ? `sha256:${createHash('sha256').update(idempotencyKey).digest('hex')}`
    : idempotencyKey;
}

export async function claimIdempotencyKey(
  ctx: WorldContext,
  idempotencyKey: string,
  messageId: string,
  queueName: string,
  now = Date.now(),
): Promise<ClaimResult> {
  const nowSec = Math.floor(now / 1000);
  try {
    await ctx.clients.ddb.send(
      new PutItemCommand({
        TableName: ctx.config.tableName,
        Item: marshall({
          ...keys.qkey(storedKey(idempotencyKey)),
          messageId,
          queueName,
          createdAt: new Date(now).toISOString(),
          [ATTR.ttl]: nowSec + ctx.config.idempotencyTtlSeconds,
        }),
        ConditionExpression: 'attribute_not_exists(#pk) OR #ttl < :now',
        ExpressionAttributeNames: { '#pk': ATTR.pk, '#ttl': ATTR.ttl },
        ExpressionAttributeValues: marshall({ ':now': nowSec }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { claimed: true };
  } catch (err) {
    if (isConditionalCheckFailed(err)) {
      const old = (err as ConditionalCheckFailedException).Item;
      const existing = old ? (unmarshall(old).messageId as string | undefined) : undefined;
      if (existing) return { claimed: false, messageId: existing };
      // No item returned (an emulator without ALL_OLD): still a duplicate; report no id.
      return { claimed: false, messageId: '' };
    }
    throw err;
  }
}

/** Drop our own claim (after a failed send). Never removes a claim another sender now holds. */
export async function releaseIdempotencyKey(
  ctx: WorldContext,
  idempotencyKey: string,
  messageId: string,
): Promise<void> {
  try {
    await ctx.clients.ddb.send(
      new DeleteItemCommand({
        TableName: ctx.config.tableName,
        Key: marshall(keys.qkey(storedKey(idempotencyKey))),
        ConditionExpression: 'messageId = :id',
        ExpressionAttributeValues: marshall({ ':id': messageId }),
      }),
    );
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
  }
}
