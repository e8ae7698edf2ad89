/**
 * State table, step rows: step_created, step_started (bare and lazy), step_completed,
 * step_failed, step_retrying, with their errors.
 */
import { TooEarlyError } from '@workflow/errors';
import { StepSchema, slotToEventId } from '@workflow/world';
import { ulid } from 'ulid';
import { describe, expect, it } from 'vitest';
import {
  bytes,
  createdStep,
  eventTypes,
  fileStorageFixture,
  rejectsWith,
  startedRun,
  sv,
} from '../../helpers/storage.js';

const f = fileStorageFixture();

const start = (stepId: string, eventData?: Record<string, unknown>) => ({
  eventType: 'step_started' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData,
});
const lazy = (stepId: string, input = bytes('lazy-in')) =>
  start(stepId, { stepName: 'step//lazy', input, ownerMessageId: 'msg_1' });
const complete = (stepId: string, result = bytes('res')) => ({
  eventType: 'step_completed' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { result },
});
const fail = (stepId: string) => ({
  eventType: 'step_failed' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { error: bytes('err') },
});
const retrying = (stepId: string, retryAfter?: Date) => ({
  eventType: 'step_retrying' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { error: bytes('retry-err'), retryAfter },
});

describe('step_created', () => {
  it('creates a pending step with attempt 0', async () => {
    const runId = await startedRun(f.storage);
    const r = await createdStep(f.storage, runId, 'step_a');
    expect(r.step).toMatchObject({ runId, stepId: 'step_a', stepName: 'step//a', status: 'pending', attempt: 0 });
    expect(r.step?.input).toEqual(bytes('step-in'));
    StepSchema.parse(r.step);
    expect((await f.storage.steps.get(runId, 'step_a')).input).toEqual(bytes('step-in'));
  });

  it('duplicate -> EntityConflictError; terminal run -> EntityConflictError; missing run -> WorkflowRunNotFoundError', async () => {
    const runId = await startedRun(f.storage);
    await createdStep(f.storage, runId, 'step_a');
    await rejectsWith(createdStep(f.storage, runId, 'step_a'), 'EntityConflictError');
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(createdStep(f.storage, runId, 'step_b'), 'EntityConflictError');
    await rejectsWith(createdStep(f.storage, `wrun_${ulid()}`, 'step_a'), 'WorkflowRunNotFoundError');
    expect(await eventTypes(f.storage, runId)).toEqual(['run_created', 'run_started', 'step_created', 'run_cancelled']);
  });
});

describe('step_started (bare)', () => {
  it('running, attempt += 1, startedAt kept from the first start', async () => {
    const runId = await startedRun(f.storage);
    await createdStep(f.storage, runId, 'step_a');
    const s1 = await f.storage.events.create(runId, start('step_a', { stepName: 'step//a' }));
    expect(s1.step).toMatchObject({ status: 'running', attempt: 1 });
    expect(s1.step.startedAt).toBeInstanceOf(Date);
    expect(s1.step.input).toEqual(bytes('step-in'));
    const s2 = await f.storage.events.create(runId, start('step_a'));
    expect(s2.step.attempt).toBe(2);
    expect(s2.step.startedAt).toEqual(s1.step.startedAt);
    expect(s2.stepCreated).toBeUndefined();
  });

  it('missing step -> WorkflowWorldError; terminal step -> EntityConflictError; terminal run -> RunExpiredError', async () => {
    const runId = await startedRun(f.storage);
    await rejectsWith(f.storage.events.create(runId, start('nope')), 'WorkflowWorldError');
    await createdStep(f.storage, runId, 'step_a');
    await f.storage.events.create(runId, start('step_a'));
    await f.storage.events.create(runId, complete('step_a'));
    await rejectsWith(f.storage.events.create(runId, start('step_a')), 'EntityConflictError');
    await createdStep(f.storage, runId, 'step_b');
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(f.storage.events.create(runId, start('step_b')), 'RunExpiredError');
  });

  it('before retryAfter -> TooEarlyError with retryAfter in seconds; clears retryAfter once started', async () => {
    const runId = await startedRun(f.storage);
    await createdStep(f.storage, runId, 'step_a');
    await f.storage.events.create(runId, start('step_a'));
    const r = await f.storage.events.create(runId, retrying('step_a', new Date(Date.now() + 30_000)));
    expect(r.step).toMatchObject({ status: 'pending' });
    expect(r.step?.error).toEqual(bytes('retry-err'));
    const e = await rejectsWith(f.storage.events.create(runId, start('step_a')), 'TooEarlyError');
    expect(TooEarlyError.is(e)).toBe(true);
    expect((e as TooEarlyError).retryAfter).toBeGreaterThanOrEqual(29);
    expect((e as TooEarlyError).retryAfter).toBeLessThanOrEqual(30);
    await f.storage.events.create(runId, retrying('step_a', new Date(Date.now() - 1000)));
    const s = await f.storage.events.create(runId, start('step_a'));
    expect(s.step).toMatchObject({ status: 'running', attempt: 2 });
    expect(s.step.retryAfter).toBeUndefined();
  });
});

describe('step_started (lazy)', () => {
  it('creates the step with a synthetic step_created at the lower slot; stepCreated: true', async () => {
    const runId = await startedRun(f.storage);
    const r = await f.storage.events.create(runId, lazy('step_l'));
    expect(r.stepCreated).toBe(true);
    expect(r.step).toMatchObject({ status: 'running', attempt: 1, stepName: 'step//lazy' });
    expect(r.step.input).toEqual(bytes('lazy-in'));
    expect(r.event?.eventId).toBe(slotToEventId(4));
    const log = await f.storage.events.list({ runId });
    expect(log.data.slice(2).map((e) => [e.eventId, e.eventType])).toEqual([
      [slotToEventId(3), 'step_created'],
      [slotToEventId(4), 'step_started'],
    ]);
    expect(log.data[2].eventData).toEqual({ stepName: 'step//lazy', input: bytes('lazy-in') });
    // The input rides step_created only; the start keeps stepName and the owner stamp.
    expect(log.data[3].eventData).toEqual({ stepName: 'step//lazy', ownerMessageId: 'msg_1' });
  });

  it('an existing step -> EntityConflictError (the loser must not run); terminal run -> EntityConflictError', async () => {
    const runId = await startedRun(f.storage);
    await createdStep(f.storage, runId, 'step_a');
    await rejectsWith(f.storage.events.create(runId, lazy('step_a')), 'EntityConflictError');
    expect((await f.storage.steps.get(runId, 'step_a')).attempt).toBe(0);
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(f.storage.events.create(runId, lazy('step_z')), 'EntityConflictError');
  });
});

describe('step_completed / step_failed / step_retrying', () => {
  it('complete stores output + completedAt; a second terminal event is EntityConflictError', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, lazy('step_a'));
    const r = await f.storage.events.create(runId, complete('step_a', bytes('\0out\0')));
    expect(r.step).toMatchObject({ status: 'completed' });
    expect(r.step?.output).toEqual(bytes('\0out\0'));
    expect(r.step?.completedAt).toBeInstanceOf(Date);
    StepSchema.parse(r.step);
    await rejectsWith(f.storage.events.create(runId, complete('step_a')), 'EntityConflictError');
    await rejectsWith(f.storage.events.create(runId, fail('step_a')), 'EntityConflictError');
    await rejectsWith(f.storage.events.create(runId, retrying('step_a')), 'EntityConflictError');
    await rejectsWith(f.storage.events.create(runId, complete('step_missing')), 'WorkflowWorldError');
  });

  it('fail stores the error', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, lazy('step_a'));
    const r = await f.storage.events.create(runId, fail('step_a'));
    expect(r.step).toMatchObject({ status: 'failed' });
    expect(r.step?.error).toEqual(bytes('err'));
  });

  it('a running step may finish after its run ended; a pending one may not (RunExpiredError)', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, lazy('step_run'));
    await createdStep(f.storage, runId, 'step_pend');
    await f.storage.events.create(runId, {
      eventType: 'run_completed',
      specVersion: sv,
      eventData: { output: bytes('o') },
    });
    const r = await f.storage.events.create(runId, complete('step_run'));
    expect(r.step?.status).toBe('completed');
    await rejectsWith(f.storage.events.create(runId, complete('step_pend')), 'RunExpiredError');
  });
});
