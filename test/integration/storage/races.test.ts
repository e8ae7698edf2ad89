/**
 * Races with real parallel calls against DynamoDB Local. Writers use separate Storage
 * instances (no shared in-process slot hints), as separate processes would.
 */
import { eventIdToSlot, slotToEventId } from '@workflow/world';
import { ulid } from 'ulid';
import { describe, expect, it } from 'vitest';
import { bytes, createdStep, fileStorageFixture, runCreatedReq, startedRun, sv } from '../../helpers/storage.js';

const f = fileStorageFixture();

const settle = <T>(ps: Promise<T>[]) => Promise.allSettled(ps);
const names = (rs: PromiseSettledResult<unknown>[]) =>
  rs.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as Error).name)).sort();

async function assertDense(runId: string, n: number) {
  const log = await f.storage.events.list({ runId });
  expect(log.data.map((e) => e.eventId)).toEqual(Array.from({ length: n }, (_, i) => slotToEventId(i + 1)));
  return log.data;
}

describe('slot races', () => {
  it('20 writers from one stale snapshot: slots dense, no duplicates, each reports what it skipped', async () => {
    const runId = await startedRun(f.storage);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        f.other().events.create(
          runId,
          {
            eventType: 'wait_created',
            specVersion: sv,
            correlationId: `wait_${i}`,
            eventData: { resumeAt: new Date() },
          },
          { eventCount: 2 },
        ),
      ),
    );
    const log = await assertDense(runId, 22);
    expect(new Set(log.slice(2).map((e) => e.correlationId)).size).toBe(20);
    for (const r of results) {
      const slot = eventIdToSlot(r.event!.eventId)!;
      const expected = log.slice(2, slot - 1).map((e) => e.eventId);
      if (slot === 3) expect(r.events).toBeUndefined();
      else {
        expect(r.events?.map((e) => e.eventId)).toEqual(expected);
        expect(r.cursor).toBeNull();
        expect(r.hasMore).toBe(false);
      }
    }
    expect(results.map((r) => r.event!.eventId).sort()).toEqual(log.slice(2).map((e) => e.eventId));
  });

  it('20 writers without a snapshot (tail discovered per write): dense, no duplicates', async () => {
    const runId = await startedRun(f.storage);
    await Promise.all(Array.from({ length: 20 }, (_, i) => createdStep(f.other(), runId, `step_${i}`)));
    const log = await assertDense(runId, 22);
    expect(new Set(log.map((e) => e.correlationId ?? e.eventType)).size).toBe(22);
  });

  it('a refused create burns no slot', async () => {
    const runId = await startedRun(f.storage);
    await createdStep(f.storage, runId, 'step_a');
    await expect(createdStep(f.storage, runId, 'step_a')).rejects.toThrow();
    await createdStep(f.storage, runId, 'step_b');
    await assertDense(runId, 4);
  });
});

describe('exactly-once races', () => {
  it('two lazy step_started for one step: exactly one stepCreated, the other EntityConflictError', async () => {
    const runId = await startedRun(f.storage);
    const lazy = {
      eventType: 'step_started' as const,
      specVersion: sv,
      correlationId: 'step_x',
      eventData: { stepName: 's', input: bytes('i') },
    };
    const rs = await settle([f.other().events.create(runId, lazy), f.other().events.create(runId, lazy)]);
    expect(names(rs)).toEqual(['EntityConflictError', 'ok']);
    const won = rs.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ stepCreated?: true }>;
    expect(won.value.stepCreated).toBe(true);
    const log = await assertDense(runId, 4);
    expect(log.slice(2).map((e) => e.eventType)).toEqual(['step_created', 'step_started']);
    expect((await f.storage.steps.get(runId, 'step_x')).attempt).toBe(1);
  });

  it('two runs claiming one token: one hook, one hook_conflict', async () => {
    const [a, b] = await Promise.all([startedRun(f.storage), startedRun(f.storage)]);
    const token = `tok-${ulid()}`;
    const rs = await Promise.all(
      [a, b].map((runId, i) =>
        f.other().events.create(runId, {
          eventType: 'hook_created',
          specVersion: sv,
          correlationId: `hook_${i}`,
          eventData: { token },
        }),
      ),
    );
    expect(rs.map((r) => r.event?.eventType).sort()).toEqual(['hook_conflict', 'hook_created']);
    const winner = rs.find((r) => r.hook)!;
    const loser = rs.find((r) => !r.hook)!;
    expect(loser.event?.eventData).toEqual({ token, conflictingRunId: winner.hook!.runId });
    expect((await f.storage.hooks.getByToken(token)).runId).toBe(winner.hook!.runId);
  });

  it('the same create delivered twice at once: no-op or EntityConflictError, one event', async () => {
    const runId = await startedRun(f.storage);
    const step = {
      eventType: 'step_created' as const,
      specVersion: sv,
      correlationId: 'step_d',
      eventData: { stepName: 's', input: bytes('i') },
    };
    expect(names(await settle([f.other().events.create(runId, step), f.other().events.create(runId, step)]))).toEqual([
      'EntityConflictError',
      'ok',
    ]);
    const wait = {
      eventType: 'wait_created' as const,
      specVersion: sv,
      correlationId: 'wait_d',
      eventData: { resumeAt: new Date() },
    };
    expect(names(await settle([f.other().events.create(runId, wait), f.other().events.create(runId, wait)]))).toEqual([
      'EntityConflictError',
      'ok',
    ]);
    await f.storage.events.create(runId, { eventType: 'step_started', specVersion: sv, correlationId: 'step_d' });
    const done = {
      eventType: 'step_completed' as const,
      specVersion: sv,
      correlationId: 'step_d',
      eventData: { result: bytes('r') },
    };
    expect(names(await settle([f.other().events.create(runId, done), f.other().events.create(runId, done)]))).toEqual([
      'EntityConflictError',
      'ok',
    ]);
    const fin = { eventType: 'run_completed' as const, specVersion: sv, eventData: { output: bytes('o') } };
    expect(names(await settle([f.other().events.create(runId, fin), f.other().events.create(runId, fin)]))).toEqual([
      'EntityConflictError',
      'ok',
    ]);
    const log = await assertDense(runId, 7);
    expect(log.map((e) => e.eventType)).toEqual([
      'run_created',
      'run_started',
      'step_created',
      'wait_created',
      'step_started',
      'step_completed',
      'run_completed',
    ]);
  });

  it('run_started twice at once: both succeed, one event; a resilient start racing run_created writes one run_created', async () => {
    const { run } = await f.storage.events.create(null, runCreatedReq());
    const rs = await Promise.all(
      [0, 1].map(() => f.other().events.create(run.runId, { eventType: 'run_started', specVersion: sv })),
    );
    expect(rs.every((r) => r.run.status === 'running')).toBe(true);
    expect((await assertDense(run.runId, 2)).map((e) => e.eventType)).toEqual(['run_created', 'run_started']);

    const id = `wrun_${ulid()}`;
    const resilient = f.other().events.create(id, {
      eventType: 'run_started',
      specVersion: sv,
      eventData: { deploymentId: 'd', workflowName: 'w', input: bytes('i') },
    });
    const created = f.other().events.create(id, runCreatedReq());
    const out = await settle<unknown>([resilient, created]);
    expect(out[0].status).toBe('fulfilled');
    const types = (await assertDense(id, 2)).map((e) => e.eventType);
    expect(types).toEqual(['run_created', 'run_started']);
  });
});
