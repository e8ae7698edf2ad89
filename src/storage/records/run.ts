/**
 * The run view item `RUN#<runId> / RUN#meta` <-> `RunRecord` <-> the contract's `WorkflowRun`.
 *
 * A record is the *stored* form (payload fields may be S3 pointers); `toRun` is the only place a
 * run's pointer is followed, and it returns the contract's shape: `output` only when completed,
 * `error` only when failed. The item's index keys put it in the run listing by time and by workflow
 * name, each sharded by the run id (see `schema/keys.ts`).
 */
import type { ResolveData, WorkflowRun } from '@workflow/world';
import { assertItemFormat, formatStamp } from '../../schema/formats.js';
import { ATTR, keys, shardOf, storageKeys } from '../../schema/keys.js';
import { type Attrs, date, dropUndefined, epochMs, keysOf, num, str, toItem, val } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { errorFor, payloadFor } from './payloads.js';

export interface RunRecord {
  runId: string;
  status: WorkflowRun['status'];
  deploymentId: string;
  workflowName: string;
  specVersion?: number;
  executionContext?: Record<string, unknown>;
  input?: unknown;
  output?: unknown;
  error?: unknown;
  errorCode?: string;
  attributes: Record<string, string>;
  encryptionPublicKey?: string;
  expiredAt?: Date;
  startedAt?: Date;
  completedAt?: Date;
  createdAt: Date;
  updatedAt: Date;
  /** Bumped by every attr_set: the optimistic guard for the post-merge key count. */
  attrVer: number;
}

export function runItem(r: RunRecord): Attrs {
  const sortKey = `${r.createdAt.toISOString()}#${r.runId}`;
  return {
    ...formatStamp('records'),
    ...keysOf(keys.runMeta(r.runId)),
    ...toItem({
      runId: r.runId,
      status: r.status,
      deploymentId: r.deploymentId,
      workflowName: r.workflowName,
      specVersion: r.specVersion,
      executionContext: r.executionContext,
      input: r.input,
      output: r.output,
      error: r.error,
      errorCode: r.errorCode,
      encryptionPublicKey: r.encryptionPublicKey,
      expiredAt: epochMs(r.expiredAt),
      startedAt: epochMs(r.startedAt),
      completedAt: epochMs(r.completedAt),
      createdAt: epochMs(r.createdAt),
      updatedAt: epochMs(r.updatedAt),
      attrVer: r.attrVer,
      [ATTR.gsi1pk]: storageKeys.workflowRunsGsi(r.workflowName, shardOf(r.runId)),
      [ATTR.gsi1sk]: sortKey,
      [ATTR.gsi2pk]: keys.runsGsi(shardOf(r.runId)),
      [ATTR.gsi2sk]: sortKey,
    }),
    attributes: { M: Object.fromEntries(Object.entries(r.attributes).map(([k, v]) => [k, { S: v }])) },
    // No hook or wait yet (../write/run-guard.ts `holdingRunGuard` sets it when one is created).
    holds: { BOOL: false },
  };
}

export function parseRun(it: Attrs): RunRecord {
  assertItemFormat(it, 'records', `run view ${str(it, 'PK') ?? '?'} / ${str(it, 'SK') ?? '?'}`);
  const attrs: Record<string, string> = {};
  for (const [k, v] of Object.entries(it.attributes?.M ?? {})) if (v.S !== undefined) attrs[k] = v.S;
  return {
    runId: str(it, 'runId')!,
    status: str(it, 'status') as RunRecord['status'],
    deploymentId: str(it, 'deploymentId') ?? '',
    workflowName: str(it, 'workflowName') ?? '',
    specVersion: num(it, 'specVersion'),
    executionContext: val(it, 'executionContext') as Record<string, unknown> | undefined,
    input: val(it, 'input'),
    output: val(it, 'output'),
    error: val(it, 'error'),
    errorCode: str(it, 'errorCode'),
    attributes: attrs,
    encryptionPublicKey: str(it, 'encryptionPublicKey'),
    expiredAt: date(it, 'expiredAt'),
    startedAt: date(it, 'startedAt'),
    completedAt: date(it, 'completedAt'),
    createdAt: date(it, 'createdAt')!,
    updatedAt: date(it, 'updatedAt')!,
    attrVer: num(it, 'attrVer') ?? 0,
  };
}

/**
 * The contract shape: `output` only when completed, `error` only when failed, and no payloads
 * once `expiredAt` has passed (a `$retention: '0'` run's terminal write already removed them;
 * this keeps a view read in between from showing them or following a deleted S3 object).
 */
export async function toRun(ctx: StorageCtx, stored: RunRecord, resolveData: ResolveData): Promise<WorkflowRun> {
  const r =
    stored.expiredAt !== undefined && stored.expiredAt.getTime() <= Date.now()
      ? { ...stored, input: undefined, output: undefined, error: undefined }
      : stored;
  const [input, output, error] = await Promise.all([
    payloadFor(ctx, r.input, resolveData),
    r.status === 'completed' ? payloadFor(ctx, r.output, resolveData) : undefined,
    r.status === 'failed' ? errorFor(ctx, r.error, resolveData) : undefined,
  ]);
  return dropUndefined({
    runId: r.runId,
    status: r.status,
    deploymentId: r.deploymentId,
    workflowName: r.workflowName,
    specVersion: r.specVersion,
    executionContext: r.executionContext,
    input,
    output,
    error,
    errorCode: r.status === 'failed' ? r.errorCode : undefined,
    attributes: { ...r.attributes },
    encryptionPublicKey: r.encryptionPublicKey,
    expiredAt: r.expiredAt,
    startedAt: r.startedAt,
    completedAt: r.completedAt,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  }) as WorkflowRun;
}
