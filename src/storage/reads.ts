/**
 * The read side of Storage: runs, steps, hooks and events, with cursor pagination.
 *
 * Cursors are opaque strings. Events use `evc:<slot>` (the slot of the last returned event, an
 * exclusive bound), so a cursor stays valid across writes and a write's delta can hand one
 * out. Other lists encode the DynamoDB key of the last returned item. Every `get` and run-scoped
 * list is strongly consistent; listings through a GSI (runs by time or workflow, hooks by run,
 * events by correlation id) are eventually consistent, as GSIs are.
 */
import { BatchGetItemCommand, type QueryCommandInput, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { HookNotFoundError, WorkflowRunNotFoundError } from '@workflow/errors';
import type {
  Event,
  GetEventParams,
  Hook,
  ListEventsByCorrelationIdParams,
  ListEventsParams,
  ListHooksParams,
  ListWorkflowRunStepsParams,
  ListWorkflowRunsParams,
  PaginatedResponse,
  ResolveData,
  Step,
  WaitForTerminalRunStatusParams,
  WorkflowRun,
} from '@workflow/world';
import { eventIdToSlot, getMaxEventsPerRun } from '@workflow/world';
import { ATTR, GSI1, GSI2, keys, storageKeys } from '../ddb.js';
import type { Attrs } from './codec.js';
import { getItem } from './common.js';
import { assertId, backoff, invalidArgument, notFound } from './errors.js';
import { isTerminal, keysOf, parseEvent, parseHook, parseRun, parseStep, type StorageCtx, toEvent, toHook, toRun, toStep } from './items.js';
import { decodeEventCursor, encodeEventCursor, EVT_END, EVT_START, type SlotHints } from './slots.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

function pageLimit(limit: number | undefined, def = DEFAULT_LIMIT, max = MAX_LIMIT): number {
  if (limit === undefined) return def;
  if (!Number.isInteger(limit) || limit < 1) throw invalidArgument('limit', `limit must be a positive integer, got ${limit}`);
  return Math.min(limit, max);
}

// ---------------------------------------------------------------- key cursors

function encodeKeyCursor(key: Attrs): string {
  const plain = Object.fromEntries(Object.entries(key).map(([k, v]) => [k, v.S]));
  return Buffer.from(JSON.stringify(plain)).toString('base64url');
}

function decodeKeyCursor(cursor: string, names: string[]): Attrs {
  try {
    const plain = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
    const key: Attrs = {};
    for (const n of names) {
      if (typeof plain[n] !== 'string') throw new Error(n);
      key[n] = { S: plain[n] as string };
    }
    return key;
  } catch {
    throw invalidArgument('cursor', 'Invalid pagination cursor');
  }
}

/**
 * One page of `limit` matching items from a (possibly filtered) Query or Scan: pages DynamoDB
 * until one item past the page is seen (that is `hasMore`), and cursors at the last returned item.
 */
async function keyedPage(
  ctx: StorageCtx,
  input: Omit<QueryCommandInput, 'TableName'>,
  limit: number,
  cursor: string | undefined,
  keyNames: string[],
  scan = false,
): Promise<{ items: Attrs[]; cursor: string | null; hasMore: boolean }> {
  const items: Attrs[] = [];
  let start: Attrs | undefined = cursor ? decodeKeyCursor(cursor, keyNames) : undefined; // '' = from the start
  do {
    const req = { TableName: ctx.table, ...input, Limit: Math.max(limit + 1 - items.length, 25), ExclusiveStartKey: start };
    const res = scan ? await ctx.ddb.send(new ScanCommand(req as never)) : await ctx.ddb.send(new QueryCommand(req));
    items.push(...((res.Items ?? []) as Attrs[]));
    start = res.LastEvaluatedKey as Attrs | undefined;
  } while (start && items.length <= limit);
  const hasMore = items.length > limit;
  const data = items.slice(0, limit);
  const last = data[data.length - 1];
  const next = hasMore && last ? encodeKeyCursor(Object.fromEntries(keyNames.map((n) => [n, last[n]]))) : null;
  return { items: data, cursor: next, hasMore };
}

// ---------------------------------------------------------------- runs

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

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

// ---------------------------------------------------------------- steps

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
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :s)',
        ExpressionAttributeValues: { ':pk': { S: keys.runPk(params.runId) }, ':s': { S: keys.stepSkPrefix } },
        ScanIndexForward: params.pagination?.sortOrder === 'asc',
        ConsistentRead: true,
      },
      pageLimit(params.pagination?.limit),
      params.pagination?.cursor,
      ['PK', 'SK'],
    );
    const rd = params.resolveData ?? 'all';
    return { data: await Promise.all(page.items.map((i) => toStep(ctx, parseStep(i), rd))), cursor: page.cursor, hasMore: page.hasMore };
  }

  return { get, list };
}

// ---------------------------------------------------------------- hooks

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

// ---------------------------------------------------------------- events

export function createEventReads(ctx: StorageCtx, hints: SlotHints) {
  async function get(runId: string, eventId: string, params?: GetEventParams): Promise<Event> {
    assertId('runId', runId);
    const slot = typeof eventId === 'string' ? eventIdToSlot(eventId) : null;
    if (slot === null) throw invalidArgument('eventId', `Invalid event id "${String(eventId).slice(0, 60)}"`);
    const item = await getItem(ctx, keys.event(runId, slot));
    if (!item) throw notFound(`Event ${eventId} in run ${runId} not found`);
    return toEvent(ctx, parseEvent(item), params?.resolveData ?? 'all');
  }

  /**
   * Ascending by default; no `limit` means every remaining event (capped at the per-run
   * maximum). The returned cursor is the last event's slot even on the final page, so an
   * incremental reader can resume from it.
   */
  async function list(params: ListEventsParams): Promise<PaginatedResponse<Event>> {
    assertId('runId', params.runId);
    const p = params.pagination ?? {};
    const asc = p.sortOrder !== 'desc';
    // An empty cursor means "from the start" (the `wf` CLI passes '' when no --cursor is given).
    const after = p.cursor ? decodeEventCursor(p.cursor) : undefined;
    const limit = pageLimit(p.limit, getMaxEventsPerRun(), Math.max(getMaxEventsPerRun(), MAX_LIMIT));
    const [lo, hi] = asc
      ? [keys.eventSk((after ?? 0) + 1), EVT_END]
      : [EVT_START, after === undefined ? EVT_END : after <= 1 ? `${EVT_START}0` : keys.eventSk(after - 1)];
    const items = await queryPage(ctx, {
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
      ExpressionAttributeValues: { ':pk': { S: keys.runPk(params.runId) }, ':lo': { S: lo }, ':hi': { S: hi } },
      ScanIndexForward: asc,
      ConsistentRead: true,
    }, limit);
    return eventPage(items, limit, p.cursor, params.resolveData, (max) => asc && hints.note(params.runId, max));
  }

  async function listByCorrelationId(params: ListEventsByCorrelationIdParams): Promise<PaginatedResponse<Event>> {
    assertId('runId', params.runId);
    assertId('correlationId', params.correlationId);
    const p = params.pagination ?? {};
    const asc = p.sortOrder !== 'desc';
    // An empty cursor means "from the start" (the `wf` CLI passes '' when no --cursor is given).
    const after = p.cursor ? decodeEventCursor(p.cursor) : undefined;
    const limit = pageLimit(p.limit, getMaxEventsPerRun(), Math.max(getMaxEventsPerRun(), MAX_LIMIT));
    const values: Attrs = { ':p': { S: keys.corrGsi(params.runId, params.correlationId) } };
    let cond = `${ATTR.gsi1pk} = :p`;
    if (after !== undefined) {
      cond += ` AND ${ATTR.gsi1sk} ${asc ? '>' : '<'} :c`;
      values[':c'] = { S: keys.eventSk(after) };
    }
    const items = await queryPage(ctx, { IndexName: GSI1, KeyConditionExpression: cond, ExpressionAttributeValues: values, ScanIndexForward: asc }, limit);
    return eventPage(items, limit, p.cursor, params.resolveData);
  }

  async function eventPage(items: Attrs[], limit: number, cursorIn: string | undefined, rd: ResolveData | undefined, note?: (max: number) => unknown) {
    const hasMore = items.length > limit;
    const recs = items.slice(0, limit).map(parseEvent);
    if (recs.length > 0) note?.(Math.max(...recs.map((r) => r.slot)));
    const data = await Promise.all(recs.map((r) => toEvent(ctx, r, rd ?? 'all')));
    const cursor = recs.length > 0 ? encodeEventCursor(recs[recs.length - 1].slot) : (cursorIn ?? null);
    return { data, cursor, hasMore };
  }

  return { get, list, listByCorrelationId };
}

/** Up to `limit + 1` items (the extra one only tells `hasMore`). */
async function queryPage(ctx: StorageCtx, input: Omit<QueryCommandInput, 'TableName'>, limit: number): Promise<Attrs[]> {
  const out: Attrs[] = [];
  let start: Attrs | undefined;
  do {
    const res = await ctx.ddb.send(new QueryCommand({ TableName: ctx.table, ...input, Limit: limit + 1 - out.length, ExclusiveStartKey: start }));
    out.push(...((res.Items ?? []) as Attrs[]));
    start = res.LastEvaluatedKey as Attrs | undefined;
  } while (start && out.length <= limit);
  return out;
}
