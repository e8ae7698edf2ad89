/**
 * Early delivery across processes (docs/design.md, "Early delivery"), with real workflows on the
 * real `@workflow/core`. The test process is the owner: it starts the runs, and its queue delivers
 * each run message early under its own id E. Its receives are blind (SDK middleware), so every SQS
 * copy M goes to a consumer child process on the same queue (test/helpers/faults-consumer-child.mjs
 * on dist/), which dispatches it at once, beside the early delivery: for core another invocation of
 * the run. Nothing in that relies on a clock or on a write arriving in time, which the cases vary:
 * the child's clock skewed (+31 s, -31 s, +10 min, for everything it does) and the owner's first
 * log write after a start stalled for 16 s.
 *
 * Each case checks: every run completes with its value and no `run_failed`; the DLQ is empty; no
 * SQS message the owner sent carries an id it delivered early; every step body ran once; and the
 * table holds no `EARLY#` item (the records of the previous design).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { resumeHook, start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { currentDelivery } from '../../src/context/delivery-scope.js';
import { createContext } from '../../src/context/world-context.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createTransport } from '../../src/queue/transport.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { ensureDist, stopChildren } from '../helpers/faults-suite.js';
import { paceNote, scaled } from '../helpers/pace.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, 'app', '.well-known', 'workflow', 'v1');
type FlowPost = (req: Request) => Promise<Response>;

let fixture: Fixture;
let owner: AwsWorld;
let workflows: Record<string, { workflowId: string }>;
let scratch: string;
/** Ids of the deliveries the owner's flow route saw: with its receives blind, all early ones. */
const earlyIds = new Set<string>();
/** Message ids (`eve.id`) of every SendMessage the owner made. */
const sentIds = new Set<string>();
/** When set, the owner's next TransactWriteItems inside a delivery waits this long (once). */
const stall = { nextMs: 0, stalled: 0 };
let children: ChildProcess[] = [];

beforeAll(async () => {
  ensureDist(); // here, not in the first case's budget (the global setup has normally built it)
  fixture = await createFixture({ EVE_WORLD_AWS_CONCURRENCY: '8' }, 'early');
  scratch = mkdtempSync(path.join(tmpdir(), 'eve-early-'));
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  workflows = manifest.workflows['workflows/checklist.ts'];
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: FlowPost };
  const { sqs, ddb } = fixture.clients;
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName;
      if (name === 'ReceiveMessageCommand') {
        // Blind: every copy goes to the child.
        await new Promise((r) => setTimeout(r, 200));
        return { output: { Messages: [], $metadata: {} }, response: {} } as never;
      }
      if (name === 'SendMessageCommand') {
        const attrs = (args as { input: { MessageAttributes?: Record<string, { StringValue?: string }> } }).input
          .MessageAttributes;
        sentIds.add(attrs?.['eve.id']?.StringValue ?? '?');
      }
      return next(args);
    },
    { step: 'initialize', name: 'testBlindOwner' },
  );
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName;
      // A write inside a delivery: with the owner's receives blind, an early delivery's.
      if (name === 'TransactWriteItemsCommand' && stall.nextMs > 0 && currentDelivery() !== undefined) {
        const ms = stall.nextMs;
        stall.nextMs = 0;
        stall.stalled++;
        await new Promise((r) => setTimeout(r, ms));
      }
      return next(args);
    },
    { step: 'initialize', name: 'testStallOwnerWrite' },
  );
  (globalThis as Record<string, unknown>).__e2eStepTally = new Map<string, number>();
  owner = createWorld({ config: fixture.config, clients: fixture.clients });
  owner.registerHandler('__wkf_workflow_', (req) => {
    earlyIds.add(req.headers.get('x-vqs-message-id') ?? '?');
    return flow.POST(req);
  });
  setWorld(owner);
  await owner.start();
});

afterEach(async () => {
  await stopChildren(children);
  children = [];
});

afterAll(async () => {
  setWorld(undefined as never);
  await owner?.close();
});

/** A consumer child process on the same queue, its clock `skewMs` off; resolves once it consumes. */
function startChild(skewMs: number, tallyFile: string): Promise<ChildProcess> {
  const script = path.join(here, '..', 'helpers', 'faults-consumer-child.mjs');
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--no-warnings', script, ensureDist(), path.join(wellKnown, 'flow.mjs'), tallyFile, '{}'],
      {
        env: { ...process.env, ...fixture.env, EVE_TEST_CLOCK_SKEW_MS: String(skewMs) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    let err = '';
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-10_000);
    });
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(child);
    });
    child.once('exit', (code, signal) => reject(new Error(`consumer child exited (${code ?? signal}): ${err}`)));
  });
}

async function eventTypes(runId: string): Promise<string[]> {
  const evs = (await owner.events.list({ runId, pagination: {} })).data;
  return evs.map((e) => e.eventType);
}

/** Runs a counted workflow and a hook workflow with the child consuming, and checks every invariant. */
async function runAndCheck(tag: string, skewMs: number, before?: () => void): Promise<void> {
  const tallyFile = path.join(scratch, `${tag}.tally`);
  writeFileSync(tallyFile, '');
  await startChild(skewMs, tallyFile);
  const prefix = `${tag}-${Date.now()}`;
  before?.();
  const counted = await start(workflows.countedSteps as never, [prefix, 3]);
  const token = `${prefix}-tok`;
  const hooked = await start(workflows.hookCollector as never, [token, 2]);
  await vi.waitFor(async () => expect(await owner.hooks.getByToken(token)).toBeTruthy(), {
    timeout: scaled(60_000),
    interval: 200,
  });
  await resumeHook(token, { value: 1 });
  await resumeHook(token, { value: 2 });
  expect(await counted.returnValue).toBe(3 + (0 + 1 + 2 + 3));
  expect(await hooked.returnValue).toEqual([1, 2]);

  for (const runId of [counted.runId, hooked.runId]) {
    const types = await eventTypes(runId);
    expect(types).not.toContain('run_failed');
    expect(types.filter((t) => t === 'run_completed')).toHaveLength(1);
  }
  // Early deliveries happened, and no SQS message the owner sent carries an early delivery's id.
  expect(earlyIds.size).toBeGreaterThan(0);
  expect([...earlyIds].filter((id) => sentIds.has(id))).toEqual([]);
  // Every step body ran once, in either process: 3 sequential + 4 fanned out.
  const inProcess = (globalThis as Record<string, unknown>).__e2eStepTally as Map<string, number>;
  const ran = new Map<string, number>();
  for (const [k, n] of inProcess) if (k.startsWith(prefix)) ran.set(k, (ran.get(k) ?? 0) + n);
  for (const line of readFileSync(tallyFile, 'utf8').split('\n').filter(Boolean)) {
    const key = line.split('\t')[0];
    if (key.startsWith(prefix)) ran.set(key, (ran.get(key) ?? 0) + 1);
  }
  expect(ran.size).toBe(7);
  for (const [key, n] of ran) expect(n, key).toBe(1);
  // Nothing dead-lettered, and no record of the previous design's protocol.
  // (Read with clients of its own: the owner's receives are blind.)
  const ctx = createContext(fixture.config);
  const dlq = await createTransport(ctx).dlqUrl();
  const left = await ctx.clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: dlq, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 0 }),
  );
  expect(left.Messages ?? []).toEqual([]);
  const early = await fixture.clients.ddb.send(
    new ScanCommand({
      TableName: fixture.config.tableName,
      FilterExpression: 'begins_with(PK, :p)',
      ExpressionAttributeValues: { ':p': { S: 'EARLY#' } },
    }),
  );
  expect(early.Items ?? []).toEqual([]);
}

/** Each case starts a consumer process and runs two workflows across both: minutes on a busy machine. */
const CASE = { tags: ['timing'], timeout: scaled(240_000) };

describe('early delivery across processes, no clock and no deadline in its safety', () => {
  test('the other consumer 31 s ahead', CASE, async () => {
    console.log(`[early-processes] ${paceNote()}`);
    await runAndCheck('ahead31', 31_000);
  });

  test('the other consumer 31 s behind', CASE, async () => {
    await runAndCheck('behind31', -31_000);
  });

  test('the other consumer 10 min ahead', CASE, async () => {
    await runAndCheck('ahead600', 600_000);
  });

  test("the owner's first log write in an early delivery stalled 16 s", CASE, async () => {
    let before = 0;
    await runAndCheck('stalled', 0, () => {
      before = stall.stalled;
      stall.nextMs = 16_000;
    });
    expect(stall.stalled).toBeGreaterThan(before);
  });
});
