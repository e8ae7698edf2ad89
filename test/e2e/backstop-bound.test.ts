/**
 * The liveness backstop at its default settings (B = `backstopSeconds` 60 s, T =
 * `backstopTickSeconds` 30 s), without waiting minutes: the ticks are driven with an injected
 * `now` against real DynamoDB Local (docs/operations.md, "Liveness backstop", Bound and Cost).
 *
 * - Bound: a run whose wake was removed by hand (its SendMessage swallowed) is not woken by a tick
 *   at its last commit + B - 1 s, and is woken by a tick of a T-periodic ticker, whatever its phase,
 *   at or before its last commit + 2 (B + T) (3 minutes at the defaults), also in the worst case: a
 *   check set before the last commit (the first check sees the log moved, the second wakes).
 * - Cost: an idle tick makes exactly 16 DynamoDB Queries (one per index shard) and nothing else;
 *   a check of an active run, of a quiet run owing work and of an idle run make the requests the
 *   docs state.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeleteItemCommand, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { runBackstopTick } from '../../src/backstop/index.js';
import { createContext, type WorldContext } from '../../src/context/world-context.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createQueue } from '../../src/queue/index.js';
import { keys, LIST_SHARDS } from '../../src/schema/keys.js';
import { createFixture, type Fixture } from '../helpers/aws.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, 'app', '.well-known', 'workflow', 'v1');
const docs = readFileSync(path.join(here, '..', '..', 'docs', 'operations.md'), 'utf8');

let fixture: Fixture;
let world: AwsWorld;
let ctx: WorldContext;
let workflows: Record<string, { workflowId: string }>;
/** SDK calls by command name, on both clients. */
const calls = new Map<string, number>();

beforeAll(async () => {
  // The defaults: no tuning.
  fixture = await createFixture({}, 'bsb');
  // Every run's message is swallowed (the wake removed by hand): SQS answers as for an accepted one.
  fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName ?? '';
      calls.set(name, (calls.get(name) ?? 0) + 1);
      if (name !== 'SendMessageCommand') return next(args);
      return { output: { MessageId: randomUUID(), $metadata: { httpStatusCode: 200 } }, response: {} } as never;
    },
    { step: 'initialize', name: 'backstopBoundSqs' },
  );
  fixture.clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName ?? '';
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'backstopBoundDdb' },
  );
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  workflows = manifest.workflows['workflows/checklist.ts'];
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: (r: Request) => Promise<Response> };
  // No poller and so no in-process ticker: only this test's ticks run.
  world = createWorld({
    config: fixture.config,
    clients: fixture.clients,
    consumer: { consumer: 'none', earlyDelivery: false },
  });
  world.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
  await world.start();
  setWorld(world);
  ctx = createContext(fixture.config, fixture.clients);
});
afterAll(async () => {
  setWorld(undefined as never);
  await world?.close();
});

const B = 60_000;
const T = 30_000;

/** A backstop tick at `now` whose wakes are recorded, not sent. */
async function tickAt(now: number, woken: string[]) {
  return runBackstopTick(ctx, {
    now: () => now,
    logger: { info: () => {}, warn: () => {}, error: () => {} },
    sender: {
      queue: async (_q: unknown, p: unknown) => {
        woken.push((p as { runId: string }).runId);
        return { messageId: null };
      },
    } as never,
  });
}

async function readDue(runId: string): Promise<{ dueAt: number; seenSlot: number; wakes: number } | undefined> {
  const out = await fixture.clients.ddb.send(
    new GetItemCommand({
      TableName: fixture.config.tableName,
      Key: { PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } },
      ConsistentRead: true,
    }),
  );
  if (!out.Item) return undefined;
  return {
    dueAt: Number(out.Item.dueAt.N),
    seenSlot: Number(out.Item.seenSlot?.N ?? -1),
    wakes: Number(out.Item.wakes?.N ?? 0),
  };
}

const workflowNames = new Map<string, string>();
const workflowNameOf = (runId: string) => workflowNames.get(runId) ?? '?';

/** A run whose first message was swallowed: it owes its start, nothing will wake it. */
async function strandedRun(): Promise<{ runId: string; committedAt: number }> {
  const run = await start(workflows.addition as never, [1, 2]);
  workflowNames.set(run.runId, (await world.runs.get(run.runId)).workflowName);
  const due = await readDue(run.runId);
  expect(due).toBeDefined();
  // `run_created` puts the check at its commit + B (the writer's clock).
  return { runId: run.runId, committedAt: due!.dueAt - B };
}

/** The item as a check set before the last commit leaves it: due at that commit + B, the log moved since. */
async function checkSetBeforeLastCommit(runId: string, dueAt: number): Promise<void> {
  await fixture.clients.ddb.send(
    new UpdateItemCommand({
      TableName: fixture.config.tableName,
      Key: { PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } },
      UpdateExpression: 'SET seenSlot = :s',
      ConditionExpression: 'dueAt = :d',
      ExpressionAttributeValues: { ':s': { N: '0' }, ':d': { N: String(dueAt) } },
    }),
  );
}

describe('the bound at the defaults (B = 60 s, T = 30 s)', () => {
  it('the defaults and the docs state the same bound: 2 (B + T) = 3 minutes in-process', () => {
    expect(fixture.config.backstopSeconds * 1000).toBe(B);
    expect(fixture.config.backstopTickSeconds * 1000).toBe(T);
    expect(docs).toContain('**2 (B + T)**');
    expect(2 * (B + T)).toBe(3 * 60_000);
    expect(docs).toMatch(/B = 60 s[\s\S]*T = 30 s[\s\S]*3 minutes/);
  });

  it('a stranded run is not woken at its commit + B - 1 s, and is woken at once at its commit + B', async () => {
    const { runId, committedAt } = await strandedRun();
    const woken: string[] = [];
    await tickAt(committedAt + B - 1000, woken);
    expect(woken).not.toContain(runId);
    expect((await readDue(runId))?.wakes).toBe(0);
    await tickAt(committedAt + B, woken);
    expect(woken.filter((id) => id === runId)).toHaveLength(1);
    // The next check backs off by B from the waking tick.
    expect(await readDue(runId)).toMatchObject({ dueAt: committedAt + 2 * B, wakes: 1 });
  }, 60_000);

  for (const phase of [0, 1, T / 2, T - 1000, T - 1]) {
    it(`worst case (a check set before the last commit), ticks every T at phase ${phase} ms: woken within 2 (B + T)`, async () => {
      const { runId, committedAt } = await strandedRun();
      await checkSetBeforeLastCommit(runId, committedAt + B);
      const woken: string[] = [];
      let wokenAt: number | undefined;
      for (let now = committedAt + phase; now <= committedAt + 2 * (B + T) + T; now += T) {
        await tickAt(now, woken);
        if (now < committedAt + B) expect(woken).not.toContain(runId);
        if (woken.includes(runId)) {
          wokenAt = now;
          break;
        }
      }
      expect(wokenAt, 'the run was never woken').toBeDefined();
      expect(wokenAt! - committedAt).toBeGreaterThanOrEqual(2 * B);
      expect(wokenAt! - committedAt).toBeLessThanOrEqual(2 * (B + T));
      expect(woken.filter((id) => id === runId)).toHaveLength(1);
    }, 60_000);
  }
});

describe('where the wake goes', () => {
  it("to the app's namespace queue (config.queueNamespace), for the run's own deployment", async () => {
    const { runId, committedAt } = await strandedRun();
    const deploymentId = (await world.runs.get(runId)).deploymentId;
    expect(deploymentId).toBeTruthy();
    const sends: Array<{ queue: string; runId: string; opts: unknown }> = [];
    const nsCtx = createContext({ ...fixture.config, queueNamespace: 'bsns' }, fixture.clients);
    await runBackstopTick(nsCtx, {
      now: () => committedAt + B,
      logger: { info: () => {}, warn: () => {}, error: () => {} },
      sender: {
        queue: async (queue: string, p: unknown, opts: unknown) => {
          sends.push({ queue, runId: (p as { runId: string }).runId, opts });
          return { messageId: null };
        },
      } as never,
    });
    const mine = sends.filter((x) => x.runId === runId);
    expect(mine).toEqual([{ queue: `__bsns_wkf_workflow_${workflowNameOf(runId)}`, runId, opts: { deploymentId } }]);
    // Out of the later tests' ticks (they count one run's requests).
    await fixture.clients.ddb.send(
      new DeleteItemCommand({
        TableName: fixture.config.tableName,
        Key: { PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } },
      }),
    );
  }, 60_000);
});

describe('what the backstop costs (the numbers docs/operations.md states)', () => {
  it('an idle tick (no runs due): one Query per index shard, 16, and nothing else', async () => {
    // A fresh table with no runs; the tick's own queue sender (the production default).
    const idle = await createFixture({}, 'bsi');
    const counted = new Map<string, number>();
    for (const client of [idle.clients.ddb, idle.clients.sqs] as const)
      (client.middlewareStack as typeof fixture.clients.ddb.middlewareStack).add(
        (next, context) => async (args) => {
          const name = (context as { commandName?: string }).commandName ?? '';
          counted.set(name, (counted.get(name) ?? 0) + 1);
          return next(args);
        },
        { step: 'initialize', name: 'backstopIdleCount' },
      );
    const report = await runBackstopTick(createContext(idle.config, idle.clients), {
      logger: { info: () => {}, warn: () => {}, error: () => {} },
    });
    expect(report).toMatchObject({ due: 0, checked: 0, woken: 0 });
    expect(LIST_SHARDS).toBe(16);
    expect(Object.fromEntries(counted)).toEqual({ QueryCommand: 16 });
    expect(docs).toContain('16 Queries per tick');
  }, 60_000);

  it('per check: an active run 2 UpdateItems + 1 Query; a quiet run owing work + 3 Queries + 1 SendMessage', async () => {
    const { runId, committedAt } = await strandedRun();
    await checkSetBeforeLastCommit(runId, committedAt + B);
    const woken: string[] = [];
    // Active (the log moved since the check was set): the fence, the head read, the move.
    calls.clear();
    await tickAt(committedAt + B, woken);
    expect(woken).not.toContain(runId);
    expect(Object.fromEntries(calls)).toEqual({ QueryCommand: LIST_SHARDS + 1, UpdateItemCommand: 2 });
    // Quiet since, owing its start: + its unacknowledged events, steps and waits, and the wake.
    // A real queue sender this time, as the in-process ticker keeps one (its queue URL looked up
    // once per process): the SendMessage is counted (and swallowed).
    const sender = createQueue(ctx);
    await sender.transport.queueUrl();
    calls.clear();
    const report = await runBackstopTick(ctx, {
      sender,
      now: () => committedAt + 2 * B,
      logger: { info: () => {}, warn: () => {}, error: () => {} },
    });
    expect(report).toMatchObject({ checked: 1, woken: 1 });
    expect(Object.fromEntries(calls)).toEqual({
      QueryCommand: LIST_SHARDS + 4,
      UpdateItemCommand: 2,
      SendMessageCommand: 1,
    });
  }, 60_000);
});
