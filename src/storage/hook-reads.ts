/** `hooks.*` reads: by id (hook-id index), by token (the claim item), and listings. */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { HookNotFoundError } from '@workflow/errors';
import type { Hook, ListHooksParams, PaginatedResponse, ResolveData } from '@workflow/world';
import { ATTR, GSI1, GSI2, keys, storageKeys } from '../ddb.js';
import type { Attrs } from './codec.js';
import type { StorageCtx } from './context.js';
import { assertId } from './errors.js';
import { pageLimit } from './pagination.js';
import { parseHook, toHook } from './records/hook.js';
import { getItem, keyedPage } from './table-reads.js';

export function createHookReads(ctx: StorageCtx) {
  async function get(hookId: string, params?: { resolveData?: ResolveData }): Promise<Hook> {
    assertId('hookId', hookId);
    const res = await ctx.ddb.send(
      new QueryCommand({
        TableName: ctx.table,
        IndexName: GSI2,
        KeyConditionExpression: `${ATTR.gsi2pk} = :h`,
        ExpressionAttributeValues: { ':h': { S: keys.hookIdGsi(hookId) } },
        Limit: 1,
      }),
    );
    const item = res.Items?.[0] as Attrs | undefined;
    if (!item) throw new HookNotFoundError(hookId);
    return toHook(ctx, parseHook(item), params?.resolveData ?? 'all');
  }

  async function getByToken(token: string, params?: { resolveData?: ResolveData }): Promise<Hook> {
    assertId('token', token);
    const item = await getItem(ctx, keys.hook(token));
    if (!item) throw new HookNotFoundError(token);
    return toHook(ctx, parseHook(item), params?.resolveData ?? 'all');
  }

  async function list(params: ListHooksParams = {}): Promise<PaginatedResponse<Hook>> {
    const limit = pageLimit(params.pagination?.limit);
    const rd = params.resolveData ?? 'all';
    const page =
      params.runId !== undefined
        ? await keyedPage(
            ctx,
            {
              IndexName: GSI1,
              KeyConditionExpression: `${ATTR.gsi1pk} = :p`,
              ExpressionAttributeValues: { ':p': { S: keys.runHooksGsi(params.runId) } },
              ScanIndexForward: params.pagination?.sortOrder !== 'desc',
            },
            limit,
            params.pagination?.cursor,
            ['PK', 'SK', ATTR.gsi1pk, ATTR.gsi1sk],
          )
        : await keyedPage(
            ctx,
            { FilterExpression: 'SK = :m', ExpressionAttributeValues: { ':m': { S: storageKeys.hookMetaSk } } },
            limit,
            params.pagination?.cursor,
            ['PK', 'SK'],
            true,
          );
    return { data: await Promise.all(page.items.map((i) => toHook(ctx, parseHook(i), rd))), cursor: page.cursor, hasMore: page.hasMore };
  }

  return { get, getByToken, list };
}
