/**
 * The owner of a run killed inside an inline step: a consumer process (test/helpers/
 * faults-consumer-child.mjs on dist/) takes the run's first delivery and runs its step inline, in
 * that delivery; the step body never finishes there (EVE_TEST_HANG_STEP_PREFIX) and the process is
 * SIGKILLed inside it. This process, the survivor, starts consuming only then, with the liveness
 * backstop at B = 2 s, T = 1 s and a 5 s consumer visibility, and completes the run.
 *
 * The contract (core re-runs a step whose owner died): the body ran once in the dead owner and
 * exactly once more here; the run's output is the step's; its log has one `step_completed` and one
 * `run_completed`, with dense slots.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventIdToSlot } from '@workflow/world';
import { afterAll, expect, test, vi } from 'vitest';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { consoleLogger } from '../../src/telemetry/log.js';
import { createFixture } from '../helpers/aws.js';
import { BackstopTally } from '../helpers/faults-backstop.js';
import { ensureDist, stopChildren } from '../helpers/faults-suite.js';
import { paceNote, scaled } from '../helpers/pace.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, 'app', '.well-known', 'workflow', 'v1');
const TUNING = { backstopSeconds: 2, backstopTickSeconds: 1, consumerVisibilitySeconds: 5 };

let child: ChildProcess | undefined;
let world: AwsWorld | undefined;
afterAll(async () => {
  if (child) await stopChildren([child]);
  setWorld(undefined as never);
  await world?.close();
});

test('the owner is SIGKILLed inside an inline step: the survivor completes the run, the body ran once more', {
  tags: ['timing'],
  timeout: scaled(120_000),
}, async () => {
  console.log(`[owner killed] ${paceNote()}`);
  const fixture = await createFixture({ EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10' }, 'bko', TUNING);
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  const workflows = manifest.workflows['workflows/checklist.ts'] as Record<string, { workflowId: string }>;
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: (r: Request) => Promise<Response> };
  const key = `owner-killed-${Date.now()}`;

  // The owner: a consumer process in which this key's step body hangs.
  const dir = mkdtempSync(path.join(tmpdir(), 'eve-bko-'));
  const tallyFile = path.join(dir, 'tally.txt');
  writeFileSync(tallyFile, '');
  const owner = spawn(
    process.execPath,
    [
      '--no-warnings',
      path.join(here, '..', 'helpers', 'faults-consumer-child.mjs'),
      ensureDist(),
      path.join(wellKnown, 'flow.mjs'),
      tallyFile,
      JSON.stringify(TUNING),
    ],
    { env: { ...process.env, ...fixture.env, EVE_TEST_HANG_STEP_PREFIX: key }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = owner;
  let stderr = '';
  owner.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  await new Promise<void>((resolve, reject) => {
    owner.stdout?.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    owner.once('exit', (code, signal) => reject(new Error(`owner exited before ready (${code ?? signal}): ${stderr}`)));
  });

  // The survivor sends the start (no consumer yet, no early delivery: the owner takes the delivery).
  const backstop = new BackstopTally();
  world = createWorld({
    config: fixture.config,
    clients: fixture.clients,
    consumer: { earlyDelivery: false, logger: backstop.logger(consoleLogger) },
  });
  world.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
  setWorld(world);
  const run = await start(workflows.gated as never, [key]);

  // The owner is inside the body: kill it there.
  const ownerRuns = () =>
    readFileSync(tallyFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith(`${key}\t`));
  await vi.waitFor(() => expect(ownerRuns()).toHaveLength(1), { timeout: scaled(30_000), interval: 25 });
  expect(Number(ownerRuns()[0].split('\t')[1])).toBe(owner.pid);
  const steps = await world.steps.list({ runId: run.runId, pagination: {} });
  expect(steps.data.map((s) => s.status)).toEqual(['running']);
  owner.kill('SIGKILL');
  await new Promise<void>((resolve) => {
    if (owner.exitCode !== null || owner.signalCode !== null) resolve();
    else owner.once('exit', () => resolve());
  });
  child = undefined;

  // The survivor consumes from now on.
  await world.start();
  expect(await run.returnValue).toBe(key);

  const tally = (globalThis as Record<string, unknown>).__e2eStepTally as Map<string, number> | undefined;
  expect(ownerRuns()).toHaveLength(1);
  expect(tally?.get(key)).toBe(1);
  const events = (await world.events.list({ runId: run.runId, pagination: { limit: 1000 }, resolveData: 'none' })).data;
  const types = events.map((e) => e.eventType);
  console.log(`[owner killed] events: ${types.join(' ')}; backstop wakes: ${backstop.wakes}`);
  expect(events.map((e) => eventIdToSlot(e.eventId))).toEqual(events.map((_, i) => i + 1));
  expect(types.filter((t) => t === 'step_created')).toHaveLength(1);
  // Started by the owner, and again here after the owner died.
  expect(types.filter((t) => t === 'step_started')).toHaveLength(2);
  expect(types.filter((t) => t === 'step_completed')).toHaveLength(1);
  expect(types.filter((t) => t === 'step_failed')).toHaveLength(0);
  expect(types.filter((t) => t === 'run_completed')).toHaveLength(1);
  expect(types[types.length - 1]).toBe('run_completed');
  expect((await world.steps.list({ runId: run.runId, pagination: {} })).data.map((s) => s.status)).toEqual([
    'completed',
  ]);
});
