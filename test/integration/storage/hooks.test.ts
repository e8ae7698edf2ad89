/**
 * State table, hook and wait rows: hook_created (token uniqueness, hook_conflict),
 * hook_received (resumeId dedupe), hook_disposed, wait_created, wait_completed.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { HookSchema, WaitSchema } from '@workflow/world';
import { ulid } from 'ulid';
import { describe, expect, it } from 'vitest';
import { bytes, eventTypes, fileStorageFixture, rejectsWith, startedRun, sv } from '../../helpers/storage.js';

const f = fileStorageFixture();

const hook = (hookId: string, token: string, extra: Record<string, unknown> = {}) => ({
  eventType: 'hook_created' as const,
  specVersion: sv,
  correlationId: hookId,
  eventData: { token, metadata: bytes('meta'), ...extra },
});
const received = (hookId: string, token?: string, payload = bytes('payload')) => ({
  eventType: 'hook_received' as const,
  specVersion: sv,
  correlationId: hookId,
  eventData: { ...(token ? { token } : {}), payload },
});
const disposed = (hookId: string, token?: string) => ({
  eventType: 'hook_disposed' as const,
  specVersion: sv,
  correlationId: hookId,
  eventData: token ? { token } : undefined,
});
const tok = () => `tok-${ulid()}`;

describe('hook_created', () => {
  it('creates the hook, readable by token, id and run', async () => {
    const runId = await startedRun(f.storage);
    const token = tok();
    const r = await f.storage.events.create(runId, hook('hook_1', token, { isWebhook: true }));
    expect(r.hook).toMatchObject({ runId, hookId: 'hook_1', token, isWebhook: true, isSystem: false });
    expect(r.hook?.metadata).toEqual(bytes('meta'));
    HookSchema.parse(r.hook);
    expect((await f.storage.hooks.getByToken(token)).hookId).toBe('hook_1');
    expect((await f.storage.hooks.get('hook_1')).token).toBeDefined();
    expect((await f.storage.hooks.list({ runId })).data.map((h) => h.token)).toEqual([token]);
  });

  it('the same hook again -> EntityConflictError; another run -> a committed hook_conflict, no throw', async () => {
    const a = await startedRun(f.storage);
    const b = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(a, hook('hook_1', token));
    await rejectsWith(f.storage.events.create(a, hook('hook_1', token)), 'EntityConflictError');
    const c = await f.storage.events.create(b, hook('hook_2', token));
    expect(c.hook).toBeUndefined();
    expect(c.event).toMatchObject({
      eventType: 'hook_conflict',
      correlationId: 'hook_2',
      eventData: { token, conflictingRunId: a },
    });
    expect(await eventTypes(f.storage, b)).toEqual(['run_created', 'run_started', 'hook_conflict']);
    expect((await f.storage.hooks.getByToken(token)).runId).toBe(a);
  });

  it('answers sinceCursor on the hook_conflict too', async () => {
    const a = await startedRun(f.storage);
    const b = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(a, hook('hook_1', token));
    const log = await f.storage.events.list({ runId: b });
    const c = await f.storage.events.create(b, hook('hook_2', token), { sinceCursor: log.cursor!, eventCount: 2 });
    expect(c.events?.map((e) => e.eventType)).toEqual(['hook_conflict']);
    expect(c.hasMore).toBe(false);
  });

  it('a terminal run -> EntityConflictError', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(f.storage.events.create(runId, hook('hook_1', tok())), 'EntityConflictError');
  });
});

describe('hook_received', () => {
  it('appends the payload; missing or disposed hook -> HookNotFoundError', async () => {
    const runId = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(runId, hook('hook_1', token));
    const r = await f.storage.events.create(runId, received('hook_1', token));
    expect(r.event).toMatchObject({ eventType: 'hook_received', correlationId: 'hook_1' });
    // The token may be omitted (v1 compat): the hook is found by its id.
    await f.storage.events.create(runId, received('hook_1'));
    await rejectsWith(f.storage.events.create(runId, received('hook_x', tok())), 'HookNotFoundError');
    await f.storage.events.create(runId, disposed('hook_1', token));
    await rejectsWith(f.storage.events.create(runId, received('hook_1', token)), 'HookNotFoundError');
  });

  it('a terminal run -> RunExpiredError (hook kept by retention)', async () => {
    const runId = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(
      runId,
      hook('hook_1', token, { tokenRetentionUntil: new Date(Date.now() + 3600_000) }),
    );
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(f.storage.events.create(runId, received('hook_1', token)), 'RunExpiredError');
  });

  it('hookRetention: a retained hook outlives its run until tokenRetentionUntil, then expires (TTL); others go at once', async () => {
    const runId = await startedRun(f.storage);
    const [kept, short, plain] = [tok(), tok(), tok()];
    const until = new Date(Date.now() + 3600_000);
    await f.storage.events.create(runId, hook('hook_k', kept, { tokenRetentionUntil: until }));
    const shortUntil = new Date(Date.now() + 1500);
    await f.storage.events.create(runId, hook('hook_s', short, { tokenRetentionUntil: shortUntil }));
    await f.storage.events.create(runId, hook('hook_p', plain));
    await f.storage.events.create(runId, {
      eventType: 'run_completed',
      specVersion: sv,
      eventData: { output: bytes('o') },
    });
    // Kept: readable by token and id, still holding its token, expiring with its retention.
    expect((await f.storage.hooks.getByToken(kept)).hookId).toBe('hook_k');
    expect((await f.storage.hooks.get('hook_k')).token).toBe(kept);
    const raw = await f.clients.ddb.send(
      new GetItemCommand({ TableName: f.config.tableName, Key: { PK: { S: `HOOK#${kept}` }, SK: { S: 'HOOK#meta' } } }),
    );
    expect(Number(raw.Item?.ttl?.N)).toBe(Math.ceil(until.getTime() / 1000));
    const other = await startedRun(f.storage);
    const conflict = await f.storage.events.create(other, hook('hook_o', kept));
    expect(conflict.event?.eventType).toBe('hook_conflict');
    // Not retained: released with the run.
    await rejectsWith(f.storage.hooks.getByToken(plain), 'HookNotFoundError');
    // Past its retention the hook reads as gone, before DynamoDB's sweep deletes it.
    // (The TTL is whole seconds, rounded up: the hook is gone by shortUntil + 1 s.)
    await new Promise((r) => setTimeout(r, Math.max(0, shortUntil.getTime() + 1050 - Date.now())));
    await rejectsWith(f.storage.hooks.getByToken(short), 'HookNotFoundError');
    expect((await f.storage.hooks.list({ runId })).data.map((h) => h.hookId)).toEqual(['hook_k']);
  });

  it('dedupes on (runId, resumeId): the committed event comes back, resumeId round-trips', async () => {
    const runId = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(runId, hook('hook_1', token));
    const p = { resumeId: 'req_1', resumePayloadDigest: 'd1' };
    const [a, b] = await Promise.all([
      f.storage.events.create(runId, received('hook_1', token), p),
      f.other().events.create(runId, received('hook_1', token), p),
    ]);
    expect(a.event?.eventId).toBe(b.event?.eventId);
    expect(a.event?.resumeId).toBe('req_1');
    const log = await f.storage.events.list({ runId });
    const got = log.data.filter((e) => e.eventType === 'hook_received');
    expect(got).toHaveLength(1);
    expect(got[0].resumeId).toBe('req_1');
    await rejectsWith(
      f.storage.events.create(runId, received('hook_1', token), { resumeId: 'req_1', resumePayloadDigest: 'd2' }),
      'EntityConflictError',
    );
    await f.storage.events.create(runId, hook('hook_2', `${token}-2`));
    await rejectsWith(f.storage.events.create(runId, received('hook_2', `${token}-2`), p), 'EntityConflictError');
    // A redelivery after disposal still converges on the committed event.
    await f.storage.events.create(runId, disposed('hook_1', token));
    expect((await f.storage.events.create(runId, received('hook_1', token), p)).event?.eventId).toBe(a.event?.eventId);
  });

  it('preloadEvents returns the whole log with the run and maxEvents', async () => {
    const runId = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(runId, hook('hook_1', token));
    const r = await f.storage.events.create(runId, received('hook_1', token), { resumeId: 'r1', preloadEvents: true });
    expect(r.events?.map((e) => e.eventType)).toEqual(['run_created', 'run_started', 'hook_created', 'hook_received']);
    expect(r.hasMore).toBe(false);
    expect(r.cursor).toBeTypeOf('string');
    expect(r.run?.startedAt).toBeInstanceOf(Date);
    expect(r.maxEvents).toBeGreaterThan(0);
  });
});

describe('hook_disposed', () => {
  it('deletes the hook and releases the token; twice -> EntityConflictError; never created -> HookNotFoundError', async () => {
    const a = await startedRun(f.storage);
    const token = tok();
    await f.storage.events.create(a, hook('hook_1', token));
    await f.storage.events.create(a, disposed('hook_1', token));
    await rejectsWith(f.storage.hooks.getByToken(token), 'HookNotFoundError');
    await rejectsWith(f.storage.events.create(a, disposed('hook_1', token)), 'EntityConflictError');
    await rejectsWith(f.storage.events.create(a, disposed('hook_never', tok())), 'HookNotFoundError');
    const b = await startedRun(f.storage);
    expect((await f.storage.events.create(b, hook('hook_2', token))).hook?.runId).toBe(b);
  });
});

describe('waits', () => {
  it('wait_created -> waiting; duplicate -> EntityConflictError; terminal run -> EntityConflictError', async () => {
    const runId = await startedRun(f.storage);
    const resumeAt = new Date(Date.now() + 5000);
    const w = { eventType: 'wait_created' as const, specVersion: sv, correlationId: 'wait_1', eventData: { resumeAt } };
    const r = await f.storage.events.create(runId, w);
    expect(r.wait).toMatchObject({ waitId: `${runId}-wait_1`, runId, status: 'waiting', resumeAt });
    WaitSchema.parse(r.wait);
    expect(r.event?.eventData).toEqual({ resumeAt });
    await rejectsWith(f.storage.events.create(runId, w), 'EntityConflictError');
    await f.storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    await rejectsWith(f.storage.events.create(runId, { ...w, correlationId: 'wait_2' }), 'EntityConflictError');
  });

  it('wait_completed -> completed; twice -> EntityConflictError; missing -> WorkflowWorldError', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, {
      eventType: 'wait_created',
      specVersion: sv,
      correlationId: 'wait_1',
      eventData: { resumeAt: new Date() },
    });
    const done = { eventType: 'wait_completed' as const, specVersion: sv, correlationId: 'wait_1' };
    const r = await f.storage.events.create(runId, done);
    expect(r.wait).toMatchObject({ status: 'completed' });
    expect(r.wait?.completedAt).toBeInstanceOf(Date);
    WaitSchema.parse(r.wait);
    await rejectsWith(f.storage.events.create(runId, done), 'EntityConflictError');
    await rejectsWith(f.storage.events.create(runId, { ...done, correlationId: 'wait_x' }), 'WorkflowWorldError');
  });
});
