/**
 * `hooks.*` reads: by token (the claim item), by id (the hook-id index, then the item by key), and
 * listings (one run's hooks, or all hooks merged from the sharded hook index; never a Scan).
 * Indexes hold only keys, so every hook is read from its item, strongly consistent.
 */
import { HookNotFoundError } from '@workflow/errors';
import type { Hook, ListHooksParams, PaginatedResponse, ResolveData } from '@workflow/world';
import { readInput, when } from '../../aws/expression.js';
import { ATTR, GSI1, GSI2, keys, shardOf } from '../../schema/keys.js';
import { parseHook, toHook } from '../records/hook.js';
import { expired } from '../records/lifecycle.js';
import type { Attrs } from '../table/codec.js';
import { pageLimit } from '../table/pagination.js';
import { getItem, getItems, keyedPage, queryOnce } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { assertId } from '../table/world-errors.js';
import { shardedPage } from './sharded-page.js';

export function createHookReads(ctx: StorageCtx) {
  async function get(hookId: string, params?: { resolveData?: ResolveData }): Promise<Hook> {
    assertId('hookId', hookId);
    const [key] = await queryOnce(ctx, {
      IndexName: GSI2,
      ...readInput({ key: [when.is(ATTR.gsi2pk, keys.hooksGsi(shardOf(hookId))), when.is(ATTR.gsi2sk, hookId)] }),
    });
    const item = key && (await getItem(ctx, { PK: key.PK.S!, SK: key.SK.S! }));
    if (!item || item.hookId?.S !== hookId || expired(item)) throw new HookNotFoundError(hookId);
    return toHook(ctx, parseHook(item), params?.resolveData ?? 'all');
  }

  async function getByToken(token: string, params?: { resolveData?: ResolveData }): Promise<Hook> {
    assertId('token', token);
    const item = await getItem(ctx, keys.hook(token));
    if (!item || expired(item)) throw new HookNotFoundError(token);
    return toHook(ctx, parseHook(item), params?.resolveData ?? 'all');
  }

  /** Ascending by hook id by default (core's hook ids are ULIDs: creation order). */
  async function list(params: ListHooksParams = {}): Promise<PaginatedResponse<Hook>> {
    const limit = pageLimit(params.pagination?.limit);
    const resolveData = params.resolveData ?? 'all';
    const ascending = params.pagination?.sortOrder !== 'desc';
    const page =
      params.runId !== undefined
        ? await keyedPage(
            ctx,
            {
              IndexName: GSI1,
              ...readInput({ key: [when.is(ATTR.gsi1pk, keys.runHooksGsi(params.runId))] }),
              ScanIndexForward: ascending,
            },
            limit,
            params.pagination?.cursor,
            ['PK', 'SK', ATTR.gsi1pk, ATTR.gsi1sk],
          )
        : await shardedPage(
            ctx,
            { index: GSI2, pkName: ATTR.gsi2pk, skName: ATTR.gsi2sk, pk: keys.hooksGsi, ascending },
            limit,
            params.pagination?.cursor,
          );
    const items = (await getItems(ctx, page.items)).filter((i): i is Attrs => i !== undefined && !expired(i));
    return {
      data: await Promise.all(items.map((i) => toHook(ctx, parseHook(i), resolveData))),
      cursor: page.cursor,
      hasMore: page.hasMore,
    };
  }

  return { get, getByToken, list };
}
