/**
 * The hook item `HOOK#<token> / HOOK#meta` (the token's global claim) <-> `HookRecord` <-> the
 * contract's `Hook`. Its index keys list a run's hooks (GSI1) and find a hook by id or list all
 * hooks (GSI2, sharded by the hook id).
 */
import type { Hook, ResolveData } from '@workflow/world';
import { ATTR, keys, shardOf, storageKeys } from '../../ddb.js';
import { type Attrs, bool, date, dropUndefined, epochMs, keysOf, num, str, toItem, val } from '../table/codec.js';
import type { StorageCtx } from '../table/context.js';
import { payloadFor } from './payloads.js';

export interface HookRecord {
  runId: string;
  hookId: string;
  token: string;
  metadata?: unknown;
  createdAt: Date;
  specVersion?: number;
  isWebhook?: boolean;
  isSystem?: boolean;
  tokenRetentionUntil?: Date;
}

/** Single-tenant World: no owner/project/environment dimension (as world-postgres). */
const TENANT = { ownerId: '', projectId: '', environment: '' };

export function hookItem(h: HookRecord): Attrs {
  return {
    ...keysOf(keys.hook(h.token)),
    ...toItem({
      runId: h.runId,
      hookId: h.hookId,
      token: h.token,
      metadata: h.metadata,
      createdAt: epochMs(h.createdAt),
      specVersion: h.specVersion,
      isWebhook: h.isWebhook,
      isSystem: h.isSystem,
      tokenRetentionUntil: epochMs(h.tokenRetentionUntil),
      [ATTR.gsi1pk]: keys.runHooksGsi(h.runId),
      [ATTR.gsi1sk]: h.hookId,
      [ATTR.gsi2pk]: keys.hooksGsi(shardOf(h.hookId)),
      [ATTR.gsi2sk]: h.hookId,
    }),
  };
}

export function parseHook(it: Attrs): HookRecord {
  return {
    runId: str(it, 'runId')!,
    hookId: str(it, 'hookId')!,
    token: str(it, 'token')!,
    metadata: val(it, 'metadata'),
    createdAt: date(it, 'createdAt')!,
    specVersion: num(it, 'specVersion'),
    isWebhook: bool(it, 'isWebhook'),
    isSystem: bool(it, 'isSystem'),
    tokenRetentionUntil: date(it, 'tokenRetentionUntil'),
  };
}

export async function toHook(ctx: StorageCtx, h: HookRecord, rd: ResolveData): Promise<Hook> {
  return dropUndefined({
    runId: h.runId,
    hookId: h.hookId,
    token: h.token,
    ...TENANT,
    metadata: await payloadFor(ctx, h.metadata, rd),
    createdAt: h.createdAt,
    specVersion: h.specVersion,
    isWebhook: h.isWebhook,
    isSystem: h.isSystem,
    tokenRetentionUntil: h.tokenRetentionUntil,
  }) as Hook;
}

/** The token a hook item's partition key names (`HOOK#<token>`). */
export const tokenOfHookPk = (pk: string) => pk.slice(storageKeys.hookPkPrefix.length);
