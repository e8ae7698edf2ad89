/**
 * Reads: cursor pagination with limit and sort order on every list, listByCorrelationId,
 * runs by workflow name and status, getMany, waitForTerminalStatus.
 */
import { EventSchema, WorkflowRunSchema } from '@workflow/world';
import { ulid } from 'ulid';
import { describe, expect, it } from 'vitest';
import { bytes, createdStep, fileStorageFixture, runCreatedReq, startedRun, sv } from '../../helpers/storage.js';

const f = fileStorageFixture();

async function collect<T>(
  page: (cursor?: string) => Promise<{ data: T[]; cursor: string | null; hasMore: boolean }>,
): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const p = await page(cursor);
    pages.push(p.data);
    if (!p.hasMore) return pages;
    cursor = p.cursor!;
  }
}

describe('events', () => {
  it('lists ascending by default, pages with limit and cursor both ways, resumes from the last cursor', async () => {
    const runId = await startedRun(f.storage);
    for (let i = 0; i < 5; i++) await createdStep(f.storage, runId, `step_${i}`);
    const all = await f.storage.events.list({ runId });
    expect(all.data).toHaveLength(7);
    expect(all.hasMore).toBe(false);
    for (const e of all.data) EventSchema.parse(e);
    const ids = all.data.map((e) => e.eventId);
    const asc = await collect((cursor) => f.storage.events.list({ runId, pagination: { limit: 3, cursor } }));
    expect(asc.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(asc.flat().map((e) => e.eventId)).toEqual(ids);
    const desc = await collect((cursor) =>
      f.storage.events.list({ runId, pagination: { limit: 2, cursor, sortOrder: 'desc' } }),
    );
    expect(desc.flat().map((e) => e.eventId)).toEqual([...ids].reverse());
    // Incremental: nothing new after the last cursor, then exactly the new event.
    const empty = await f.storage.events.list({ runId, pagination: { cursor: all.cursor! } });
    expect(empty.data).toEqual([]);
    expect(empty.cursor).toBe(all.cursor);
    await createdStep(f.storage, runId, 'step_late');
    const next = await f.storage.events.list({ runId, pagination: { cursor: all.cursor! } });
    expect(next.data.map((e) => e.correlationId)).toEqual(['step_late']);
    expect(await f.storage.events.get(runId, ids[2])).toEqual(all.data[2]);
  });

  it('listByCorrelationId is scoped to the run and pages', async () => {
    const a = await startedRun(f.storage);
    const b = await startedRun(f.storage);
    for (const runId of [a, b]) {
      await createdStep(f.storage, runId, 'step_1');
      await f.storage.events.create(runId, { eventType: 'step_started', specVersion: sv, correlationId: 'step_1' });
      await f.storage.events.create(runId, {
        eventType: 'step_completed',
        specVersion: sv,
        correlationId: 'step_1',
        eventData: { result: bytes('r') },
      });
    }
    const all = await f.storage.events.listByCorrelationId({ runId: a, correlationId: 'step_1' });
    expect(all.data.map((e) => [e.runId, e.eventType])).toEqual([
      [a, 'step_created'],
      [a, 'step_started'],
      [a, 'step_completed'],
    ]);
    const pages = await collect((cursor) =>
      f.storage.events.listByCorrelationId({ runId: a, correlationId: 'step_1', pagination: { limit: 2, cursor } }),
    );
    expect(pages.flat().map((e) => e.eventId)).toEqual(all.data.map((e) => e.eventId));
    const desc = await f.storage.events.listByCorrelationId({
      runId: a,
      correlationId: 'step_1',
      pagination: { sortOrder: 'desc' },
    });
    expect(desc.data.map((e) => e.eventType)).toEqual(['step_completed', 'step_started', 'step_created']);
  });
});

describe('runs', () => {
  it('lists by workflow name and status (single or array), newest first, with pagination', async () => {
    const wf = `wf-${ulid()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await f.storage.events.create(null, runCreatedReq({ workflowName: wf }))).run.runId);
    await f.storage.events.create(ids[0], { eventType: 'run_started', specVersion: sv });
    await f.storage.events.create(ids[1], { eventType: 'run_cancelled', specVersion: sv });
    const byName = await collect((cursor) =>
      f.storage.runs.list({ workflowName: wf, pagination: { limit: 2, cursor } }),
    );
    expect(byName.flat().map((r) => r.runId)).toEqual([...ids].reverse());
    for (const r of byName.flat()) WorkflowRunSchema.parse(r);
    const asc = await f.storage.runs.list({ workflowName: wf, pagination: { sortOrder: 'asc' } });
    expect(asc.data.map((r) => r.runId)).toEqual(ids);
    expect((await f.storage.runs.list({ workflowName: wf, status: 'running' })).data.map((r) => r.runId)).toEqual([
      ids[0],
    ]);
    const active = await collect((cursor) =>
      f.storage.runs.list({
        workflowName: wf,
        status: ['pending', 'running'],
        pagination: { limit: 1, cursor },
        resolveData: 'none',
      }),
    );
    expect(active.flat().map((r) => r.runId)).toEqual([ids[4], ids[3], ids[2], ids[0]]);
    expect(active.flat().every((r) => r.input === undefined)).toBe(true);
    expect((await f.storage.runs.list({ workflowName: wf, status: [] })).data).toEqual([]);
    const global = await f.storage.runs.list({ status: 'cancelled', pagination: { limit: 1000 } });
    expect(global.data.map((r) => r.runId)).toContain(ids[1]);
  });

  it('getMany keeps input order with null for missing; waitForTerminalStatus answers at once or at the deadline', async () => {
    const a = await startedRun(f.storage);
    const b = await startedRun(f.storage);
    const missing = `wrun_${ulid()}`;
    const many = await f.storage.runs.getMany!([b, missing, a]);
    expect(many.map((r) => r?.runId ?? null)).toEqual([b, null, a]);
    await f.storage.events.create(a, {
      eventType: 'run_completed',
      specVersion: sv,
      eventData: { output: bytes('o') },
    });
    expect((await f.storage.runs.waitForTerminalStatus!(a, { timeoutMs: 30_000 })).status).toBe('completed');
    expect((await f.storage.runs.waitForTerminalStatus!(b, { timeoutMs: 1 })).status).toBe('running');
    await expect(f.storage.runs.waitForTerminalStatus!(missing, { timeoutMs: 1 })).rejects.toMatchObject({
      name: 'WorkflowRunNotFoundError',
    });
    const waiting = f.storage.runs.waitForTerminalStatus!(b, { timeoutMs: 30_000 });
    await f.storage.events.create(b, { eventType: 'run_failed', specVersion: sv, eventData: { error: bytes('e') } });
    expect((await waiting).status).toBe('failed');
  });
});

describe('steps and hooks', () => {
  it('steps.list pages both ways; hooks.list by run and globally', async () => {
    const runId = await startedRun(f.storage);
    for (let i = 0; i < 5; i++) await createdStep(f.storage, runId, `step_${i}`);
    const desc = await collect((cursor) => f.storage.steps.list({ runId, pagination: { limit: 2, cursor } }));
    expect(desc.flat().map((s) => s.stepId)).toEqual(['step_4', 'step_3', 'step_2', 'step_1', 'step_0']);
    const asc = await f.storage.steps.list({ runId, pagination: { sortOrder: 'asc' }, resolveData: 'none' });
    expect(asc.data.map((s) => s.stepId)).toEqual(['step_0', 'step_1', 'step_2', 'step_3', 'step_4']);
    expect(asc.data[0].input).toBeUndefined();
    for (let i = 0; i < 3; i++) {
      await f.storage.events.create(runId, {
        eventType: 'hook_created',
        specVersion: sv,
        correlationId: `hook_${i}`,
        eventData: { token: `t${i}-${runId}` },
      });
    }
    const hooks = await collect((cursor) => f.storage.hooks.list({ runId, pagination: { limit: 2, cursor } }));
    expect(hooks.flat().map((h) => h.hookId)).toEqual(['hook_0', 'hook_1', 'hook_2']);
    const everywhere = await collect((cursor) => f.storage.hooks.list({ pagination: { limit: 50, cursor } }));
    expect(everywhere.flat().filter((h) => h.runId === runId)).toHaveLength(3);
  });
});
