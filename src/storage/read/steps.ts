/** `steps.*` reads: get, and list in step-id order (creation order for core's ULID ids). */
import type { ListWorkflowRunStepsParams, PaginatedResponse, ResolveData, Step } from '@workflow/world';
import { readInput, when } from '../../aws/expression.js';
import { keys } from '../../schema/keys.js';
import { parseStep, toStep } from '../records/step.js';
import { pageLimit } from '../table/pagination.js';
import { getItem, keyedPage } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { assertId, notFound } from '../table/world-errors.js';

export function createStepReads(ctx: StorageCtx) {
  async function get(runId: string, stepId: string, params?: { resolveData?: ResolveData }): Promise<Step> {
    assertId('runId', runId);
    assertId('stepId', stepId);
    const item = await getItem(ctx, keys.step(runId, stepId));
    if (!item) throw notFound(`Step "${stepId}" not found in run "${runId}"`);
    return toStep(ctx, parseStep(item), params?.resolveData ?? 'all');
  }

  /** Steps in step-id order (core's step ids are ULIDs, so this is creation order); default desc. */
  async function list(params: ListWorkflowRunStepsParams): Promise<PaginatedResponse<Step>> {
    assertId('runId', params.runId);
    const page = await keyedPage(
      ctx,
      {
        ...readInput({ key: [when.is('PK', keys.runPk(params.runId)), when.beginsWith('SK', keys.stepSkPrefix)] }),
        ScanIndexForward: params.pagination?.sortOrder === 'asc',
        ConsistentRead: true,
      },
      pageLimit(params.pagination?.limit),
      params.pagination?.cursor,
      ['PK', 'SK'],
    );
    const resolveData = params.resolveData ?? 'all';
    return {
      data: await Promise.all(page.items.map((i) => toStep(ctx, parseStep(i), resolveData))),
      cursor: page.cursor,
      hasMore: page.hasMore,
    };
  }

  return { get, list };
}
