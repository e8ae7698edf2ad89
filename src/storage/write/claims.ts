/**
 * The two conditional puts every create is built from: the create claim of a view item
 * (`attribute_not_exists`, reporting the existing item on failure) and the slot claim of an event
 * (`attribute_not_exists` on `EVT#<slot>`: a taken slot fails the transaction, see `commit.ts`).
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { Attrs } from '../table/codec.js';
import type { StorageCtx } from '../table/context.js';

/** Put with `attribute_not_exists`: the create-claim of a view item. */
export function putNew(ctx: StorageCtx, item: Attrs): TransactWriteItem {
  return {
    Put: {
      TableName: ctx.table,
      Item: item,
      ConditionExpression: 'attribute_not_exists(PK)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** The slot claim: an event put that fails if the slot is taken. */
export function putEvent(ctx: StorageCtx, item: Attrs): TransactWriteItem {
  return { Put: { TableName: ctx.table, Item: item, ConditionExpression: 'attribute_not_exists(PK)' } };
}
