/**
 * State table, run rows: run_created, run_started (incl. resilient start), terminal run events,
 * attr_set. Each row with the exact error class the runtime checks for.
 */
import { RunExpiredError } from '@workflow/errors';
import {
  AttributeValidationError,
  EventSchema,
  getMaxEventsPerRun,
  slotToEventId,
  WorkflowRunSchema,
} from '@workflow/world';
import { ulid } from 'ulid';
import { describe, expect, it } from 'vitest';
import {
  bytes,
  eventTypes,
  fileStorageFixture,
  rejectsWith,
  runCreatedReq,
  startedRun,
  sv,
} from '../../helpers/storage.js';

const f = fileStorageFixture();

describe('run_created', () => {
  it('creates a pending run and its event at slot 1; a server-minted wrun_ id', async () => {
    const r = await f.storage.events.create(
      null,
      runCreatedReq({ attributes: { team: 'a' }, executionContext: { region: 'x', n: 1 } }),
    );
    expect(r.run.runId).toMatch(/^wrun_[0-9A-Z]{26}$/);
    expect(r.run?.status).toBe('pending');
    expect(r.run.attributes).toEqual({ team: 'a' });
    expect(r.run.specVersion).toBe(sv);
    expect(r.run.executionContext).toEqual({ region: 'x', n: 1 });
    expect(r.event?.eventId).toBe(slotToEventId(1));
    expect(r.maxEvents).toBe(getMaxEventsPerRun());
    WorkflowRunSchema.parse(r.run);
    EventSchema.parse(r.event);
    const got = await f.storage.runs.get(r.run.runId);
    expect(got.input).toEqual(bytes('input\0bytes'));
    expect(got.createdAt).toBeInstanceOf(Date);
  });

  it('accepts a client run id once; the second create is EntityConflictError', async () => {
    const id = `wrun_${ulid()}`;
    const r = await f.storage.events.create(id, runCreatedReq());
    expect(r.run.runId).toBe(id);
    await rejectsWith(f.storage.events.create(id, runCreatedReq()), 'EntityConflictError');
    expect(await eventTypes(f.storage, id)).toEqual(['run_created']);
  });

  it('rejects client run ids with a far timestamp or no ULID (WorkflowWorldError)', async () => {
    const old = `wrun_${ulid(Date.now() - 3 * 24 * 3600_000)}`;
    await rejectsWith(f.storage.events.create(old, runCreatedReq()), 'WorkflowWorldError');
    await rejectsWith(f.storage.events.create('wrun_not-a-ulid', runCreatedReq()), 'WorkflowWorldError');
    await rejectsWith(f.storage.runs.get(old), 'WorkflowRunNotFoundError');
  });

  it('validates seed attributes with AttributeValidationError (the @workflow/world class)', async () => {
    const e1 = await f.storage.events.create(null, runCreatedReq({ attributes: { $rootRunId: 'x' } })).catch((e) => e);
    expect(e1).toBeInstanceOf(AttributeValidationError);
    const ok = await f.storage.events.create(
      null,
      runCreatedReq({ attributes: { $rootRunId: 'x' }, allowReservedAttributes: true }),
    );
    expect(ok.run.attributes).toEqual({ $rootRunId: 'x' });
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    expect(await f.storage.events.create(null, runCreatedReq({ attributes: many })).catch((e) => e)).toBeInstanceOf(
      AttributeValidationError,
    );
  });
});

describe('run_started', () => {
  it('pending -> running with startedAt, preloading the log and maxEvents', async () => {
    const { run } = await f.storage.events.create(null, runCreatedReq());
    const r = await f.storage.events.create(run.runId, { eventType: 'run_started', specVersion: sv });
    expect(r.run?.status).toBe('running');
    expect(r.run.startedAt).toBeInstanceOf(Date);
    expect(r.event?.eventId).toBe(slotToEventId(2));
    expect(r.events?.map((e) => e.eventType)).toEqual(['run_created', 'run_started']);
    expect(r.events?.[0].eventData).toMatchObject({ input: bytes('input\0bytes') });
    expect(r.hasMore).toBe(false);
    expect(r.cursor).toBeTypeOf('string');
    expect(r.maxEvents).toBe(getMaxEventsPerRun());
    // The preload is exactly what events.list returns.
    const listed = await f.storage.events.list({ runId: run.runId });
    expect(r.events).toEqual(listed.data);
  });

  it('is idempotent on a running run: no new event, same run, preload or skipPreload', async () => {
    const runId = await startedRun(f.storage);
    const again = await f.storage.events.create(runId, { eventType: 'run_started', specVersion: sv });
    expect(again.event).toBeUndefined();
    expect(again.run?.status).toBe('running');
    expect(again.events?.map((e) => e.eventType)).toEqual(['run_created', 'run_started']);
    expect(again.maxEvents).toBe(getMaxEventsPerRun());
    const skip = await f.storage.events.create(
      runId,
      { eventType: 'run_started', specVersion: sv },
      { skipPreload: true },
    );
    expect(skip.events).toBeUndefined();
    expect(skip.run.startedAt).toEqual(again.run.startedAt);
    expect(await eventTypes(f.storage, runId)).toEqual(['run_created', 'run_started']);
  });

  it('is RunExpiredError on a terminal run', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    const e = await rejectsWith(
      f.storage.events.create(runId, { eventType: 'run_started', specVersion: sv }),
      'RunExpiredError',
    );
    expect(RunExpiredError.is(e)).toBe(true);
  });

  it('resilient start: a missing run with creation data is created with a synthetic run_created below', async () => {
    const runId = `wrun_${ulid()}`;
    const r = await f.storage.events.create(runId, {
      eventType: 'run_started',
      specVersion: sv,
      eventData: { deploymentId: 'dpl_x', workflowName: 'wf', input: bytes('late'), attributes: { a: '1' } },
    });
    expect(r.run).toMatchObject({
      runId,
      status: 'running',
      deploymentId: 'dpl_x',
      workflowName: 'wf',
      attributes: { a: '1' },
    });
    expect(r.run.input).toEqual(bytes('late'));
    expect(r.events?.map((e) => [e.eventId, e.eventType])).toEqual([
      [slotToEventId(1), 'run_created'],
      [slotToEventId(2), 'run_started'],
    ]);
    const listed = await f.storage.events.list({ runId });
    expect(listed.data[0].eventData).toMatchObject({ deploymentId: 'dpl_x', input: bytes('late') });
    expect((listed.data[1] as { eventData?: unknown }).eventData).toBeUndefined();
  });

  it('a missing run without creation data is WorkflowRunNotFoundError', async () => {
    await rejectsWith(
      f.storage.events.create(`wrun_${ulid()}`, { eventType: 'run_started', specVersion: sv }),
      'WorkflowRunNotFoundError',
    );
  });
});

describe('terminal run events', () => {
  it('run_completed stores the output, completedAt, and releases hooks and waits', async () => {
    const runId = await startedRun(f.storage);
    const token = `tok-${ulid()}`;
    await f.storage.events.create(runId, {
      eventType: 'hook_created',
      specVersion: sv,
      correlationId: 'hook_1',
      eventData: { token },
    });
    await f.storage.events.create(runId, {
      eventType: 'wait_created',
      specVersion: sv,
      correlationId: 'wait_1',
      eventData: { resumeAt: new Date(Date.now() + 60_000) },
    });
    const r = await f.storage.events.create(runId, {
      eventType: 'run_completed',
      specVersion: sv,
      eventData: { output: bytes('done\0') },
    });
    expect(r.run?.status).toBe('completed');
    expect(r.run?.output).toEqual(bytes('done\0'));
    expect(r.run?.completedAt).toBeInstanceOf(Date);
    WorkflowRunSchema.parse(r.run);
    // The token is free again and the wait is gone.
    await rejectsWith(f.storage.hooks.getByToken(token), 'HookNotFoundError');
    const other = await startedRun(f.storage);
    const claim = await f.storage.events.create(other, {
      eventType: 'hook_created',
      specVersion: sv,
      correlationId: 'hook_9',
      eventData: { token },
    });
    expect(claim.event?.eventType).toBe('hook_created');
    await rejectsWith(
      f.storage.events.create(runId, { eventType: 'wait_completed', specVersion: sv, correlationId: 'wait_1' }),
      'WorkflowWorldError',
    );
  });

  it('run_failed stores error and errorCode; on a missing run it is WorkflowRunNotFoundError', async () => {
    const runId = await startedRun(f.storage);
    const r = await f.storage.events.create(runId, {
      eventType: 'run_failed',
      specVersion: sv,
      eventData: { error: bytes('boom'), errorCode: 'USER_ERROR' },
    });
    expect(r.run).toMatchObject({ status: 'failed', errorCode: 'USER_ERROR' });
    expect(r.run?.error).toEqual(bytes('boom'));
    expect(r.run?.output).toBeUndefined();
    await rejectsWith(
      f.storage.events.create(`wrun_${ulid()}`, {
        eventType: 'run_failed',
        specVersion: sv,
        eventData: { error: bytes('x') },
      }),
      'WorkflowRunNotFoundError',
    );
  });

  it('a terminal run refuses another terminal event (EntityConflictError); cancel on cancelled is idempotent', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, {
      eventType: 'run_completed',
      specVersion: sv,
      eventData: { output: bytes('o') },
    });
    await rejectsWith(
      f.storage.events.create(runId, { eventType: 'run_failed', specVersion: sv, eventData: { error: bytes('e') } }),
      'EntityConflictError',
    );
    await rejectsWith(
      f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv }),
      'EntityConflictError',
    );

    const c = await startedRun(f.storage);
    await f.storage.events.create(c, {
      eventType: 'run_cancelled',
      specVersion: sv,
      eventData: { cancelReason: 'user' },
    });
    const again = await f.storage.events.create(c, { eventType: 'run_cancelled', specVersion: sv });
    expect(again.run?.status).toBe('cancelled');
    expect(again.event?.eventType).toBe('run_cancelled');
    expect(await eventTypes(f.storage, c)).toEqual(['run_created', 'run_started', 'run_cancelled', 'run_cancelled']);
  });
});

describe('attr_set', () => {
  const attr = (changes: { key: string; value: string | null }[], extra: Record<string, unknown> = {}) => ({
    eventType: 'attr_set' as const,
    specVersion: sv,
    eventData: { changes, writer: { type: 'step' as const, stepId: 's', attempt: 1 }, ...extra },
  });

  it('merges (null deletes) and returns the run', async () => {
    const runId = await startedRun(f.storage, { attributes: { a: '1', b: '2' } });
    const r = await f.storage.events.create(
      runId,
      attr([
        { key: 'b', value: null },
        { key: 'c', value: '3' },
      ]),
    );
    expect(r.run?.attributes).toEqual({ a: '1', c: '3' });
    expect((await f.storage.runs.get(runId)).attributes).toEqual({ a: '1', c: '3' });
  });

  it('enforces the limits with AttributeValidationError: 64 keys post-merge, key/value size, $ prefix, 8 KB', async () => {
    const runId = await startedRun(f.storage, {
      attributes: Object.fromEntries(Array.from({ length: 63 }, (_, i) => [`k${i}`, 'v'])),
    });
    await f.storage.events.create(runId, attr([{ key: 'k63', value: 'v' }]));
    const isAve = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e) => (e instanceof AttributeValidationError ? 'AVE' : e.name),
      );
    expect(await isAve(f.storage.events.create(runId, attr([{ key: 'k64', value: 'v' }])))).toBe('AVE');
    expect(await isAve(f.storage.events.create(runId, attr([{ key: 'k1', value: 'x'.repeat(257) }])))).toBe('AVE');
    expect(await isAve(f.storage.events.create(runId, attr([{ key: 'y'.repeat(257), value: 'v' }])))).toBe('AVE');
    expect(await isAve(f.storage.events.create(runId, attr([{ key: '$x', value: 'v' }])))).toBe('AVE');
    const big = Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: 'z'.repeat(250) }));
    expect(await isAve(f.storage.events.create(runId, attr(big)))).toBe('AVE');
    // Replacing an existing key at the limit is fine; reserved keys with the flag too.
    expect(await isAve(f.storage.events.create(runId, attr([{ key: 'k1', value: 'w' }])))).toBe('ok');
    expect(
      await isAve(
        f.storage.events.create(
          runId,
          attr(
            [
              { key: 'k2', value: null },
              { key: '$retention', value: '0' },
            ],
            { allowReservedAttributes: true },
          ),
        ),
      ),
    ).toBe('ok');
    expect(Object.keys((await f.storage.runs.get(runId)).attributes)).toHaveLength(64);
  });

  it('dedupes a workflow writer on (runId, correlationId); step writers are not deduped', async () => {
    const runId = await startedRun(f.storage);
    const wf = {
      eventType: 'attr_set' as const,
      specVersion: sv,
      correlationId: 'attr_1',
      eventData: { changes: [{ key: 'a', value: '1' }], writer: { type: 'workflow' as const } },
    };
    await f.storage.events.create(runId, wf);
    await rejectsWith(f.storage.events.create(runId, wf), 'EntityConflictError');
    await f.storage.events.create(runId, attr([{ key: 'a', value: '2' }]));
    await f.storage.events.create(runId, attr([{ key: 'a', value: '3' }]));
    expect(await eventTypes(f.storage, runId)).toEqual([
      'run_created',
      'run_started',
      'attr_set',
      'attr_set',
      'attr_set',
    ]);
  });

  it('missing run -> WorkflowRunNotFoundError, terminal run -> EntityConflictError', async () => {
    await rejectsWith(
      f.storage.events.create(`wrun_${ulid()}`, attr([{ key: 'a', value: '1' }])),
      'WorkflowRunNotFoundError',
    );
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(f.storage.events.create(runId, attr([{ key: 'a', value: '1' }])), 'EntityConflictError');
  });
});
