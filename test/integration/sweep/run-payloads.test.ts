/**
 * The orphan sweep (src/sweep/run-payloads.ts) against DynamoDB Local + fauxqs S3: runs with
 * large payloads, orphans planted the two ways they arise (an upload whose transaction was then
 * rejected, injected with SDK middleware; an object written directly under a run's prefix), and
 * a sweep that must delete exactly the orphans. The clock is moved forward with `now` instead of
 * waiting for the grace period.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { BatchWriteItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import type { Storage } from '@workflow/world';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext, type WorldContext } from '../../../src/context/world-context.js';
import { keys } from '../../../src/schema/keys.js';
import { createStorage, storageContext } from '../../../src/storage/index.js';
import { createStreamer } from '../../../src/streams/index.js';
import { sweepOrphanedPayloads } from '../../../src/sweep/run-payloads.js';
import { hookCreatedAndReceived, type StorageFixture, startedRun, storageFixture, sv } from '../../helpers/storage.js';

const HOUR = 3_600_000;
const randomBytes = (n: number) => new Uint8Array(nodeRandomBytes(n));
/** Well over the fixture's 1,000-byte threshold: every payload below goes to S3. */
const big = () => randomBytes(5_000);
const same = (a: unknown, b: Uint8Array) => Buffer.compare(a as Uint8Array, b) === 0;

let f: StorageFixture;
let ctx: WorldContext;
let storage: Storage;
/** A Storage whose next TransactWriteItems fails after its uploads ("the process died"). */
let faulty: ReturnType<typeof createClients>;
let faultyStorage: Storage;
let failNextTransaction = false;
/** Every command the faulty clients sent, by name (to count what a sweep costs). */
const sent: string[] = [];
/** While set, every Query of the faulty client fails (throttling past the SDK's retries). */
let failQueries = false;

beforeAll(async () => {
  f = await storageFixture({}, { payloadThresholdBytes: 1000 });
  ctx = f.ctx;
  storage = f.storage;
  faulty = createClients(f.config);
  (faulty.ddb.middlewareStack as any).add(
    (next: any, context: any) => async (args: any) => {
      sent.push(context.commandName);
      if (context.commandName === 'QueryCommand' && failQueries)
        throw Object.assign(new Error('injected: Rate of requests exceeds the allowed throughput.'), {
          name: 'ThrottlingException',
          $metadata: { httpStatusCode: 400, attempts: 8 },
        });
      if (context.commandName === 'TransactWriteItemsCommand' && failNextTransaction) {
        failNextTransaction = false;
        throw Object.assign(new Error('injected: the process died before its transaction'), {
          name: 'InjectedCrash',
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failTransaction' },
  );
  ((await faulty.s3()).middlewareStack as any).add(
    (next: any, context: any) => async (args: any) => {
      sent.push(context.commandName);
      return next(args);
    },
    { step: 'initialize', name: 'countS3' },
  );
  faultyStorage = createStorage(createContext(f.config, faulty));
});
afterAll(() => {
  destroyClients(faulty);
  f?.close();
});

async function objectsOf(runId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const page of ctx.payloads.list(`runs/${runId}/`)) out.push(...page.map((o) => o.key));
  return out.sort();
}

const sweep = (over: Parameters<typeof sweepOrphanedPayloads>[1] = {}) =>
  sweepOrphanedPayloads(storageContext(ctx), over);

/** Run `create` with the next transaction failing; it must reject. */
async function uploadThenCrash(create: (s: Storage) => Promise<unknown>): Promise<void> {
  failNextTransaction = true;
  await expect(create(faultyStorage)).rejects.toThrow();
  expect(failNextTransaction).toBe(false); // the transaction was really attempted
}

/** A step event request (typed loosely: the contract's union is narrower per event type). */
const stepEvent = (type: string, stepId: string, eventData: Record<string, unknown>) =>
  ({ eventType: type, specVersion: sv, correlationId: stepId, eventData }) as never;

describe('a terminal run', () => {
  it('loses exactly its orphans; committed payloads stay readable through storage; dry-run deletes nothing', async () => {
    const input = big();
    const runId = await startedRun(storage, { input });
    const stepIn = big();
    const stepOut = big();
    await storage.events.create(runId, stepEvent('step_started', 'step_1', { stepName: 's', input: stepIn }));
    // Orphan 1: a completion whose upload happened but whose transaction never committed.
    await uploadThenCrash((s) => s.events.create(runId, stepEvent('step_completed', 'step_1', { result: big() })));
    await storage.events.create(runId, stepEvent('step_completed', 'step_1', { result: stepOut }));
    // A hook with large metadata and a large resume payload (the hook item goes at the run's end;
    // its events keep pointing at both objects).
    const metadata = big();
    const payload = big();
    await hookCreatedAndReceived(storage, runId, metadata, payload);
    // A stream with an offloaded chunk (its block item points at the object).
    const streams = createStreamer(ctx).streams;
    const chunk = big();
    await streams.write(runId, 'out', chunk);
    await streams.close(runId, 'out');
    const output = big();
    // Orphan 2: the same for the run's own output.
    await uploadThenCrash((s) =>
      s.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output: big() } }),
    );
    await storage.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output } });
    // Orphan 3: an object nothing ever pointed at, written straight under the run's prefix.
    const planted = `runs/${runId}/events/hook_received/payload-${'0'.repeat(32)}`;
    await ctx.payloads.putBlob(planted, big());

    const before = await objectsOf(runId);
    // run input + output, step input + output, hook metadata + payload, a chunk; 3 orphans
    expect(before).toHaveLength(7 + 3);
    expect(before).toContain(planted);

    // Within the grace period nothing is touched.
    const early = await sweep({ runId });
    expect(early.runs.recent).toBe(1);
    expect(early.objects.orphans).toBe(0);

    const later = Date.now() + 2 * HOUR;
    const dry = await sweep({ runId, now: later, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.objects.orphans).toBe(3);
    expect(await objectsOf(runId)).toEqual(before);

    const done = await sweep({ runId, now: later });
    expect(done.runs.terminal).toBe(1);
    expect(done.objects).toMatchObject({ scanned: 10, referenced: 7, orphans: 3, protected: 0 });
    expect(done.failures).toEqual([]);
    const swept = done.swept.map((o) => o.key).sort();
    expect(swept).toEqual(dry.swept.map((o) => o.key).sort());
    expect(swept).toContain(planted);
    expect(done.swept.every((o) => o.reason === 'unreferenced')).toBe(true);
    const after = await objectsOf(runId);
    expect(after).toEqual(before.filter((k) => !swept.includes(k)));

    // Everything committed still reads back byte for byte, through a fresh Storage.
    const fresh = f.other();
    const r = await fresh.runs.get(runId);
    expect(same(r.input, input)).toBe(true);
    expect(same(r.output, output)).toBe(true);
    const step = await fresh.steps.get(runId, 'step_1');
    expect(same(step.input, stepIn)).toBe(true);
    expect(same(step.output, stepOut)).toBe(true);
    const log = await fresh.events.list({ runId });
    const completed = log.data.find((e) => e.eventType === 'step_completed') as { eventData: { result: unknown } };
    expect(same(completed.eventData.result, stepOut)).toBe(true);

    const hookEvent = (t: string) => log.data.find((e) => e.eventType === t) as { eventData: Record<string, unknown> };
    expect(same(hookEvent('hook_created').eventData.metadata, metadata)).toBe(true);
    expect(same(hookEvent('hook_received').eventData.payload, payload)).toBe(true);
    const page = await streams.getChunks(runId, 'out');
    expect(same(page.data[0].data, chunk)).toBe(true);
    // The run is marked clean: a second sweep skips it without reading its items; `recheck`
    // reads it again and finds nothing left to do.
    sent.length = 0;
    const again = await sweepOrphanedPayloads(storageContext(createContext(f.config, faulty)), { runId, now: later });
    expect(again.runs).toMatchObject({ clean: 1, terminal: 0 });
    expect(again.objects.scanned).toBe(0);
    expect(sent).toEqual(['GetItemCommand']); // one projected read, nothing else
    const rechecked = await sweep({ runId, now: later, recheck: true });
    expect(rechecked.runs).toMatchObject({ clean: 0, terminal: 1 });
    expect(rechecked.objects).toMatchObject({ scanned: 7, referenced: 7, orphans: 0 });
  });

  it('keeps the objects of a step still running (it may complete after its run ended) until it is terminal', async () => {
    const runId = await startedRun(storage);
    await storage.events.create(runId, stepEvent('step_started', 'step_live', { stepName: 's', input: big() }));
    await storage.events.create(runId, { eventType: 'run_cancelled', specVersion: sv });
    // An upload of the live step whose transaction never committed, and one of a stream.
    await uploadThenCrash((s) => s.events.create(runId, stepEvent('step_failed', 'step_live', { error: big() })));
    const stream = `runs/${runId}/streams/out/w1.1.0`;
    await ctx.payloads.putBlob(stream, big());
    const later = Date.now() + 2 * HOUR;

    const first = await sweep({ runId, now: later });
    expect(first.runs.terminal).toBe(1);
    expect(first.objects).toMatchObject({ orphans: 0, protected: 2, referenced: 1 });
    // Not marked clean while something was protected: the next sweep reads the run again.
    expect((await sweep({ runId, now: later, dryRun: true })).runs.terminal).toBe(1);

    // The invariant the protection rests on: a running step still completes after its run ended.
    const output = big();
    await storage.events.create(runId, stepEvent('step_completed', 'step_live', { result: output }));
    const second = await sweep({ runId, now: later });
    expect(second.objects).toMatchObject({ orphans: 2, protected: 0, referenced: 2 });
    expect(second.swept.map((o) => o.key)).toContain(stream);
    expect(same((await f.other().steps.get(runId, 'step_live')).output, output)).toBe(true);
  });

  it('a run whose reads fail keeps its objects, is reported, and does not stop the sweep', async () => {
    const a = await startedRun(storage);
    const b = await startedRun(storage);
    const plant = async (runId: string) => {
      await storage.events.create(runId, { eventType: 'run_failed', specVersion: sv, eventData: { error: 'x' } });
      const key = `runs/${runId}/run/output-${'2'.repeat(32)}`;
      await ctx.payloads.putBlob(key, big());
      return key;
    };
    const [ka, kb] = [await plant(a), await plant(b)];
    const faultyCtx = storageContext(createContext(f.config, faulty));
    failQueries = true;
    try {
      const r = await sweepOrphanedPayloads(faultyCtx, { runId: a, now: Date.now() + 2 * HOUR });
      expect(r.failures).toEqual([{ key: `runs/${a}/`, error: expect.stringMatching(/injected/) }]);
      expect(r.objects.orphans).toBe(0);
    } finally {
      failQueries = false;
    }
    expect(await objectsOf(a)).toEqual([ka]);
    // Without the fault both go.
    for (const [runId, key] of [
      [a, ka],
      [b, kb],
    ]) {
      const r = await sweep({ runId, now: Date.now() + 2 * HOUR });
      expect(r.swept.map((o) => o.key)).toEqual([key]);
    }
  });
});

describe('runs that are not terminal or do not exist', () => {
  it('never touches an active run, however old its objects', async () => {
    const runId = await startedRun(storage, { input: big() });
    const planted = `runs/${runId}/steps/step_x/output-${'1'.repeat(32)}`;
    await ctx.payloads.putBlob(planted, big());
    const r = await sweep({ runId, now: Date.now() + 30 * 24 * HOUR });
    expect(r.runs.active).toBe(1);
    expect(r.objects.scanned).toBe(0);
    expect(await objectsOf(runId)).toContain(planted);
  });

  it('deletes a never-committed run_created upload only once no run can be created under its id', async () => {
    const runId = `wrun_${ulid()}`;
    await uploadThenCrash((s) =>
      s.events.create(runId, {
        eventType: 'run_created',
        specVersion: sv,
        eventData: { deploymentId: 'd', workflowName: 'w', input: big() },
      } as never),
    );
    await expect(storage.runs.get(runId)).rejects.toThrow();
    expect(await objectsOf(runId)).toHaveLength(1);

    // 2 h later the id could still be used by a redelivered run_created (24 h window): kept.
    const soon = await sweep({ runId, now: Date.now() + 2 * HOUR });
    expect(soon.runs.recent).toBe(1);
    expect(await objectsOf(runId)).toHaveLength(1);

    const r = await sweep({ runId, now: Date.now() + 26 * HOUR });
    expect(r.runs.absent).toBe(1);
    expect(r.objects.orphans).toBe(1);
    expect(r.swept[0].reason).toBe('no-run');
    expect(await objectsOf(runId)).toEqual([]);
  });

  it('cleans up after runs purged by retention: TTL-deleted items, and $retention 0', async () => {
    // A completed run whose items DynamoDB's TTL has since deleted: its objects are orphans,
    // except the metadata of a hook kept for its token retention (3 days), which still answers.
    const purged = await startedRun(storage, { input: big() });
    const metadata = big();
    await storage.events.create(purged, {
      eventType: 'hook_created',
      specVersion: sv,
      correlationId: 'hook_kept',
      eventData: { token: `kept-${purged}`, metadata, tokenRetentionUntil: new Date(Date.now() + 3 * 24 * HOUR) },
    });
    await storage.events.create(purged, { eventType: 'run_completed', specVersion: sv, eventData: { output: big() } });
    expect(await objectsOf(purged)).toHaveLength(3);
    const items = await f.clients.ddb.send(
      new QueryCommand({
        TableName: f.config.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': { S: keys.runPk(purged) } },
        ProjectionExpression: 'PK, SK',
      }),
    );
    await f.clients.ddb.send(
      new BatchWriteItemCommand({
        RequestItems: { [f.config.tableName]: (items.Items ?? []).map((Key) => ({ DeleteRequest: { Key } })) },
      }),
    );
    const r = await sweep({ runId: purged, now: Date.now() + 26 * HOUR });
    expect(r.runs.absent).toBe(1);
    expect(r.objects).toMatchObject({ orphans: 2, referenced: 1 });
    const left = await objectsOf(purged);
    expect(left).toEqual([expect.stringMatching(new RegExp(`^runs/${purged}/hooks/hook_kept/metadata-`))]);
    expect(same((await storage.hooks.getByToken(`kept-${purged}`)).metadata, metadata)).toBe(true);

    // $retention 0 deletes its objects itself at the end; the sweep finds nothing, and the
    // payload-free run still answers.
    const priv = await startedRun(storage, {
      input: big(),
      attributes: { $retention: '0' },
      allowReservedAttributes: true,
    });
    await storage.events.create(priv, { eventType: 'run_completed', specVersion: sv, eventData: { output: big() } });
    const p = await sweep({ runId: priv, now: Date.now() + 2 * HOUR });
    expect(p.runs.terminal).toBe(1);
    expect(p.objects.orphans).toBe(0);
    expect((await storage.runs.get(priv)).status).toBe('completed');
  });

  it('a full sweep leaves prefixes that are not run ids alone; a kept hook’s metadata goes once the hook expired', async () => {
    const foreign = 'runs/not-a-run-id/some-object';
    await ctx.payloads.putBlob(foreign, big());
    const r = await sweep({ now: Date.now() + 30 * 24 * HOUR, dryRun: true });
    // The prefixes left by the tests above: two swept terminal runs, one active run, the purged
    // run with its kept hook (TTL = its token retention, 3 days: past by now), this one.
    expect(r.runs).toMatchObject({ scanned: 5, foreign: 1, active: 1, clean: 2, terminal: 0, absent: 1 });
    expect(r.swept.map((o) => [o.reason, o.key])).toEqual([
      ['no-run', expect.stringMatching(/^runs\/wrun_\w+\/hooks\/hook_kept\/metadata-/)],
    ]);
  });
});
