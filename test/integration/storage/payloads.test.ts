/**
 * Large values (S3 offload with `{__s3}` pointers), `resolveData: 'none'` (never reads S3),
 * opaque event data (unknown fields survive), and the errors for malformed input.
 */

import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { Storage } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import { keys } from '../../../src/schema/keys.js';
import { createStorage } from '../../../src/storage/index.js';
import {
  bytes,
  hookCreatedAndReceived,
  rejectsWith,
  type StorageFixture,
  startedRun,
  storageFixture,
  sv,
} from '../../helpers/storage.js';

const randomBytes = (n: number) => new Uint8Array(nodeRandomBytes(n));

let f: StorageFixture;
let s3Gets = 0;
let watched: ReturnType<typeof createClients>;
let storage: Storage;

beforeAll(async () => {
  f = await storageFixture();
  watched = createClients(f.config);
  ((await watched.s3()).middlewareStack as any).add(
    (next: any, context: any) => async (args: any) => {
      if (context.commandName === 'GetObjectCommand') s3Gets++;
      return next(args);
    },
    { step: 'initialize' },
  );
  storage = createStorage(createContext(f.config, watched));
});
afterAll(() => {
  destroyClients(watched);
  f?.close();
});

async function rawItem(key: { PK: string; SK: string }) {
  const out = await f.clients.ddb.send(
    new GetItemCommand({ TableName: f.config.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } } }),
  );
  return out.Item!;
}

/** A step_created request for `stepId` (step name 's') with `input`. */
const stepCreated = (stepId: string, input: Uint8Array) => ({
  eventType: 'step_created' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { stepName: 's', input },
});

describe('large values', () => {
  it('a 5 MB step output round-trips byte for byte through S3; resolveData none never reads S3', async () => {
    const runId = await startedRun(storage);
    const input = randomBytes(1_000_000);
    const output = randomBytes(5 * 1024 * 1024);
    output[0] = 0;
    await storage.events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { stepName: 's', input },
    });
    const done = await storage.events.create(runId, {
      eventType: 'step_completed',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { result: output },
    });
    expect(Buffer.compare(done.step!.output as Uint8Array, output)).toBe(0);

    const item = await rawItem(keys.step(runId, 'step_1'));
    expect(item.output.M?.__s3?.S).toMatch(new RegExp(`^runs/${runId}/`));
    expect(item.input.M?.__s3?.S).toMatch(new RegExp(`^runs/${runId}/`));

    s3Gets = 0;
    const step = await storage.steps.get(runId, 'step_1');
    expect(Buffer.compare(step.output as Uint8Array, output)).toBe(0);
    expect(Buffer.compare(step.input as Uint8Array, input)).toBe(0);
    const log = await storage.events.list({ runId });
    const completed = log.data.find((e) => e.eventType === 'step_completed') as { eventData: { result: Uint8Array } };
    expect(Buffer.compare(completed.eventData.result, output)).toBe(0);
    expect(s3Gets).toBeGreaterThan(0);

    s3Gets = 0;
    const lean = await storage.steps.get(runId, 'step_1', { resolveData: 'none' });
    expect(lean.input).toBeUndefined();
    expect(lean.output).toBeUndefined();
    const leanLog = await storage.events.list({ runId, resolveData: 'none' });
    // stripEventDataRefs drops an eventData left empty.
    expect(leanLog.data.find((e) => e.eventType === 'step_completed')?.eventData).toBeUndefined();
    expect(leanLog.data.find((e) => e.eventType === 'step_created')?.eventData).toEqual({ stepName: 's' });
    await storage.runs.list({ resolveData: 'none' });
    await storage.steps.list({ runId, resolveData: 'none' });
    expect(s3Gets).toBe(0);
  });

  it('large run input/output, hook metadata and hook payload go to S3 and come back', async () => {
    const big = () => randomBytes(600_000);
    const input = big();
    const { run } = await storage.events.create(null, {
      eventType: 'run_created',
      specVersion: sv,
      eventData: { deploymentId: 'd', workflowName: 'w', input },
    });
    const runId = run.runId;
    expect((await rawItem(keys.runMeta(runId))).input.M?.__s3).toBeDefined();
    expect(Buffer.compare((await storage.runs.get(runId)).input as Uint8Array, input)).toBe(0);
    await storage.events.create(runId, { eventType: 'run_started', specVersion: sv });
    const metadata = big();
    const payload = big();
    await hookCreatedAndReceived(storage, runId, metadata, payload);
    expect(Buffer.compare((await storage.hooks.getByToken(`t-${runId}`)).metadata as Uint8Array, metadata)).toBe(0);
    const rec = (await storage.events.list({ runId })).data.find((e) => e.eventType === 'hook_received') as {
      eventData: { payload: Uint8Array };
    };
    expect(Buffer.compare(rec.eventData.payload, payload)).toBe(0);
    const output = big();
    const fin = await storage.events.create(runId, {
      eventType: 'run_completed',
      specVersion: sv,
      eventData: { output },
    });
    expect(Buffer.compare(fin.run!.output as Uint8Array, output)).toBe(0);
    expect(Buffer.compare((await storage.runs.get(runId)).output as Uint8Array, output)).toBe(0);
    const lean = await storage.runs.get(runId, { resolveData: 'none' });
    expect(lean.input).toBeUndefined();
    expect(lean.output).toBeUndefined();
  });

  it('two inline payloads that together exceed an item are split so the item fits', async () => {
    const runId = await startedRun(storage);
    const a = randomBytes(250_000);
    const b = randomBytes(250_000);
    await storage.events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { stepName: 's', input: a },
    });
    const r = await storage.events.create(runId, {
      eventType: 'step_completed',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { result: b },
    });
    expect(r.step?.status).toBe('completed');
    const step = await storage.steps.get(runId, 'step_1');
    expect(Buffer.compare(step.input as Uint8Array, a)).toBe(0);
    expect(Buffer.compare(step.output as Uint8Array, b)).toBe(0);
  });
});

describe('opaque event data', () => {
  it('unknown eventData fields and unknown top-level fields survive a round trip; Dates stay Dates', async () => {
    const runId = await startedRun(storage);
    const when = new Date('2030-01-02T03:04:05.006Z');
    const extra = {
      nested: { list: [1, 'two', null, { deep: bytes('\0x') }], at: when, flag: false },
      ttfs: 12,
      optimizations: ['turbo'],
    };
    await storage.events.create(runId, {
      eventType: 'step_started',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { stepName: 's', input: bytes('i') },
    });
    await storage.events.create(runId, {
      eventType: 'step_completed',
      specVersion: sv,
      correlationId: 'step_1',
      eventData: { result: bytes('r'), ...extra },
      futureTopLevel: 'kept',
    } as never);
    const ev = (await storage.events.list({ runId })).data.at(-1) as Record<string, any>;
    expect(ev.eventData).toEqual({ result: bytes('r'), ...extra });
    expect(ev.eventData.nested.at).toBeInstanceOf(Date);
    expect(ev.futureTopLevel).toBe('kept');
    expect(ev.occurredAt).toBeUndefined();
  });

  it('persists occurredAt', async () => {
    const runId = await startedRun(storage);
    const occurredAt = new Date('2026-01-01T00:00:00.000Z');
    const r = await storage.events.create(
      runId,
      { eventType: 'wait_created', specVersion: sv, correlationId: 'w', eventData: { resumeAt: new Date() } },
      { occurredAt },
    );
    expect(r.event?.occurredAt).toEqual(occurredAt);
    expect((await storage.events.get(runId, r.event!.eventId)).occurredAt).toEqual(occurredAt);
  });
});

async function objectsUnder(prefix: string): Promise<string[]> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const out = await (await f.clients.s3()).send(new ListObjectsV2Command({ Bucket: f.config.bucket, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

describe('inline threshold', () => {
  it('by default a stored value over 16 KB goes to S3 and one under it stays inline (the cost model in the README)', async () => {
    expect(f.config.storageInlineBytes).toBe(16_384);
    expect(f.ctx.payloads.thresholdBytes).toBe(16_384);
    const runId = await startedRun(storage);
    await storage.events.create(runId, stepCreated('small', randomBytes(16_000)));
    expect(await objectsUnder(`runs/${runId}/`)).toEqual([]);
    const big = randomBytes(17_000);
    await storage.events.create(runId, stepCreated('big', big));
    expect(await objectsUnder(`runs/${runId}/`)).toHaveLength(1);
    expect(Buffer.from((await storage.steps.get(runId, 'big')).input as Uint8Array).equals(Buffer.from(big))).toBe(
      true,
    );
  });
});

describe('no orphaned objects', () => {
  it('a large step_created redelivered 3 times leaves one object (deterministic key)', async () => {
    const runId = await startedRun(storage);
    const input = randomBytes(400_000);
    const req = stepCreated('step_big', input);
    await storage.events.create(runId, req);
    await rejectsWith(storage.events.create(runId, req), 'EntityConflictError');
    await rejectsWith(f.storage.events.create(runId, req), 'EntityConflictError'); // another process
    const keys = await objectsUnder(`runs/${runId}/`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^runs/${runId}/steps/step_big/input-[0-9a-f]{32}$`));
    expect(Buffer.compare((await storage.steps.get(runId, 'step_big')).input as Uint8Array, input)).toBe(0);
  });

  it('uploads nothing for a create the run guard refuses (terminal or unknown run, existing run)', async () => {
    const runId = await startedRun(storage);
    await storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    const big = randomBytes(400_000);
    await rejectsWith(storage.events.create(runId, stepCreated('s1', big)), 'EntityConflictError');
    await rejectsWith(
      storage.events.create(runId, {
        eventType: 'step_started',
        specVersion: sv,
        correlationId: 's2',
        eventData: { stepName: 's', input: big },
      }),
      'EntityConflictError',
    );
    await rejectsWith(
      storage.events.create(runId, {
        eventType: 'hook_created',
        specVersion: sv,
        correlationId: 'h',
        eventData: { token: `t-${runId}`, metadata: big },
      }),
      'EntityConflictError',
    );
    expect(await objectsUnder(`runs/${runId}/`)).toEqual([]);
    const unknown = 'wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    await rejectsWith(storage.events.create(unknown, stepCreated('s', big)), 'WorkflowRunNotFoundError');
    expect(await objectsUnder(`runs/${unknown}/`)).toEqual([]);
    // A redelivered run_created with a large input: the run exists, nothing more is uploaded.
    const { run } = await storage.events.create(null, {
      eventType: 'run_created',
      specVersion: sv,
      eventData: { deploymentId: 'd', workflowName: 'w', input: big },
    });
    const before = await objectsUnder(`runs/${run!.runId}/`);
    expect(before).toHaveLength(1);
    const again = {
      eventType: 'run_created' as const,
      specVersion: sv,
      eventData: { deploymentId: 'd', workflowName: 'w', input: randomBytes(400_000) },
    };
    await rejectsWith(storage.events.create(run!.runId, again), 'EntityConflictError');
    expect(await objectsUnder(`runs/${run!.runId}/`)).toEqual(before);
  });
});

describe('items DynamoDB refuses', () => {
  it('an event item over 400 KB is a 400 naming the field, and burns no slot', async () => {
    const runId = await startedRun(storage);
    // Two non-payload fields, each under the inline threshold (300 KB), together over 400 KB.
    const eventData = { stepName: 's', input: bytes('i'), notesA: 'a'.repeat(250_000), notesB: 'b'.repeat(200_000) };
    const err = await storage.events
      .create(runId, { eventType: 'step_created', specVersion: sv, correlationId: 'big', eventData })
      .catch((e) => e);
    expect(err.name).toBe('WorkflowWorldError');
    expect(err.status).toBe(400);
    expect(err.field).toBe('eventData.notesA');
    expect(err.message).toMatch(/eventData\.notesA makes the event item \d+ KB, over DynamoDB's 400 KB item limit/);
    const next = await storage.events.create(runId, {
      eventType: 'wait_created',
      specVersion: sv,
      correlationId: 'w',
      eventData: { resumeAt: new Date() },
    });
    expect(next.event?.eventId).toBe('evnt_00000000000000000000000003');
  });
});

describe('unknown and malformed ids', () => {
  it('gives the contract errors', async () => {
    const runId = await startedRun(storage);
    await rejectsWith(storage.runs.get('wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV'), 'WorkflowRunNotFoundError');
    await rejectsWith(storage.runs.get(''), 'WorkflowWorldError');
    await rejectsWith(storage.events.get(runId, 'evnt_not-a-slot'), 'WorkflowWorldError');
    await rejectsWith(storage.events.get(runId, 'evnt_00000000000000000000000099'), 'WorkflowWorldError');
    await rejectsWith(storage.events.list({ runId, pagination: { cursor: 'garbage' } }), 'WorkflowWorldError');
    await rejectsWith(storage.steps.get(runId, 'nope'), 'WorkflowWorldError');
    await rejectsWith(storage.hooks.get('nope'), 'HookNotFoundError');
    await rejectsWith(storage.hooks.getByToken('nope'), 'HookNotFoundError');
    await rejectsWith(storage.events.create('', stepCreated('s', bytes('i'))), 'WorkflowWorldError');
    await rejectsWith(storage.events.create(runId, stepCreated('', bytes('i'))), 'WorkflowWorldError');
    await rejectsWith(storage.events.create(runId, { eventType: 'bogus' } as never), 'WorkflowWorldError');
    // Types of the union a core may not create (the World writes hook_conflict itself; noop is refused),
    // and names of inherited properties, which must never be taken for a writer.
    for (const eventType of ['noop', 'hook_conflict', 'constructor', 'toString', '__proto__']) {
      const refused = await rejectsWith(storage.events.create(runId, { eventType } as never), 'WorkflowWorldError');
      expect(refused.message).toContain(`Unsupported event type "${eventType}"`);
    }
    const e = await storage.events.list({ runId, pagination: { cursor: 'garbage' } }).catch((x) => x);
    expect(e.status).toBe(400);
  });
});
