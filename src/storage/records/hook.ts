/**
 * The hook item `HOOK#<token> / HOOK#meta` (the token's global claim) <-> `HookRecord` <-> the
 * contract's `Hook`. Its index keys list a run's hooks (GSI1) and find a hook by id or list all
 * hooks (GSI2, sharded by the hook id).
 */
import type { Hook, HookResumeContext, ResolveData } from '@workflow/world';
import { isS3Pointer } from '../../context/payload-store.js';
import { assertItemFormat, formatStamp } from '../../schema/formats.js';
import { ATTR, keys, shardOf, storageKeys } from '../../schema/keys.js';
import { type Attrs, bool, date, dropUndefined, epochMs, keysOf, num, str, toItem, val } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { payloadFor } from './payloads.js';
import type { RunRecord } from './run.js';

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
  /** The owning run's resume context (see {@link resumeContextOf}); absent when the run was not at hand. */
  resumeContext?: HookResumeContext;
}

/** Single-tenant World: no owner/project/environment dimension (as world-postgres). */
const TENANT = { ownerId: '', projectId: '', environment: '' };

export function hookItem(h: HookRecord): Attrs {
  return {
    ...formatStamp('records'),
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
      resumeContext: h.resumeContext,
      [ATTR.gsi1pk]: keys.runHooksGsi(h.runId),
      [ATTR.gsi1sk]: h.hookId,
      [ATTR.gsi2pk]: keys.hooksGsi(shardOf(h.hookId)),
      [ATTR.gsi2sk]: h.hookId,
    }),
  };
}

export function parseHook(it: Attrs): HookRecord {
  assertItemFormat(it, 'records', `hook ${str(it, 'PK') ?? '?'} / ${str(it, 'SK') ?? '?'}`);
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
    resumeContext: val(it, 'resumeContext') as HookResumeContext | undefined,
  };
}

export async function toHook(ctx: StorageCtx, h: HookRecord, resolveData: ResolveData): Promise<Hook> {
  return dropUndefined({
    runId: h.runId,
    hookId: h.hookId,
    token: h.token,
    ...TENANT,
    metadata: await payloadFor(ctx, h.metadata, resolveData),
    createdAt: h.createdAt,
    specVersion: h.specVersion,
    isWebhook: h.isWebhook,
    isSystem: h.isSystem,
    tokenRetentionUntil: h.tokenRetentionUntil,
    resumeContext: h.resumeContext,
  }) as Hook;
}

/**
 * What core needs to resume a hook without reading its run (`Hook.resumeContext`: queue routing,
 * serialization capabilities, the key to seal the payload to, the trace link), taken from the run
 * when the hook is created. Every field is fixed when the run is created, so the copy on the hook
 * item never goes stale. A run whose execution context is not inline gets none: core then reads the
 * run, as it does for hooks without one.
 */
export function resumeContextOf(run: RunRecord): HookResumeContext | undefined {
  const executionContext = run.executionContext;
  if (
    executionContext !== undefined &&
    (typeof executionContext !== 'object' ||
      executionContext === null ||
      isS3Pointer(executionContext) ||
      executionContext instanceof Uint8Array)
  )
    return undefined;
  const coreVersion = executionContext?.workflowCoreVersion;
  const traceCarrier = executionContext?.traceCarrier;
  const inputVersion = executionContext?.hookResumeInputVersion;
  return dropUndefined({
    deploymentId: run.deploymentId,
    workflowName: run.workflowName,
    runSpecVersion: run.specVersion,
    workflowCoreVersion: typeof coreVersion === 'string' ? coreVersion : undefined,
    traceCarrier: isStringRecord(traceCarrier) ? traceCarrier : undefined,
    encryptionPublicKey: run.encryptionPublicKey,
    hookResumeInputVersion: typeof inputVersion === 'number' ? inputVersion : undefined,
  });
}

function isStringRecord(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && Object.values(v).every((x) => typeof x === 'string');
}

/** The token a hook item's partition key names (`HOOK#<token>`). */
export const tokenOfHookPk = (pk: string) => pk.slice(storageKeys.hookPkPrefix.length);
