/**
 * The scheduled sweep's Lambda handler (src/sweep/sweep-handler.ts), invoked in process as Lambda would
 * call it, against DynamoDB Local + fauxqs S3: the exported `sweepHandler` reads its environment
 * (set here to a fresh fixture's), deletes a planted orphan of a finished run and an expired held
 * queue body, keeps every referenced object, the active run's objects and a live held body, logs
 * one JSON line, and fails the invocation when the sweep reports failures (a table that does not
 * exist). A deadline already passed stops it before it sends anything. Every command the sweep
 * sends is recorded and must be exactly the `sweeper` rows of the IAM command table (what the CDK
 * construct grants the sweeper function).
 */
import { randomBytes } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { Storage } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsClients, createClients, destroyClients } from '../../../src/aws/clients.js';
import { HELD_BODY_PREFIX } from '../../../src/config/limits.js';
import { createContext, type WorldContext } from '../../../src/context/world-context.js';
import { createSweepHandler, type SweepSummary, sweepHandler } from '../../../src/lambda/index.js';
import { COMMAND_PERMISSIONS, commandKey, permissionFor } from '../../../src/provision/iam-actions.js';
import { keys } from '../../../src/schema/keys.js';
import { SWEPT_ATTR } from '../../../src/storage/index.js';
import { keysOf } from '../../../src/storage/table/codec.js';
import { sweepOrphans } from '../../../src/sweep/index.js';
import { type StorageFixture, startedRun, storageFixture, sv } from '../../helpers/storage.js';

const DAY = 86_400_000;
/** Over the fixture's 1,000-byte threshold: stored in S3. */
const big = () => new Uint8Array(randomBytes(5_000));
const same = (a: unknown, b: Uint8Array) => Buffer.compare(a as Uint8Array, b) === 0;

let f: StorageFixture;
let ctx: WorldContext;
let storage: Storage;
const savedEnv = { ...process.env };

/** A lambda context with plenty of time left (the sweep is never cut short by it). */
const plenty = { getRemainingTimeInMillis: () => 600_000 };

beforeAll(async () => {
  f = await storageFixture({}, { payloadThresholdBytes: 1000, backstopSeconds: 1 });
  ctx = f.ctx;
  storage = f.storage;
  // What the construct's sweeper function gets: the World's names (plus the emulator endpoints).
  Object.assign(process.env, f.env);
});
afterAll(() => {
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
  f?.close();
});

async function objectsUnder(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const page of ctx.payloads.list(prefix)) out.push(...page.map((o) => o.key));
  return out.sort();
}

/** A finished run with an offloaded input and output; returns its id and payloads. */
async function finishedRun(opts: { keptHook?: boolean } = {}) {
  const input = big();
  const output = big();
  const runId = await startedRun(storage, { input });
  if (opts.keptHook)
    // A hook kept past its run (token retention): the sweep reads its item (BatchGetItem).
    await storage.events.create(runId, {
      eventType: 'hook_created',
      specVersion: sv,
      correlationId: 'hook_kept',
      eventData: { token: `kept-${runId}`, metadata: big(), tokenRetentionUntil: new Date(Date.now() + DAY) },
    });
  await storage.events.create(runId, { eventType: 'run_completed', specVersion: sv, eventData: { output } });
  return { runId, input, output };
}

/** An object nothing ever pointed at, under the run's prefix (an upload whose commit never happened). */
async function plantOrphan(runId: string): Promise<string> {
  const key = `runs/${runId}/steps/step_gone/output-${randomBytes(16).toString('hex')}`;
  await ctx.payloads.putBlob(key, big());
  return key;
}

/** The run item's `orphansSweptAt` mark, if any. */
async function sweptMark(runId: string): Promise<unknown> {
  const item = await ctx.clients.ddb.send(
    new GetItemCommand({ TableName: f.config.tableName, Key: keysOf(keys.runMeta(runId)), ConsistentRead: true }),
  );
  return item.Item?.[SWEPT_ATTR];
}

/** Clients that record `<service>:<Command>` of everything they send (the request still goes out). */
async function recordingClients(sent: Set<string>): Promise<AwsClients> {
  const clients = createClients(f.config);
  const record = (client: { middlewareStack: { add: (mw: never, o: object) => void } }, name: string) =>
    client.middlewareStack.add(
      ((next: (a: unknown) => unknown, c: { commandName?: string }) => async (args: unknown) => {
        sent.add(commandKey(name, c.commandName ?? 'unknown'));
        return next(args);
      }) as never,
      { step: 'initialize', name: 'sweepRecorder' },
    );
  record(clients.ddb as never, 'DynamoDBClient');
  record(clients.sqs as never, 'SQSClient');
  record((await clients.s3()) as never, 'S3Client');
  return clients;
}

describe('sweepHandler (the scheduled Lambda)', () => {
  it('a deadline already passed: stops before sending any command, deletes nothing, and does not fail', async () => {
    const { runId } = await finishedRun();
    const orphan = await plantOrphan(runId);
    const held = `${HELD_BODY_PREFIX}msg_past/${Math.floor((Date.now() - DAY) / 1000)}`;
    await ctx.payloads.putBlob(held, big());
    const sent = new Set<string>();
    const clients = await recordingClients(sent);
    try {
      const handler = createSweepHandler({ context: createContext(f.config, clients), logger: silent() });
      const out = await handler({ graceMs: 0 }, { getRemainingTimeInMillis: () => 0 });
      expect(out.stopped).toBe(true);
      expect(out.runs.scanned).toBe(0);
      expect(out.heldBodies).toMatchObject({ scanned: 0, expired: 0 });
      expect([...sent]).toEqual([]);
    } finally {
      destroyClients(clients);
    }
    expect(await objectsUnder(`runs/${runId}/`)).toContain(orphan);
    expect(await objectsUnder(HELD_BODY_PREFIX)).toContain(held);
    // The next (unhurried) invocation finishes the work: the exported handler, from the environment.
    const next = await sweepHandler({ graceMs: 0 }, plenty);
    expect(next.stopped).toBe(false);
    expect(await objectsUnder(`runs/${runId}/`)).not.toContain(orphan);
    expect(await objectsUnder(HELD_BODY_PREFIX)).not.toContain(held);
  });

  it('deletes the planted orphan of a finished run and an expired held body; keeps referenced objects, an active run and a live held body; logs one JSON line', async () => {
    const { runId, input, output } = await finishedRun();
    const orphan = await plantOrphan(runId);
    const committed = (await objectsUnder(`runs/${runId}/`)).filter((k) => k !== orphan);
    expect(committed).toHaveLength(2); // input and output
    // A running run: its unreferenced object is never touched.
    const { run: activeRun } = await storage.events.create(null, {
      eventType: 'run_created',
      specVersion: sv,
      eventData: { deploymentId: 'd', workflowName: 'w', input: big() },
    });
    await storage.events.create(activeRun.runId, { eventType: 'run_started', specVersion: sv });
    const activeOrphan = await plantOrphan(activeRun.runId);
    const now = Math.floor(Date.now() / 1000);
    const expired = `${HELD_BODY_PREFIX}msg_old/${now - 3600}`;
    const live = `${HELD_BODY_PREFIX}msg_live/${now + 30 * 86_400}`;
    await ctx.payloads.putBlob(expired, big());
    await ctx.payloads.putBlob(live, big());

    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    let out: SweepSummary;
    let lines: string[];
    try {
      out = await sweepHandler({ 'detail-type': 'Scheduled Event', source: 'aws.events', graceMs: 0 }, plenty);
    } finally {
      lines = info.mock.calls.map((c) => String(c[0]));
      info.mockRestore();
    }
    expect(out.failures).toBe(0);
    expect(out.stopped).toBe(false);
    expect(out.objects.orphans).toBeGreaterThanOrEqual(1);
    expect(out.heldBodies?.expired).toBeGreaterThanOrEqual(1);
    // One line, JSON, the same summary the invocation returned.
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('\n');
    expect(JSON.parse(lines[0])).toEqual(out);

    expect(await objectsUnder(`runs/${runId}/`)).toEqual(committed);
    expect(await objectsUnder(`runs/${activeRun.runId}/`)).toContain(activeOrphan);
    const heldLeft = await objectsUnder(HELD_BODY_PREFIX);
    expect(heldLeft).toContain(live);
    expect(heldLeft).not.toContain(expired);
    // Committed payloads still read back, and the run is marked clean (the next day skips it).
    const r = await f.other().runs.get(runId);
    expect(same(r.input, input)).toBe(true);
    expect(same(r.output, output)).toBe(true);
    expect(await sweptMark(runId)).toBeDefined();
  });

  it('fails the invocation when the sweep reports failures: reads of a table that does not exist', async () => {
    expect(f.env.EVE_WORLD_AWS_TABLE).toBeUndefined();
    const { runId } = await finishedRun();
    const orphan = await plantOrphan(runId);
    process.env.EVE_WORLD_AWS_TABLE = `${f.config.tableName}-missing`;
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    try {
      await expect(sweepHandler({ graceMs: 0 }, plenty)).rejects.toThrow(
        /eve-world-aws sweep: \d+ objects or run prefixes could not be swept \(first: runs\/wrun_\w+\/: .*\)/,
      );
      const summary = JSON.parse(String(info.mock.calls[0][0])) as SweepSummary;
      expect(summary.failures).toBeGreaterThan(0);
      expect(summary.failed[0].error).toMatch(/not found|non-existent|ResourceNotFound/i);
    } finally {
      info.mockRestore();
      // The fixture names its table by EVE_WORLD_AWS_PREFIX only.
      delete process.env.EVE_WORLD_AWS_TABLE;
    }
    // Nothing of the run was deleted: a run whose reads fail keeps its objects.
    expect(await objectsUnder(`runs/${runId}/`)).toContain(orphan);
  });

  it('a signal aborted mid-sweep starts no further run; the next sweep continues where it stopped', async () => {
    const runs = await Promise.all(Array.from({ length: 10 }, () => finishedRun()));
    const orphans = await Promise.all(runs.map((r) => plantOrphan(r.runId)));
    const abort = new AbortController();
    const first = await sweepOrphans(ctx, {
      graceMs: 0,
      signal: abort.signal,
      onProgress: () => abort.abort(), // "the deadline" arrives as the first run prefix is done
    });
    expect(first.stopped).toBe(true);
    expect(first.failures).toEqual([]);
    // Only the runs already in progress finished (4 at a time), out of every prefix in the bucket.
    expect(first.runs.scanned).toBeGreaterThanOrEqual(1);
    expect(first.runs.scanned).toBeLessThanOrEqual(4);
    const left = async () =>
      (await Promise.all(runs.map((r) => objectsUnder(`runs/${r.runId}/`)))).flat().filter((k) => orphans.includes(k));
    const leftAfterFirst = await left();
    expect(leftAfterFirst.length).toBeGreaterThan(0);
    // Each of these runs the stopped sweep finished is marked clean (tomorrow skips it).
    const finished = runs.filter((_r, i) => !leftAfterFirst.includes(orphans[i]));
    for (const r of finished) expect(await sweptMark(r.runId), r.runId).toBeDefined();

    const second = await sweepOrphans(ctx, { graceMs: 0 });
    expect(second.stopped).toBe(false);
    expect(second.objects.orphans).toBeGreaterThanOrEqual(leftAfterFirst.length);
    expect(await left()).toEqual([]);
    for (const r of runs) expect(await sweptMark(r.runId), r.runId).toBeDefined();
  });

  it('rejects an event option of the wrong type instead of guessing', async () => {
    await expect(sweepHandler({ graceMs: '0' }, plenty)).rejects.toThrow(/graceMs must be a number/);
    await expect(sweepHandler({ dryRun: 'yes' }, plenty)).rejects.toThrow(/dryRun must be true or false/);
  });

  it('sends exactly the commands of the `sweeper` rows of the IAM command table', async () => {
    const { runId } = await finishedRun({ keptHook: true });
    await plantOrphan(runId);
    await ctx.payloads.putBlob(`${HELD_BODY_PREFIX}msg_cov/${Math.floor(Date.now() / 1000) - 60}`, big());
    const sent = new Set<string>();
    const clients = await recordingClients(sent);
    try {
      const handler = createSweepHandler({ context: createContext(f.config, clients), logger: silent() });
      const out = await handler({ graceMs: 0, recheck: true }, plenty);
      expect(out.objects.orphans).toBeGreaterThanOrEqual(1);
      // The same function's backstop tick (src/backstop/), with checks due: the finished run's item
      // is deleted, and a run that owes its start (created, never started) gets a wake.
      const owing = await startedRun(storage);
      await storage.events.create(owing, { eventType: 'run_cancelled', specVersion: sv });
      await storage.events.create(null, {
        eventType: 'run_created',
        specVersion: sv,
        eventData: { deploymentId: 'd', workflowName: 'wf', input: new Uint8Array([1]) },
      } as never);
      const tick = createSweepHandler({
        context: createContext({ ...f.config, backstopSeconds: 1 }, clients),
        logger: silent(),
      });
      // Two ticks a second apart: the first records the stuck run's tail, the second finds it quiet.
      await new Promise((r) => setTimeout(r, 1100));
      const first = await tick({ backstop: true }, plenty);
      expect(first.failed).toBe(0);
      await new Promise((r) => setTimeout(r, 1100));
      const second = await tick({ backstop: true }, plenty);
      expect(first.deleted + second.deleted).toBeGreaterThanOrEqual(1);
      expect(first.woken + second.woken).toBeGreaterThanOrEqual(1);
    } finally {
      destroyClients(clients);
    }
    // KMS rows apply only with a key (none here).
    const rows = COMMAND_PERMISSIONS.filter((p) => p.uses.sweeper && !p.command.startsWith('kms:')).map(
      (p) => p.command,
    );
    const missing = [...sent].filter((c) => !permissionFor(c)?.uses.sweeper);
    expect(missing, 'sent by the sweep without a sweeper row in src/provision/iam-actions.ts').toEqual([]);
    // And no row grants the sweeper a command it never sends (least privilege, both ways).
    expect([...sent].sort()).toEqual([...rows].sort());
  });
});

function silent() {
  return { info: () => {}, warn: () => {}, error: () => {} };
}
