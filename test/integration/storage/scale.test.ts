/**
 * Scale layout (#13): the run and hook list keys are sharded, so no index partition key takes the
 * bulk of the writes; listings merge the shards with exact, stable pagination; no listing scans;
 * index items hold only keys and `status` (large inputs never land in an index); a step writes at
 * most one correlation-index item.
 */
import { DescribeTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { Storage, WorkflowRun } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import { LIST_SHARDS, TABLE_SCHEMA } from '../../../src/schema/keys.js';
import { createStorage } from '../../../src/storage/index.js';
import { bytes, runCreatedReq, type StorageFixture, storageFixture, sv } from '../../helpers/storage.js';

let f: StorageFixture;
let watched: ReturnType<typeof createClients>;
let storage: Storage;
const commands: string[] = [];

const RUNS = 320;
const NAMES = ['agent//a', 'agent//b', 'agent//c'];
let runs: WorkflowRun[] = [];

/** Newest first, as the index sorts: `<createdAt ISO>#<runId>` descending. */
const sortKey = (r: WorkflowRun) => `${r.createdAt.toISOString()}#${r.runId}`;
const newestFirst = (a: WorkflowRun, b: WorkflowRun) => (sortKey(a) < sortKey(b) ? 1 : -1);

async function collect<T>(
  page: (cursor: string | undefined) => Promise<{ data: T[]; cursor: string | null; hasMore: boolean }>,
): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const p = await page(cursor);
    pages.push(p.data);
    if (!p.hasMore) return pages;
    expect(p.cursor).toBeTruthy();
    cursor = p.cursor!;
  }
}

async function scanAll(): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  let start: Record<string, any> | undefined;
  do {
    const res = await f.clients.ddb.send(new ScanCommand({ TableName: f.config.tableName, ExclusiveStartKey: start }));
    out.push(...(res.Items ?? []));
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}

beforeAll(async () => {
  f = await storageFixture();
  watched = createClients(f.config);
  (watched.ddb.middlewareStack as any).add(
    (next: any, context: any) => async (args: any) => {
      commands.push(context.commandName);
      return next(args);
    },
    { step: 'initialize' },
  );
  storage = createStorage(createContext(f.config, watched));
  // A few hundred runs over three workflow names, 16 at a time; every third started, every fifth cancelled.
  for (let i = 0; i < RUNS; i += 16) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(16, RUNS - i) }, async (_, j) => {
        const n = i + j;
        const { run } = await f.storage.events.create(
          null,
          runCreatedReq({ workflowName: NAMES[n % NAMES.length], input: bytes(`in-${n}`) }),
        );
        if (n % 3 === 0)
          return (await f.storage.events.create(run!.runId, { eventType: 'run_started', specVersion: sv })).run!;
        if (n % 5 === 0)
          return (await f.storage.events.create(run!.runId, { eventType: 'run_cancelled', specVersion: sv })).run!;
        return run!;
      }),
    );
    runs.push(...batch);
  }
  runs = runs.sort(newestFirst);
}, 240_000);

afterAll(() => {
  destroyClients(watched);
  f?.close();
});

describe('index spread', () => {
  it('every run item sits under one of 16 keys per list, none holding more than its 1/16 share plus binomial spread', async () => {
    const items = await scanAll();
    const runItems = items.filter((i) => i.SK.S === 'RUN#meta');
    expect(runItems).toHaveLength(RUNS);
    for (const [attr, prefix] of [
      ['GSI2PK', 'RUNS#'],
      ['GSI1PK', 'WF#'],
    ] as const) {
      const perKey = new Map<string, number>();
      for (const it of runItems) perKey.set(it[attr].S, (perKey.get(it[attr].S) ?? 0) + 1);
      // Every run item is in the index, and only under a sharded key.
      expect([...perKey.keys()].every((k) => k.startsWith(prefix) && /#\d+$/.test(k))).toBe(true);
      const groups =
        attr === 'GSI2PK' ? [RUNS] : NAMES.map((_, n) => runs.filter((r) => r.workflowName === NAMES[n]).length);
      // Never more keys than shards; all of them in use where a shard's expected count is large
      // enough that an empty one is a real miss (for ~100 runs per name, (15/16)^100 is not).
      expect(perKey.size).toBeLessThanOrEqual(groups.length * LIST_SHARDS);
      if (Math.min(...groups) >= 300) expect(perKey.size).toBe(groups.length * LIST_SHARDS);
      // A fair share is 1/16 of the group; hashing spreads binomially, so allow six standard
      // deviations above it (a one-in-a-billion miss). One constant key, as before, held 100%.
      const largestGroup = Math.max(...groups);
      const mean = largestGroup / LIST_SHARDS;
      expect(Math.max(...perKey.values())).toBeLessThanOrEqual(mean + 6 * Math.sqrt(mean));
      expect(Math.max(...perKey.values())).toBeLessThan(largestGroup / 4);
    }
  });

  it('indexes copy only keys and status: no input, output or event data in either index', async () => {
    const desc = await f.clients.ddb.send(new DescribeTableCommand({ TableName: f.config.tableName }));
    for (const g of desc.Table!.GlobalSecondaryIndexes!) {
      expect(g.Projection?.ProjectionType).toBe('INCLUDE');
      expect(g.Projection?.NonKeyAttributes).toEqual(['status']);
    }
    expect(TABLE_SCHEMA.gsis.map((g) => g.projection.ProjectionType)).toEqual(['INCLUDE', 'INCLUDE']);
  });

  it('a step writes no correlation-index item: its step item records where its events start', async () => {
    const runId = runs.find((r) => r.status === 'running')!.runId;
    await f.storage.events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_x',
      eventData: { stepName: 's', input: bytes('i') },
    });
    await f.storage.events.create(runId, {
      eventType: 'step_completed',
      specVersion: sv,
      correlationId: 'step_x',
      eventData: { result: bytes('r') },
    });
    const items = (await scanAll()).filter((i) => i.PK.S === `RUN#${runId}` && i.cid?.S === 'step_x');
    // The lazy start's two events are one pair item (its second event in `e2`).
    expect(items.map((i) => [i.t.S, i.e2?.M?.t?.S])).toEqual([
      ['step_created', 'step_started'],
      ['step_completed', undefined],
    ]);
    expect(items.filter((i) => i.GSI1PK !== undefined)).toEqual([]);
    const step = (await scanAll()).find((i) => i.PK.S === `RUN#${runId}` && i.SK.S === 'STEP#step_x');
    const createdSlot = Number(items[0].SK.S!.slice('EVT#'.length));
    expect(Number(step?.fs?.N)).toBe(createdSlot);
    // ... and listByCorrelationId still returns all three, both ways and paged.
    const asc = await storage.events.listByCorrelationId({ runId, correlationId: 'step_x' });
    expect(asc.data.map((e) => e.eventType)).toEqual(['step_created', 'step_started', 'step_completed']);
    const paged = await collect((cursor) =>
      storage.events.listByCorrelationId({ runId, correlationId: 'step_x', pagination: { limit: 1, cursor } }),
    );
    expect(paged.flat().map((e) => e.eventType)).toEqual(['step_created', 'step_started', 'step_completed']);
    const desc = await storage.events.listByCorrelationId({
      runId,
      correlationId: 'step_x',
      pagination: { sortOrder: 'desc', limit: 2 },
    });
    expect(desc.data.map((e) => e.eventType)).toEqual(['step_completed', 'step_started']);
    const rest = await storage.events.listByCorrelationId({
      runId,
      correlationId: 'step_x',
      pagination: { sortOrder: 'desc', cursor: desc.cursor! },
    });
    expect(rest.data.map((e) => e.eventType)).toEqual(['step_created']);
  });
});

describe('runs.list over the shards', () => {
  it('pages newest first, exactly: every run once, in order, whatever the page size', async () => {
    for (const limit of [7, 50, 1000]) {
      const pages = await collect((cursor) =>
        storage.runs.list({ pagination: { limit, cursor }, resolveData: 'none' }),
      );
      expect(pages.flat().map((r) => r.runId)).toEqual(runs.map((r) => r.runId));
      expect(pages.slice(0, -1).every((p) => p.length === limit)).toBe(true);
    }
  });

  it('filters by workflow name and status (array), both orders, exact across pages', async () => {
    const want = runs.filter(
      (r) => r.workflowName === NAMES[1] && (r.status === 'running' || r.status === 'cancelled'),
    );
    expect(want.length).toBeGreaterThan(10);
    const pages = await collect((cursor) =>
      storage.runs.list({
        workflowName: NAMES[1],
        status: ['running', 'cancelled'],
        pagination: { limit: 4, cursor },
        resolveData: 'none',
      }),
    );
    expect(pages.flat().map((r) => r.runId)).toEqual(want.map((r) => r.runId));
    const asc = await collect((cursor) =>
      storage.runs.list({ status: 'pending', pagination: { limit: 9, cursor, sortOrder: 'asc' } }),
    );
    expect(asc.flat().map((r) => r.runId)).toEqual(
      runs
        .filter((r) => r.status === 'pending')
        .map((r) => r.runId)
        .reverse(),
    );
    // 'all' returns the inputs (read from the items, not the index).
    const one = await storage.runs.list({ workflowName: NAMES[2], pagination: { limit: 1 } });
    const expected = runs.find((r) => r.workflowName === NAMES[2])!;
    expect(Buffer.from(one.data[0].input as Uint8Array).toString()).toBe(
      Buffer.from(expected.input as Uint8Array).toString(),
    );
  });

  it('is stable: runs created between pages do not shift later pages', async () => {
    const first = await storage.runs.list({ pagination: { limit: 10 }, resolveData: 'none' });
    for (let i = 0; i < 5; i++) await f.storage.events.create(null, runCreatedReq({ workflowName: NAMES[0] }));
    const rest = await collect((cursor) =>
      storage.runs.list({ pagination: { limit: 25, cursor: cursor ?? first.cursor! }, resolveData: 'none' }),
    );
    expect([...first.data, ...rest.flat()].map((r) => r.runId)).toEqual(runs.map((r) => r.runId));
  });

  it('answers a bad cursor with a 400 naming the field', async () => {
    const err = await storage.runs.list({ pagination: { cursor: 'garbage' } }).catch((e) => e);
    expect(err).toMatchObject({ name: 'WorkflowWorldError', status: 400, field: 'cursor' });
  });
});

describe('hooks.list without a runId', () => {
  it('merges the hook shards in hook-id order, exactly across pages, and never scans', async () => {
    const runId = runs.find((r) => r.status === 'running')!.runId;
    const ids = Array.from({ length: 40 }, (_, i) => `hook_${String(i).padStart(3, '0')}`);
    for (const id of ids) {
      await f.storage.events.create(runId, {
        eventType: 'hook_created',
        specVersion: sv,
        correlationId: id,
        eventData: { token: `tok-${id}` },
      });
    }
    commands.length = 0;
    const pages = await collect((cursor) => storage.hooks.list({ pagination: { limit: 6, cursor } }));
    expect(pages.flat().map((h) => h.hookId)).toEqual(ids);
    const desc = await storage.hooks.list({ pagination: { limit: 3, sortOrder: 'desc' } });
    expect(desc.data.map((h) => h.hookId)).toEqual(ids.slice(-3).reverse());
    expect((await storage.hooks.get('hook_017')).token).toBe('tok-hook_017');
    expect(commands).not.toContain('ScanCommand');
    expect(commands).toContain('QueryCommand');
  });
});
