/**
 * No clock of one process decides whether another's running step is taken over (docs/design.md,
 * "Step lease"; issue 40): a healthy owner runs a long, quiet step while consumer processes whose
 * clocks run 60 s ahead or behind (test/helpers/faults-consumer-child.mjs, EVE_TEST_CLOCK_SKEW_MS,
 * for everything they do) receive every SQS copy of the run's messages and run the liveness
 * backstop. The owner is this process: it starts the run, delivers its first message early and
 * runs the step inline; its receives are blind (SDK middleware), so core's polls of the running
 * step (its inline-ownership wake, the step message it then sends) all reach a skewed consumer,
 * and only they tick the backstop. The skewed consumers start once the body runs here (started
 * before, one could win the run's SQS copy and run the step itself, once).
 *
 * Before the fix, the consumer 60 s ahead took the live lease over at once (its `leaseUntil`, the
 * owner's clock + 15 s, looked long past) and its backstop judged the step stranded: the body ran
 * twice. Now a lease is taken over or revoked only by a process that saw its heartbeat count stand
 * still for the holder's ttl on its own monotonic clock.
 *
 * Each case holds the step open until a skewed consumer's backstop has watched the step's lease in
 * a check of the quiet run and seen the holder heartbeat (its debug line "the lease of step <id>
 * is live (heartbeat"), then lets the body finish, and checks: the run completes with its value,
 * the body ran once, one `step_started`, no lease revoked and no backstop wake for a stranded step
 * (a wake for a replay the run owes may come: its first delivery, still running the step, has not
 * acknowledged one), and the skewed consumers did try to start the running step meanwhile (their
 * `delivered <id> <status> <runId> <stepId>` lines). The checkers' backstop is shortened
 * (B = 2 s, T = 1 s) for each direction alone, and at its defaults (B = 60 s, T = 30 s) with both
 * at once; the owner writes each run's DUE item with B = 2 s (the first check), the checkers set
 * every later one.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import type { WorldTuning } from '../../src/config/index.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { ensureDist, stopChildren } from '../helpers/faults-suite.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, 'app', '.well-known', 'workflow', 'v1');
type FlowPost = (req: Request) => Promise<Response>;

const SHORT = { backstopSeconds: 2, backstopTickSeconds: 1 };
const DEFAULTS = { backstopSeconds: 60, backstopTickSeconds: 30 };

let fixture: Fixture;
let scratch: string;
let children: ChildProcess[] = [];
let owner: AwsWorld;
let workflows: Record<string, { workflowId: string }>;

/**
 * The owner: this process's World for the whole file (core builds its flow route once, with the
 * World it first sees), receives blind, no backstop ticks of its own. It writes each run's DUE
 * item with B = 2 s, so the first check of every case comes early; the checkers' own B decides
 * every later one.
 */
beforeAll(async () => {
  fixture = await createFixture({ EVE_WORLD_AWS_CONCURRENCY: '8' }, 'skew', {
    backstopSeconds: SHORT.backstopSeconds,
    backstopTickSeconds: 0,
  });
  scratch = mkdtempSync(path.join(tmpdir(), 'eve-skew-'));
  workflows = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8')).workflows[
    'workflows/checklist.ts'
  ];
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: FlowPost };
  (globalThis as Record<string, unknown>).__e2eStepTally ??= new Map<string, number>();
  (globalThis as Record<string, unknown>).__e2eGates ??= new Map<string, Promise<void>>();
  fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'ReceiveMessageCommand') {
        await new Promise((r) => setTimeout(r, 200));
        return { output: { Messages: [], $metadata: {} }, response: {} } as never;
      }
      return next(args);
    },
    { step: 'initialize', name: 'testBlindOwner' },
  );
  owner = createWorld({ config: fixture.config, clients: fixture.clients });
  owner.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
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

/** A consumer process with its clock `skewMs` off; its stdout lines are collected. */
function startChild(skewMs: number, tally: string, tuning: object) {
  const script = path.join(here, '..', 'helpers', 'faults-consumer-child.mjs');
  const lines: string[] = [];
  const child = spawn(
    process.execPath,
    ['--no-warnings', script, ensureDist(), path.join(wellKnown, 'flow.mjs'), tally, JSON.stringify(tuning)],
    {
      env: {
        ...process.env,
        ...fixture.env,
        EVE_TEST_CLOCK_SKEW_MS: String(skewMs),
        EVE_TEST_PRINT_DELIVERIES: '1',
        EVE_WORLD_AWS_LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let buf = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-10_000);
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts);
      if (lines.includes('ready')) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`consumer child exited (${code ?? signal}): ${err}`)));
  });
  return { lines, ready, skewMs };
}

async function runCase(
  tag: string,
  skews: number[],
  backstop: Pick<WorldTuning, 'backstopSeconds' | 'backstopTickSeconds'>,
) {
  const tally = path.join(scratch, `${tag}.tally`);
  writeFileSync(tally, '');

  const key = `${tag}-${Date.now()}`;
  const g = globalThis as Record<string, unknown>;
  let open!: () => void;
  (g.__e2eGates as Map<string, Promise<void>>).set(
    key,
    new Promise<void>((r) => {
      open = r;
    }),
  );
  const inProcess = g.__e2eStepTally as Map<string, number>;
  const run = await start(workflows.gated as never, [key]);
  // The body started here (the early delivery runs it inline) and now waits on its gate. The
  // skewed consumers start only now: one already polling could receive the run's SQS copy and
  // start the step first (the body then runs once, there), and the case would test nothing.
  await vi.waitFor(() => expect(inProcess.get(key)).toBe(1), { timeout: 60_000, interval: 100 });
  const consumers = skews.map((skew) => startChild(skew, tally, backstop));
  await Promise.all(consumers.map((c) => c.ready));

  // Hold it until a skewed consumer's backstop watched the step's lease in a check of the quiet
  // run and saw its holder heartbeat.
  const watchedLive = new RegExp(`backstop: run ${run.runId}: the lease of step \\S+ is live \\(heartbeat`);
  const dump = () => {
    for (const c of consumers) console.log(`[consumer ${c.skewMs} ms]\n${c.lines.join('\n')}`);
  };
  try {
    await vi.waitFor(() => expect(consumers.some((c) => c.lines.some((l) => watchedLive.test(l)))).toBe(true), {
      timeout: 240_000,
      interval: 500,
    });
  } catch (err) {
    dump();
    throw err;
  }
  // What each consumer delivered while the body was held (then open the gate).
  const held = consumers.map((c) => c.lines.filter((l) => l.startsWith('delivered ') && l.includes(` ${run.runId} `)));
  open();
  expect(await run.returnValue).toBe(key);

  // Once: here, and never in a skewed consumer.
  const elsewhere = readFileSync(tally, 'utf8')
    .split('\n')
    .filter((l) => l.split('\t')[0] === key);
  expect(inProcess.get(key)).toBe(1);
  expect(elsewhere).toEqual([]);
  const types = (await owner.events.list({ runId: run.runId, pagination: {} })).data.map((e) => e.eventType);
  expect(types.filter((t) => t === 'step_started')).toHaveLength(1);
  expect(types.filter((t) => t === 'step_completed')).toHaveLength(1);
  expect(types.filter((t) => t === 'run_completed')).toHaveLength(1);
  // No lease revoked, no wake for a stranded step (one may wake the run for a replay it owes: its
  // first delivery, still running the step, has not acknowledged one; that replay finds the step
  // running).
  const stranded = new RegExp(`backstop: waking run ${run.runId} \\(wake \\d+\\): step `);
  const revoked = new RegExp(`backstop: run ${run.runId}: the lease of step \\S+ stood still`);
  const bad = consumers.flatMap((c) => c.lines).filter((l) => stranded.test(l) || revoked.test(l));
  if (bad.length > 0) dump();
  expect(bad).toEqual([]);
  return held;
}

describe('a healthy owner with a long quiet step beside consumers whose clocks are skewed: the body runs once', () => {
  /** Deliveries of the run's step message (a start of the running step), answered without running it. */
  const stepStarts = (delivered: string[]) => delivered.filter((l) => / step_\S+$/.test(l));

  test('a consumer 60 s ahead, backstop B = 2 s, T = 1 s', { tags: ['timing'], timeout: 300_000 }, async () => {
    const [ahead] = await runCase('skew-ahead', [60_000], SHORT);
    // Its core took the owner's inline ownership for long expired and sent the step's message at
    // once: it tried to start the running step while the body was held (and was refused: one body).
    expect(stepStarts(ahead).length).toBeGreaterThan(0);
  });

  test('a consumer 60 s behind, backstop B = 2 s, T = 1 s', { tags: ['timing'], timeout: 300_000 }, async () => {
    const [behind] = await runCase('skew-behind', [-60_000], SHORT);
    // It took the run's copy (its core then waits out the owner's inline ownership).
    expect(behind.length).toBeGreaterThan(0);
  });

  test('consumers 60 s ahead and 60 s behind at once, backstop at its defaults (B = 60 s, T = 30 s)', {
    tags: ['timing'],
    timeout: 400_000,
  }, async () => {
    const [ahead, behind] = await runCase('skew-defaults', [60_000, -60_000], DEFAULTS);
    expect(stepStarts([...ahead, ...behind]).length).toBeGreaterThan(0);
  });
});
