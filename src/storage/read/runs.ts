/**
 * `runs.*` reads: get, list (newest first, merged from the sharded run-listing index, with
 * workflowName and status filters), getMany, and the long poll `waitForTerminalStatus`. Items are
 * always read strongly consistent; which runs a listing sees is eventually consistent, as GSIs are.
 */
import { WorkflowRunNotFoundError } from '@workflow/errors';
import type {
  ListWorkflowRunsParams,
  PaginatedResponse,
  ResolveData,
  WaitForTerminalRunStatusParams,
  WorkflowRun,
} from '@workflow/world';
import { when } from '../../aws/expression.js';
import { sleep } from '../../aws/sleep.js';
import { ATTR, GSI1, GSI2, keys, storageKeys } from '../../schema/keys.js';
import { expired, isTerminalRun } from '../records/lifecycle.js';
import { parseRun, toRun } from '../records/run.js';
import type { Attrs } from '../table/codec.js';
import { keysOf } from '../table/codec.js';
import { pageLimit } from '../table/pagination.js';
import { getItem, getItems } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { assertId } from '../table/world-errors.js';
import { shardedPage } from './sharded-page.js';

/** A run item without `input` and `output`, which 'none' omits (`error` stays: `errorFor`). */
const RUN_FIELDS = [
  'runId',
  'status',
  'deploymentId',
  'workflowName',
  'specVersion',
  'executionContext',
  'error',
  'errorCode',
  'attributes',
];
const RUN_TIMES = [
  'encryptionPublicKey',
  'expiredAt',
  'startedAt',
  'completedAt',
  'createdAt',
  'updatedAt',
  'attrVer',
  'ttl',
];
const WITHOUT_PAYLOADS = ['PK', 'SK', ...RUN_FIELDS, ...RUN_TIMES];

export function createRunReads(ctx: StorageCtx) {
  async function get(id: string, params?: { resolveData?: ResolveData }): Promise<WorkflowRun> {
    assertId('runId', id);
    const item = await getItem(ctx, keys.runMeta(id));
    // A run past its retention is gone, even before DynamoDB's TTL sweep deletes the item.
    if (!item || expired(item)) throw new WorkflowRunNotFoundError(id);
    return toRun(ctx, parseRun(item), params?.resolveData ?? 'all');
  }

  /**
   * Newest first by default. The index holds only keys and `status` (the filter), so the page's
   * runs are then read by key; for `resolveData: 'none'` without their payload attributes.
   */
  async function list(params: ListWorkflowRunsParams = {}): Promise<PaginatedResponse<WorkflowRun>> {
    const statuses =
      params.status === undefined ? undefined : Array.isArray(params.status) ? params.status : [params.status];
    if (statuses && statuses.length === 0) return { data: [], cursor: null, hasMore: false };
    const resolveData = params.resolveData ?? 'all';
    const name = params.workflowName;
    const page = await shardedPage(
      ctx,
      {
        index: name !== undefined ? GSI1 : GSI2,
        pkName: name !== undefined ? ATTR.gsi1pk : ATTR.gsi2pk,
        skName: name !== undefined ? ATTR.gsi1sk : ATTR.gsi2sk,
        pk: name !== undefined ? (shard) => storageKeys.workflowRunsGsi(name, shard) : keys.runsGsi,
        filter: statuses ? when.oneOf('status', statuses) : undefined,
        ascending: params.pagination?.sortOrder === 'asc',
      },
      pageLimit(params.pagination?.limit),
      params.pagination?.cursor,
    );
    const items = await getItems(ctx, page.items, resolveData === 'none' ? WITHOUT_PAYLOADS : undefined);
    const runs = items.filter((i): i is Attrs => i !== undefined && !expired(i));
    return {
      data: await Promise.all(runs.map((i) => toRun(ctx, parseRun(i), resolveData))),
      cursor: page.cursor,
      hasMore: page.hasMore,
    };
  }

  /** Input order kept; `null` for ids that do not exist. */
  async function getMany(
    ids: readonly string[],
    params?: { resolveData?: ResolveData },
  ): Promise<(WorkflowRun | null)[]> {
    const resolveData = params?.resolveData ?? 'all';
    const items = await getItems(
      ctx,
      ids.filter((id) => typeof id === 'string' && id.length > 0).map((id) => keysOf(keys.runMeta(id))),
      resolveData === 'none' ? WITHOUT_PAYLOADS : undefined,
    );
    const byId = new Map(items.filter((i): i is Attrs => i !== undefined && !expired(i)).map((i) => [i.runId.S!, i]));
    return Promise.all(ids.map((id) => (byId.has(id) ? toRun(ctx, parseRun(byId.get(id)!), resolveData) : null)));
  }

  /** Poll-based long poll: returns once terminal, or with the latest snapshot at the deadline. */
  async function waitForTerminalStatus(id: string, params: WaitForTerminalRunStatusParams = {}): Promise<WorkflowRun> {
    const timeoutMs = Math.min(Math.max(params.timeoutMs ?? 10_000, 0), 60_000);
    const deadline = Date.now() + timeoutMs;
    let interval = 50;
    for (;;) {
      const run = await get(id, { resolveData: params.resolveData });
      const left = deadline - Date.now();
      if (isTerminalRun(run.status) || left <= 0 || params.signal?.aborted) return run;
      await sleep(Math.min(interval, left), params.signal);
      interval = Math.min(interval * 2, 1000);
    }
  }

  return { get, list, getMany, waitForTerminalStatus };
}
