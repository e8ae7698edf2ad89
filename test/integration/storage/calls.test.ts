/**
 * AWS calls per `events.create`, by event type, counted by SDK middleware on dedicated clients
 * (counting only; every call is real). The counts reached are pinned, so a regression fails.
 *
 * "warm" = this process already knows the run's tail slot (it wrote or read it), the normal
 * case for the step executor after the replay that scheduled the step; "cold" = a fresh
 * process with no snapshot, which pays one keys-only Query to find the tail.
 */
import type { Storage } from '@workflow/world';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import { createStorage } from '../../../src/storage/index.js';
import { bytes, type StorageFixture, storageFixture, sv } from '../../helpers/storage.js';

let f: StorageFixture;
const calls: string[] = [];
let counted: ReturnType<typeof createClients>;
/** Armed by a test: runs `hookAction` (on other clients) just before the first call it matches. */
let beforeSend: ((command: string) => boolean) | undefined;
let hookAction: (() => Promise<unknown>) | undefined;

function countingStorage(): Storage {
  return createStorage(createContext(f.config, counted));
}

beforeAll(async () => {
  f = await storageFixture();
  counted = createClients(f.config);
  for (const c of [counted.ddb, await counted.s3()] as { middlewareStack: { add: (...a: any[]) => void } }[]) {
    c.middlewareStack.add(
      (next: any, context: any) => async (args: any) => {
        const name = context.commandName.replace(/Command$/, '');
        calls.push(name);
        const hook = beforeSend;
        if (hook?.(name)) beforeSend = undefined;
        if (hook && beforeSend === undefined) await hookAction?.();
        return next(args);
      },
      { step: 'initialize', name: 'countCalls' },
    );
  }
});
afterAll(() => {
  destroyClients(counted);
  f?.close();
});

async function count(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  calls.length = 0;
  await fn();
  const out: Record<string, number> = {};
  for (const c of calls) out[c] = (out[c] ?? 0) + 1;
  return out;
}

/** A run created on `s` (deployment 'd', workflow 'w', input 'i'); its id. */
async function newRun(s: Storage): Promise<string> {
  const r = await s.events.create(null, {
    eventType: 'run_created',
    specVersion: sv,
    eventData: { deploymentId: 'd', workflowName: 'w', input: bytes('i') },
  });
  return r.run.runId;
}

/** {@link newRun}, then run_started on the same Storage. */
async function runningRun(s: Storage): Promise<string> {
  const runId = await newRun(s);
  await s.events.create(runId, { eventType: 'run_started', specVersion: sv });
  return runId;
}

it('pins the calls of every event type on the main path', async () => {
  const s = countingStorage();
  let runId = '';
  let cursor = '';
  const got: Record<string, Record<string, number>> = {};

  got.run_created = await count(async () => {
    runId = await newRun(s);
  });
  got.run_started = await count(async () => {
    cursor = (await s.events.create(runId, { eventType: 'run_started', specVersion: sv })).cursor!;
  });
  got['step_started (lazy, warm)'] = await count(async () => {
    const r = await s.events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { stepName: 's', input: bytes('in') },
    });
    expect(r.stepCreated).toBe(true);
  });
  got['step_completed (sinceCursor)'] = await count(async () => {
    const r = await s.events.create(
      runId,
      { eventType: 'step_completed', specVersion: sv, correlationId: 'step_1', eventData: { result: bytes('out') } },
      { sinceCursor: cursor },
    );
    // The delta replaces the runtime's events.list: the lazy pair plus the completion.
    expect(r.events?.map((e) => e.eventType)).toEqual(['step_created', 'step_started', 'step_completed']);
    expect(r.hasMore).toBe(false);
    cursor = r.cursor!;
  });
  got['step_created (eventCount)'] = await count(() =>
    s.events.create(
      runId,
      {
        eventType: 'step_created',
        specVersion: sv,
        correlationId: 'step_2',
        eventData: { stepName: 's', input: bytes('in') },
      },
      { eventCount: 5 },
    ),
  );
  got['step_started (bare, warm)'] = await count(() =>
    s.events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_2',
      eventData: { stepName: 's' },
    }),
  );
  got.step_retrying = await count(() =>
    s.events.create(runId, {
      eventType: 'step_retrying',
      specVersion: sv,
      correlationId: 'step_2',
      eventData: { error: bytes('e') },
    }),
  );
  await s.events.create(runId, { eventType: 'step_started', specVersion: sv, correlationId: 'step_2' });
  got.step_failed = await count(() =>
    s.events.create(runId, {
      eventType: 'step_failed',
      specVersion: sv,
      correlationId: 'step_2',
      eventData: { error: bytes('e') },
    }),
  );
  got['hook_created (eventCount + sinceCursor)'] = await count(() =>
    s.events.create(
      runId,
      { eventType: 'hook_created', specVersion: sv, correlationId: 'hook_1', eventData: { token: `t-${runId}` } },
      { eventCount: 10, sinceCursor: 'evc:10' },
    ),
  );
  got['hook_received (raw, resumeId)'] = await count(() =>
    s.events.create(
      runId,
      {
        eventType: 'hook_received',
        specVersion: sv,
        correlationId: 'hook_1',
        eventData: { token: `t-${runId}`, payload: bytes('p') },
      },
      { resumeId: 'r1' },
    ),
  );
  got.hook_disposed = await count(() =>
    s.events.create(runId, {
      eventType: 'hook_disposed',
      specVersion: sv,
      correlationId: 'hook_1',
      eventData: { token: `t-${runId}` },
    }),
  );
  got.wait_created = await count(() =>
    s.events.create(runId, {
      eventType: 'wait_created',
      specVersion: sv,
      correlationId: 'wait_1',
      eventData: { resumeAt: new Date() },
    }),
  );
  got.wait_completed = await count(() =>
    s.events.create(runId, { eventType: 'wait_completed', specVersion: sv, correlationId: 'wait_1' }),
  );
  got.attr_set = await count(() =>
    s.events.create(runId, {
      eventType: 'attr_set',
      specVersion: sv,
      eventData: { changes: [{ key: 'a', value: '1' }], writer: { type: 'step', stepId: 's', attempt: 1 } },
    }),
  );
  await s.events.create(runId, {
    eventType: 'hook_created',
    specVersion: sv,
    correlationId: 'hook_2',
    eventData: { token: `t2-${runId}` },
  });
  got['run_completed (1 live hook)'] = await count(() =>
    s.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } }),
  );

  const T = 'TransactWriteItems';
  expect(got).toEqual({
    run_created: { [T]: 1 },
    // One Query returns the log and the run (preload + state), then the write.
    run_started: { Query: 1, [T]: 1 },
    'step_started (lazy, warm)': { [T]: 1 },
    // No read: the step item is the one this process committed in the lazy start (the write is
    // conditioned on its version), and the delta (the lazy pair plus the completion) comes from
    // the events this process just committed. The floor: 2 writes per inline step.
    'step_completed (sinceCursor)': { [T]: 1 },
    'step_created (eventCount)': { [T]: 1 },
    // Warm: this process created / last moved the step, so its item is known.
    'step_started (bare, warm)': { [T]: 1 },
    step_retrying: { [T]: 1 },
    step_failed: { [T]: 1 },
    'hook_created (eventCount + sinceCursor)': { [T]: 1 },
    'hook_received (raw, resumeId)': { [T]: 1 },
    hook_disposed: { [T]: 1 },
    wait_created: { [T]: 1 },
    wait_completed: { GetItem: 1, [T]: 1 },
    // Run + tail in one Query (attributes are merged against what the write is conditioned on).
    attr_set: { Query: 1, [T]: 1 },
    // Read + write, then the release (the run holds a hook): hooks (GSI) and waiting waits, one
    // delete per live hook.
    'run_completed (1 live hook)': { Query: 3, [T]: 1, DeleteItem: 1 },
  });
});

it('pins the cold (no snapshot) and large-value paths', async () => {
  const warm = countingStorage();
  const runId = await runningRun(warm);
  const got: Record<string, Record<string, number>> = {};
  got['step_started (lazy, cold)'] = await count(() =>
    countingStorage().events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { stepName: 's', input: bytes('in') },
    }),
  );
  got['step_completed (cold, no cursor)'] = await count(() =>
    countingStorage().events.create(runId, {
      eventType: 'step_completed',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { result: bytes('r') },
    }),
  );
  got['step_created (stale eventCount: bump + report)'] = await count(() =>
    countingStorage().events.create(
      runId,
      {
        eventType: 'step_created',
        specVersion: sv,
        correlationId: 'step_2',
        eventData: { stepName: 's', input: bytes('in') },
      },
      { eventCount: 2 },
    ),
  );
  const big = new Uint8Array(400_000).fill(7);
  const fresh = await newRun(warm);
  got['step_created (400 KB input)'] = await count(() =>
    warm.events.create(fresh, {
      eventType: 'step_created',
      specVersion: sv,
      correlationId: 'step_3',
      eventData: { stepName: 's', input: big },
    }),
  );
  got['run_completed (400 KB output, no hooks)'] = await count(() =>
    warm.events.create(fresh, { eventType: 'run_completed', specVersion: sv, eventData: { output: big } }),
  );
  const T = 'TransactWriteItems';
  expect(got).toEqual({
    'step_started (lazy, cold)': { Query: 1, [T]: 1 },
    // Tail read overlapped with the step read; still one write.
    'step_completed (cold, no cursor)': { GetItem: 1, Query: 1, [T]: 1 },
    // Lost the slot: one failed attempt, one read of what was skipped (the report), the commit.
    'step_created (stale eventCount: bump + report)': { [T]: 2, Query: 1 },
    // The input goes to S3 once; the step and the event share the pointer. The run guard is read
    // before the upload, so a refused create leaves no object behind.
    'step_created (400 KB input)': { GetItem: 1, PutObject: 1, [T]: 1 },
    // A run that never held a hook or wait skips the release queries, and this process created
    // the run, so its view is remembered: the upload and the write.
    'run_completed (400 KB output, no hooks)': { PutObject: 1, [T]: 1 },
  });
});

it('a hook created between the terminal read and its commit is still released (the transition re-reads)', async () => {
  const s = countingStorage();
  const runId = await runningRun(s);
  const token = `race-${runId}`;
  // Another process creates a hook right after run_completed read the run (holds = false).
  beforeSend = (name) => name === 'TransactWriteItems';
  hookAction = () =>
    f.storage.events.create(runId, {
      eventType: 'hook_created',
      specVersion: sv,
      correlationId: 'h',
      eventData: { token },
    });
  const got = await count(() =>
    s.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } }),
  );
  expect(beforeSend).toBeUndefined();
  // The first transition fails its `holds` condition; the re-read sees the hook and releases it.
  expect(got.TransactWriteItems).toBe(2);
  expect(got.DeleteItem).toBe(1);
  await expect(f.storage.hooks.getByToken(token)).rejects.toMatchObject({ name: 'HookNotFoundError' });
  expect((await f.storage.runs.get(runId)).status).toBe('completed');
});

it('a run with a wait releases it at its end; without one, no release query', async () => {
  const s = countingStorage();
  const runId = await runningRun(s);
  await s.events.create(runId, {
    eventType: 'wait_created',
    specVersion: sv,
    correlationId: 'w1',
    eventData: { resumeAt: new Date(Date.now() + 3_600_000) },
  });
  const got = await count(() =>
    s.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } }),
  );
  // Warm (this process started the run): no read of the run; the release queries; the wait's delete.
  expect(got).toEqual({ Query: 2, TransactWriteItems: 1, BatchWriteItem: 1 });
  expect((await f.storage.events.list({ runId })).data.map((e) => e.eventType)).toContain('run_completed');
});

it('a warm run end reads nothing, and a remembered run view another process changed costs a re-read, never a wrong write', async () => {
  const s = countingStorage();
  const start = () => runningRun(s);
  const complete = (id: string) =>
    count(() =>
      s.events.create(id, { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } }),
    );
  const plain = await start();
  expect(await complete(plain)).toEqual({ TransactWriteItems: 1 });
  // Another process sets `$retention: '0'` after this one remembered the run: the end must see it.
  const changed = await start();
  await f.storage.events.create(changed, {
    eventType: 'attr_set',
    specVersion: sv,
    eventData: { changes: [{ key: '$retention', value: '0' }], allowReservedAttributes: true },
  } as never);
  const got = await complete(changed);
  expect(got.TransactWriteItems).toBe(2); // the remembered attrVer failed; re-read, then the write
  const run = await f.storage.runs.get(changed);
  expect(run.status).toBe('completed');
  expect(run.output).toBeUndefined(); // purged: the re-read saw the new attributes
  expect(run.expiredAt).toBeInstanceOf(Date);
});

it('a warm run_started without preload reads nothing; a remembered run another process changed costs a re-read', async () => {
  const s = countingStorage();
  const create = () => newRun(s);
  const startIt = (id: string) =>
    count(async () => {
      const r = await s.events.create(id, { eventType: 'run_started', specVersion: sv }, {
        skipPreload: true,
      } as never);
      expect(r.run?.status).toBe('running');
      expect(Buffer.from(r.run!.input as Uint8Array).toString()).toBe('i');
    });
  expect(await startIt(await create())).toEqual({ TransactWriteItems: 1 });
  // Another process started it first: the conditioned start fails, the re-read answers idempotently.
  const raced = await create();
  await f.storage.events.create(raced, { eventType: 'run_started', specVersion: sv });
  expect(await startIt(raced)).toEqual({ TransactWriteItems: 1, Query: 1 });
  expect(
    (await f.storage.events.list({ runId: raced })).data.filter((e) => e.eventType === 'run_started'),
  ).toHaveLength(1);
  // Another process changed the attributes: the start re-reads and returns them.
  const changed = await create();
  await f.storage.events.create(changed, {
    eventType: 'attr_set',
    specVersion: sv,
    eventData: { changes: [{ key: 'k', value: 'v' }], writer: { type: 'step', stepId: 's', attempt: 1 } },
  } as never);
  let attrs: Record<string, string> | undefined;
  const got = await count(async () => {
    attrs = (
      await s.events.create(changed, { eventType: 'run_started', specVersion: sv }, { skipPreload: true } as never)
    ).run?.attributes;
  });
  expect(got).toEqual({ TransactWriteItems: 2, Query: 1 });
  expect(attrs).toMatchObject({ k: 'v' });
});

it('a remembered step item that another process moved on costs a retry, never a wrong write', async () => {
  const a = countingStorage();
  const b = countingStorage();
  const runId = await runningRun(a);
  await a.events.create(runId, {
    eventType: 'step_started',
    specVersion: sv,
    correlationId: 'step_x',
    eventData: { stepName: 's', input: bytes('in') },
  });
  // Process b finishes the step; a still remembers it as running.
  await b.events.create(runId, {
    eventType: 'step_completed',
    specVersion: sv,
    correlationId: 'step_x',
    eventData: { result: bytes('b') },
  });
  let err: unknown;
  const got = await count(async () => {
    err = await a.events
      .create(runId, {
        eventType: 'step_completed',
        specVersion: sv,
        correlationId: 'step_x',
        eventData: { result: bytes('a') },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
  });
  expect((err as Error)?.name).toBe('EntityConflictError');
  // The conditioned write was cancelled and returned the current item: no extra read needed.
  expect(got.TransactWriteItems).toBe(1);
  expect(got.GetItem ?? 0).toBe(0);
  const step = await a.steps.get(runId, 'step_x');
  expect(step.status).toBe('completed');
  expect(Buffer.from(step.output as Uint8Array).toString()).toBe('b');
});
