/**
 * Early delivery with its owner paused (SIGSTOP) or killed (SIGKILL) at each step of the protocol
 * (docs/design.md, "Early delivery"), with real workflows on the real `@workflow/core`. The owner
 * is a child process (test/helpers/early-owner-child.mjs on dist/) that starts a `countedSteps`
 * run, delivers its first message early (E) with its receives blind, and holds at a point it
 * prints, so the test acts at that point and not at a time. The copy M goes to another consumer
 * process (test/helpers/faults-consumer-child.mjs), started when the case needs it.
 *
 * Pause: the owner stopped at E's door while M runs the whole run elsewhere, then continued; and
 * stopped inside E's first step body while M is dispatched elsewhere, then continued.
 * Kill: (a) after the offer, before M's SendMessage left (the run has no message: the liveness
 * backstop, B = 5 s, T = 2 s in both processes, wakes it: the DUE item is first due B of the
 * writer of run_created after it); (b) after M was sent, while E runs (held at its first write);
 * (c) after E finished, before M is received.
 * Also: a deferred E (`{ timeoutSeconds }`) whose copy comes back as M; and the known limit of the
 * step lease, a body stopped past its lease, which runs twice (docs/design.md, "Step lease").
 *
 * Each case checks: the run completes with its value, no `run_failed`, one `run_completed`, seven
 * `step_completed`; every step body ran exactly once (a tally file both processes append to),
 * but the known limit's; the DLQ is empty.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { getRun } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { createContext } from '../../src/context/world-context.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createTransport } from '../../src/queue/transport.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { ensureDist, stopChildren } from '../helpers/faults-suite.js';
import { paceNote, scaled } from '../helpers/pace.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const flowPath = path.join(here, 'app', '.well-known', 'workflow', 'v1', 'flow.mjs');
const BACKSTOP = { backstopSeconds: 5, backstopTickSeconds: 2 };

let fixture: Fixture;
/** Reads only: its consumer never starts. */
let reader: AwsWorld;
let scratch: string;
let children: ChildProcess[] = [];

/**
 * Each case spawns one or two processes and runs a workflow across them: minutes on a busy
 * machine. Its margins scale with the measured slowdown (test/helpers/pace.ts).
 */
const CASE = { tags: ['timing'], timeout: scaled(240_000) };

beforeAll(async () => {
  ensureDist(); // here, not in the first case's budget (the global setup has normally built it)
  console.log(`[early-pause-kill] ${paceNote()}`);
  fixture = await createFixture({ EVE_WORLD_AWS_CONCURRENCY: '8' }, 'earlypk');
  scratch = mkdtempSync(path.join(tmpdir(), 'eve-early-pk-'));
  reader = createWorld({ config: fixture.config, clients: fixture.clients });
  setWorld(reader);
});

afterEach(async () => {
  for (const c of children) if (c.signalCode === null && c.exitCode === null) c.kill('SIGCONT');
  await stopChildren(children);
  children = [];
});

afterAll(async () => {
  setWorld(undefined as never);
  await reader?.close();
});

/** A child process whose stdout lines can be awaited. */
interface Proc {
  child: ChildProcess;
  /** The first line (seen so far or to come) matching `re`; rejects if the process exits first. */
  line(re: RegExp): Promise<RegExpExecArray>;
  exited: Promise<void>;
}

function spawnProc(script: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--no-warnings', path.join(here, '..', 'helpers', script), ...args], {
    env: { ...process.env, ...fixture.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let err = '';
  let buf = '';
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts);
    // Shown only when the test fails.
    for (const l of parts) console.log(`[${script} ${child.pid}] ${l}`);
    for (const w of waiters.splice(0)) w();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-10_000);
    console.log(`[${script} ${child.pid} stderr] ${d.toString().slice(0, 2000)}`);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitedFlag = false;
  void exited.then(() => {
    exitedFlag = true;
    for (const w of waiters.splice(0)) w();
  });
  const line = (re: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        for (const l of lines) {
          const m = re.exec(l);
          if (m) return resolve(m);
        }
        if (exitedFlag) return reject(new Error(`${script} exited before a line ${re}: ${err}`));
        waiters.push(check);
      };
      check();
    });
  return { child, line, exited };
}

/** The owner child: starts one countedSteps run under `prefix` and holds at `mode`'s point. */
async function startOwner(
  mode: string,
  prefix: string,
  tally: string,
  goDir: string,
  env: Record<string, string> = {},
): Promise<Proc> {
  const p = spawnProc('early-owner-child.mjs', [ensureDist(), flowPath, tally, mode, prefix, goDir], env);
  await p.line(/^ready$/);
  return p;
}

/** A consumer child on the same queue that prints each delivery it made. */
async function startSurvivor(tally: string, tuning: object = {}): Promise<Proc> {
  const p = spawnProc('faults-consumer-child.mjs', [ensureDist(), flowPath, tally, JSON.stringify(tuning)], {
    EVE_TEST_PRINT_DELIVERIES: '1',
  });
  await p.line(/^ready$/);
  return p;
}

async function waitCompleted(runId: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const run = await reader.runs.get(runId);
      expect(run.status).toBe('completed');
    },
    { timeout: scaled(150_000), interval: 250 },
  );
}

/** Every invariant of a finished case. */
async function check(runId: string, prefix: string, tally: string, ranTwice?: string): Promise<void> {
  await waitCompleted(runId);
  expect(await getRun(runId).returnValue).toBe(3 + (0 + 1 + 2 + 3));
  const types = (await reader.events.list({ runId, pagination: {} })).data.map((e) => e.eventType);
  expect(types).not.toContain('run_failed');
  expect(types.filter((t) => t === 'run_completed')).toHaveLength(1);
  expect(types.filter((t) => t === 'step_completed')).toHaveLength(7);
  // Every step body ran once, in either process: 3 sequential + 4 fanned out.
  const ran = new Map<string, number>();
  for (const l of readFileSync(tally, 'utf8').split('\n').filter(Boolean)) {
    const key = l.split('\t')[0];
    if (key.startsWith(prefix)) ran.set(key, (ran.get(key) ?? 0) + 1);
  }
  expect(ran.size).toBe(7);
  for (const [key, n] of ran) expect(n, key).toBe(key === ranTwice ? 2 : 1);
  const ctx = createContext(fixture.config);
  const dlq = await createTransport(ctx).dlqUrl();
  const left = await ctx.clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: dlq, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 0 }),
  );
  expect(left.Messages ?? []).toEqual([]);
}

function caseFiles(tag: string) {
  const prefix = `${tag}-${Date.now()}`;
  const tally = path.join(scratch, `${tag}.tally`);
  writeFileSync(tally, '');
  const goDir = mkdtempSync(path.join(scratch, `${tag}-go-`));
  return { prefix, tally, goDir };
}

describe('early delivery, its owner paused (SIGSTOP)', () => {
  test("stopped at E's door while M runs the whole run in another process, then continued", CASE, async () => {
    const { prefix, tally, goDir } = caseFiles('pause-entry');
    const survivor = await startSurvivor(tally);
    const owner = await startOwner('pause-entry', prefix, tally, goDir);
    const [, runId] = await owner.line(/^point entry (\S+)$/);
    owner.child.kill('SIGSTOP');
    // M is dispatched elsewhere and runs the run to its end while E's process is stopped.
    await waitCompleted(runId);
    await survivor.line(/^delivered /);
    writeFileSync(path.join(goDir, 'go-entry'), '');
    owner.child.kill('SIGCONT');
    // E then reaches core, which finds the run over; it answers without running a body.
    const [, , status] = await owner.line(/^done (\S+) (\d+) /);
    expect(Number(status)).toBeLessThan(500);
    await check(runId, prefix, tally);
  });

  test("stopped inside E's first step body while M is dispatched elsewhere, then continued", CASE, async () => {
    const { prefix, tally, goDir } = caseFiles('pause-body');
    const owner = await startOwner('pause-body', prefix, tally, goDir);
    const [, key] = await owner.line(/^body (\S+)$/);
    const [, mId, runId] = await owner.line(/^sent (\S+) (\S+)$/);
    owner.child.kill('SIGSTOP');
    // Started now, so E (not M) is the one that took the step.
    const survivor = await startSurvivor(tally);
    // The survivor dispatched M (whatever it answered) while E's body was stopped.
    await survivor.line(new RegExp(`^delivered ${mId} `));
    writeFileSync(path.join(goDir, `go-${key.replaceAll(':', '_')}`), '');
    owner.child.kill('SIGCONT');
    await check(runId, prefix, tally);
  });
});

/** How many times the tally file counts `key`. */
function tallied(tally: string, key: string): number {
  return readFileSync(tally, 'utf8')
    .split('\n')
    .filter((l) => l.split('\t')[0] === key).length;
}

describe('a deferred early delivery', () => {
  test(
    'E answers timeoutSeconds: its copy comes back later as M, attempt 2, in the same process, and the run completes',
    CASE,
    async () => {
      const { prefix, tally, goDir } = caseFiles('deferred');
      // Core answers a workflow delivery with `{ timeoutSeconds }` only off its turbo path (on it,
      // attempt 1 with the run's input, it sends a fresh message instead), when it re-invokes the
      // run: here an inline step's start throttled once. Waits go as messages of their own.
      const owner = await startOwner('deferred', prefix, tally, goDir, { WORKFLOW_TURBO: '0' });
      const [, mId, runId] = await owner.line(/^sent (\S+) (\S+)$/);
      await owner.line(/^throttled step_started$/);
      // E, the first delivery (attempt 1, under its own id), asks to be invoked again later.
      const [, eId, eAnswer] = await owner.line(new RegExp(`^done (\\S+) 200 1 ${runId} (.*)$`));
      expect(eId).not.toBe(mId);
      expect(JSON.parse(eAnswer)).toHaveProperty('timeoutSeconds');
      // Its copy is replaced by one delayed that long, dispatched as M (not E), attempt 2.
      await owner.line(new RegExp(`^done ${mId} 200 2 ${runId} `));
      await check(runId, prefix, tally);
    },
  );
});

describe('a step body stopped past its lease (the known limit, docs/design.md "Step lease")', () => {
  test(
    'E stopped inside a step body until the step runs again elsewhere: the body runs twice, the log stays valid',
    CASE,
    async () => {
      const { prefix, tally, goDir } = caseFiles('pause-past-lease');
      const owner = await startOwner('pause-body', prefix, tally, goDir);
      const [, key] = await owner.line(/^body (\S+)$/);
      const [, , runId] = await owner.line(/^sent (\S+) (\S+)$/);
      owner.child.kill('SIGSTOP');
      // Started now, so E (not M) is the one that took the step.
      await startSurvivor(tally);
      // No heartbeat while stopped: once the lease (15 s at a 30 s visibility) and core's inline
      // ownership (20 s) have run out, core's backstop wake restarts the step in the survivor. Waited
      // for by its effect, the second execution, not by a time.
      await vi.waitFor(() => expect(tallied(tally, key)).toBe(2), { timeout: scaled(150_000), interval: 250 });
      await waitCompleted(runId);
      writeFileSync(path.join(goDir, `go-${key.replaceAll(':', '_')}`), '');
      owner.child.kill('SIGCONT');
      // E's body ends after the run did: its step_completed is refused (the step is terminal), and E
      // answers without failing the run.
      await owner.line(/^done /);
      await check(runId, prefix, tally, key);
    },
  );
});

describe('early delivery, its owner killed (SIGKILL) at each step of the protocol', () => {
  const cases: Array<[string, string, string]> = [
    ['(a) after the offer, before M was sent: the backstop wakes the run', 'kill-before-send', 'before-send'],
    ['(b) after M was sent, while E runs', 'kill-after-send', 'after-send'],
    ['(c) after E finished, before M is received', 'kill-after-e', 'after-e'],
  ];
  test.each(cases)('%s', CASE, async (_name, mode, pointName) => {
    const { prefix, tally, goDir } = caseFiles(mode);
    // The same B in the owner: the DUE item its run_created writes is first due B after it.
    const owner = await startOwner(mode, prefix, tally, goDir, { EVE_TEST_OWNER_TUNING: JSON.stringify(BACKSTOP) });
    const [, runId] = await owner.line(new RegExp(`^point ${pointName} (\\S+)$`));
    expect(runId).toMatch(/^wrun_/);
    owner.child.kill('SIGKILL');
    await owner.exited;
    await startSurvivor(tally, BACKSTOP);
    await check(runId, prefix, tally);
  });
});
