/**
 * Retired means retired, and the operator sees the truth (issue 39), in the in-process shape: two
 * builds (A, B) of one workflow, one consumer process each, on a table with deployment affinity.
 *
 * - `deployments retire A` refuses while A's process counts heartbeats (exit 1, no write).
 * - `deployments retire A --force` names the runs it fails (A's two runs parked on their hooks)
 *   before it writes; A's process learns it from its own heartbeat's answer (it logs it), and
 *   no start is accepted there after the retirement (`DeploymentRetiredError`, no run written).
 * - A's listed runs, resumed, fail with `DEPLOYMENT_MISMATCH` once each, with only their first step
 *   run (never a body on B's code); B's runs started before and after are untouched; nothing is
 *   dead-lettered.
 * - B's process SIGKILLed: the next `deployments` listing shows it without a live consumer, and
 *   `doctor` warns of B's waiting run.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetQueueUrlCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, expect, test } from 'vitest';
import { setWorld } from 'workflow/runtime';
import { readDeployment } from '../../src/deployment/registry.js';
import { createWorld } from '../../src/index.js';
import { createFixture } from '../helpers/aws.js';
import { type Build, buildCurrent, removeBuild } from '../helpers/builds.js';
import { runCli } from '../helpers/cli.js';
import { stopChildren } from '../helpers/faults-suite.js';
import {
  bodiesOf,
  buildOrderedApp,
  type OrderedChild,
  spawnOrderedChild,
  WORKFLOW_FILE,
} from '../helpers/ordered-app.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const scratch = path.join(root, 'node_modules', '.cache', 'eve-world-aws', `fleet-retire-${process.pid}`);

const children: ChildProcess[] = [];
const builds: Build[] = [];
afterAll(async () => {
  await stopChildren(children);
  for (const b of builds) removeBuild(b);
  rmSync(scratch, { recursive: true, force: true });
});

async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`gave up waiting (${limitMs / 1000} s) for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('retire refuses a running deployment; --force names its runs first, its process learns it and starts nothing more; a killed consumer is shown dead', async () => {
  const [world, appA, appB] = await Promise.all([
    buildCurrent('fleet-retire'),
    buildOrderedApp(scratch, 'A', ['a', 'b']),
    buildOrderedApp(scratch, 'B', ['b', 'a']),
  ]);
  builds.push(world);
  const fixture = await createFixture({ EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10' }, 'frt');
  const { config, clients } = fixture;
  const init = await runCli(['init', '--deployment-affinity'], fixture.env);
  expect(init.code, init.stderr).toBe(0);
  const reader = createWorld({ config, clients, client: {} });
  const run = (runId: string) => reader.runs.get(runId, { resolveData: 'all' });
  const hookOf = (label: string) => async () =>
    Boolean(await reader.hooks.getByToken(`gate:${label}`).catch(() => undefined));
  setWorld(reader);
  const { getRun } = await import('workflow/api');
  const spawn = async (appDir: string, name: string): Promise<OrderedChild & { deploymentId: string }> => {
    const options = { tuning: { buildDir: path.join(appDir, '.well-known/workflow/v1') } };
    const child = await spawnOrderedChild(
      path.join(here, '..', 'helpers', 'affinity-child.mjs'),
      [world.indexUrl, appDir, WORKFLOW_FILE, JSON.stringify(options)],
      { ...process.env, ...fixture.env },
      children,
      name,
    );
    return { ...child, deploymentId: child.ready[0] as string };
  };
  const a = await spawn(appA, 'A');
  const b = await spawn(appB, 'B');
  const diagnose = (e: unknown) => {
    throw new Error(`${e}\nA:\n${a.output().slice(-3000)}\nB:\n${b.output().slice(-3000)}`);
  };

  // A's runs (which the retirement will fail) and one of B's, parked on their hooks.
  const onA = [await a.start('a0', 'a0'), await a.start('a1', 'a1')];
  const b0 = await b.start('b0', 'b0');
  for (const l of ['a0', 'a1', 'b0']) await waitUntil(`hook gate:${l}`, hookOf(l), 90_000).catch(diagnose);

  // Refused while A's process counts heartbeats.
  const refused = await runCli(['deployments', 'retire', a.deploymentId, '--grace', '0s'], fixture.env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(new RegExp(`a process of deployment ${a.deploymentId} is running`));
  expect((await readDeployment({ config, clients } as never, a.deploymentId, true))?.status).toBe('active');

  // Forced: the runs it fails, first; then retired.
  const forced = await runCli(['deployments', 'retire', a.deploymentId, '--force', '--json'], fixture.env);
  expect(forced.code, forced.stderr).toBe(0);
  const report = JSON.parse(forced.stdout) as { failing: string[]; wasLive: boolean; deployment: { status: string } };
  expect(report).toMatchObject({ wasLive: true, deployment: { status: 'retired' } });
  expect(new Set(report.failing)).toEqual(new Set(onA));

  // A's process learns it from its own heartbeat's answer (it logs it once), and no start is
  // accepted there any more: no run is written.
  const t0 = performance.now();
  await waitUntil(
    "A's heartbeat to answer that it is retired",
    () => a.output().includes(`deployment ${a.deploymentId} is retired: this process starts no more runs`),
    30_000,
  ).catch(diagnose);
  console.log(
    `[fleet-retire] A learnt it ${((performance.now() - t0) / 1000).toFixed(1)} s after the command returned`,
  );
  await expect(a.start('a-after', 'a-after')).rejects.toThrow(/DeploymentRetiredError: deployment \S+ is retired/);
  const afterRetire = (await reader.runs.list({ resolveData: 'none', pagination: { limit: 100 } })).data;
  expect(afterRetire.map((r) => r.runId).sort()).toEqual([...onA, b0].sort());

  // A's listed runs fail once each at their next delivery, whoever resumes them; B's are untouched.
  await a.resume('ra0', 'gate:a0');
  await b.resume('ra1', 'gate:a1');
  const b1 = await b.start('b1', 'b1');
  await waitUntil('hook gate:b1', hookOf('b1'), 90_000).catch(diagnose);
  await b.resume('rb0', 'gate:b0');
  await a.resume('rb1', 'gate:b1');
  await waitUntil(
    'every run to end',
    async () =>
      (await Promise.all([...onA, b0, b1].map(run))).every((r) => r.status !== 'running' && r.status !== 'pending'),
    120_000,
  ).catch(diagnose);
  for (const id of onA) {
    const events = (await reader.events.list({ runId: id, pagination: { limit: 1000 }, resolveData: 'all' })).data;
    const failed = events.filter((e) => e.eventType === 'run_failed');
    expect(failed, `${id}: ${events.map((e) => e.eventType).join(', ')}\nA:\n${a.output().slice(-2000)}`).toHaveLength(
      1,
    );
    expect((failed[0] as { eventData?: { errorCode?: string } }).eventData?.errorCode).toBe('DEPLOYMENT_MISMATCH');
    expect(events.filter((e) => e.eventType === 'step_completed')).toHaveLength(1);
  }
  for (const id of [b0, b1]) expect(await getRun(id).returnValue).toEqual({ build: 'B', order: ['b', 'a'] });
  // No body of A's runs ran on B, and A's second step never ran.
  const bodies = [...bodiesOf(a.output()), ...bodiesOf(b.output())];
  for (const l of ['a0', 'a1'])
    expect(bodies.filter((x) => x.label === l)).toEqual([{ label: l, step: 'a', build: 'A' }]);

  // B killed with a run waiting on it: the next listing and doctor show no live consumer.
  const b2 = await b.start('b2', 'b2');
  await waitUntil('hook gate:b2', hookOf('b2'), 90_000).catch(diagnose);
  b.proc.kill('SIGKILL');
  await new Promise((r) => b.proc.once('exit', r));
  const t1 = performance.now();
  const list = await runCli(['deployments', '--json'], fixture.env);
  const listedIn = (performance.now() - t1) / 1000;
  expect(list.code, list.stderr).toBe(0);
  const rows = (JSON.parse(list.stdout) as { deployments: Array<{ id: string; live: boolean; status: string }> })
    .deployments;
  expect(rows.find((r) => r.id === b.deploymentId)).toMatchObject({ status: 'active', live: false, activeRuns: 1 });
  expect(rows.find((r) => r.id === a.deploymentId)).toMatchObject({ status: 'retired' });
  console.log(`[fleet-retire] the listing after the kill took ${listedIn.toFixed(1)} s (bound: the 12 s window)`);
  const doctor = await runCli(['doctor', '--json'], fixture.env);
  const checks = JSON.parse(doctor.stdout).checks as Array<{ check: string; status: string; fix?: string }>;
  expect(checks.find((c) => c.check === 'deployment affinity')).toMatchObject({ status: 'pass' });
  const deployments = checks.find((c) => c.check === 'deployments');
  expect(deployments).toMatchObject({ status: 'warn' });
  expect(deployments?.fix).toContain(`runs of ${b.deploymentId} wait`);
  expect((await run(b2)).status).toBe('running');

  const dlqUrl = (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: config.deadLetterQueue }))).QueueUrl;
  const dlq = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 1 }));
  expect(dlq.Messages ?? []).toHaveLength(0);
  setWorld(undefined as never);
  await reader.close();
}, 900_000);
