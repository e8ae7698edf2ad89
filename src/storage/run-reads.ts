/**
 * `runs.*` reads: get, list (newest first through the run-listing index, with workflowName and
 * status filters), getMany, and the long poll `waitForTerminalStatus`. Gets are strongly
 * consistent; listings through an index are eventually consistent, as GSIs are.
 */
import { BatchGetItemCommand } from '@aws-sdk/client-dynamodb';
import { WorkflowRunNotFoundError } from '@workflow/errors';
import type { ListWorkflowRunsParams, PaginatedResponse, ResolveData, WaitForTerminalRunStatusParams, WorkflowRun } from '@workflow/world';
import { sleep } from '../aws/sleep.js';
import { ATTR, GSI1, GSI2, keys, storageKeys } from '../ddb.js';
import { backoff } from './backoff.js';
import type { Attrs } from './codec.js';
import type { StorageCtx } from './context.js';
import { assertId } from './errors.js';
import { pageLimit } from './pagination.js';
import { keysOf } from './records/attrs.js';
import { parseRun, toRun } from './records/run.js';
import { getItem, keyedPage } from './table-reads.js';
import { isTerminal } from './terminal.js';

export function createRunReads(ctx: StorageCtx) {
  async function get(id: string, params?: { resolveData?: ResolveData }): Promise<WorkflowRun> {
    assertId('runId', id);
    const item = await getItem(ctx, keys.runMeta(id));
    if (!item) throw new WorkflowRunNotFoundError(id);
    return toRun(ctx, parseRun(item), params?.resolveData ?? 'all');
  }

  async function list(params: ListWorkflowRunsParams = {}): Promise<PaginatedResponse<WorkflowRun>> {
    const statuses = params.status === undefined ? undefined : Array.isArray(params.status) ? params.status : [params.status];
    if (statuses && statuses.length === 0) return { data: [], cursor: null, hasMore: false };
    const rd = params.resolveData ?? 'all';
    const byName = params.workflowName !== undefined;
    const [pk, sk] = byName ? [ATTR.gsi1pk, ATTR.gsi1sk] : [ATTR.gsi2pk, ATTR.gsi2sk];
    const values: Attrs = { ':p': { S: byName ? storageKeys.workflowRunsGsi(params.workflowName!) : keys.runsGsi } };
    for (const [i, s] of (statuses ?? []).entries()) values[`:s${i}`] = { S: s };
    const page = await keyedPage(
      ctx,
      {
        IndexName: byName ? GSI1 : GSI2,
        KeyConditionExpression: `${pk} = :p`,
        ExpressionAttributeValues: values,
        ...(statuses ? { FilterExpression: `#st IN (${statuses.map((_, i) => `:s${i}`).join(', ')})`, ExpressionAttributeNames: { '#st': 'status' } } : {}),
        ScanIndexForward: params.pagination?.sortOrder === 'asc',
      },
      pageLimit(params.pagination?.limit),
      params.pagination?.cursor,
      ['PK', 'SK', pk, sk],
    );
    return { data: await Promise.all(page.items.map((i) => toRun(ctx, parseRun(i), rd))), cursor: page.cursor, hasMore: page.hasMore };
  }

  /** Input order kept; `null` for ids that do not exist. */
  async function getMany(ids: readonly string[], params?: { resolveData?: ResolveData }): Promise<(WorkflowRun | null)[]> {
    const found = new Map<string, Attrs>();
    const unique = [...new Set(ids.filter((id) => typeof id === 'string' && id.length > 0))];
    for (let i = 0; i < unique.length; i += 100) {
      let keysLeft = unique.slice(i, i + 100).map((id) => keysOf(keys.runMeta(id)));
      for (let attempt = 0; keysLeft.length > 0; attempt++) {
        const res = await ctx.ddb.send(new BatchGetItemCommand({ RequestItems: { [ctx.table]: { Keys: keysLeft, ConsistentRead: true } } }));
        for (const it of (res.Responses?.[ctx.table] ?? []) as Attrs[]) found.set(it.runId.S!, it);
        keysLeft = (res.UnprocessedKeys?.[ctx.table]?.Keys ?? []) as Attrs[];
        if (keysLeft.length > 0) await backoff(attempt);
      }
    }
    const rd = params?.resolveData ?? 'all';
    return Promise.all(ids.map((id) => (found.has(id) ? toRun(ctx, parseRun(found.get(id)!), rd) : null)));
  }

  /** Poll-based long poll: returns once terminal, or with the latest snapshot at the deadline. */
  async function waitForTerminalStatus(id: string, params: WaitForTerminalRunStatusParams = {}): Promise<WorkflowRun> {
    const timeoutMs = Math.min(Math.max(params.timeoutMs ?? 10_000, 0), 60_000);
    const deadline = Date.now() + timeoutMs;
    let interval = 50;
    for (;;) {
      const run = await get(id, { resolveData: params.resolveData });
      const left = deadline - Date.now();
      if (isTerminal(run.status) || left <= 0 || params.signal?.aborted) return run;
      await sleep(Math.min(interval, left), params.signal);
      interval = Math.min(interval * 2, 1000);
    }
  }

  return { get, list, getMany, waitForTerminalStatus };
}
