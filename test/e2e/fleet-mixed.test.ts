/**
 * A fleet that cannot disagree with itself (issue 39, "the table decides", "operators see the
 * truth"), in the in-process shape: two builds of one workflow whose code differs (A runs its steps
 * a then b, B b then a), served by consumer processes of this checkout's World on one table and
 * one queue, each process set up differently, as a real fleet drifts:
 *
 * - A1 with EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on, A2 with no such variable, started before the
 *   table had affinity at all (it joins at its next heartbeat), B1 with the variable `off`.
 *
 * The table is given affinity by `init --deployment-affinity` (the built CLI), after A2 is up.
 * Every replica takes part: every run on every replica finishes on its own build's code, every
 * step body ran in a process of the run's own build, none fails, nothing is dead-lettered.
 *
 * Then the CLI's `start` (with the variable `on` in the operator's shell, as in the issue): the
 * run goes to the newest deployment with a live consumer and completes; the CLI registers no
 * deployment of its own; and `latest` never picks a deployment without a live consumer (a
 * registered one that never beats, or B once SIGKILLed).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetQueueUrlCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, expect, test } from 'vitest';
import { setWorld } from 'workflow/runtime';
import { listDeployments, registerDeployment } from '../../src/deployment/registry.js';
import { createWorld } from '../../src/index.js';
import { readTableFormat } from '../../src/preflight/format-check.js';
import { AFFINITY_MIN_READER } from '../../src/schema/formats.js';
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
const scratch = path.join(root, 'node_modules', '.cache', 'eve-world-aws', `fleet-mixed-${process.pid}`);

const children: ChildProcess[] = [];
const builds: Build[] = [];
afterAll(async () => {
  await stopChildren(children);
  for (const b of builds) removeBuild(b);
  rmSync(scratch, { recursive: true, force: true });
});

interface Replica extends OrderedChild {
  name: string;
  build: 'A' | 'B';
  deploymentId: string;
}

async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`gave up waiting (${limitMs / 1000} s) for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('replicas set up three ways on one table all take part: no run fails, no body runs on another build; the CLI starts on a live deployment and registers none', async () => {
  const [world, appA, appB] = await Promise.all([
    buildCurrent('fleet-mixed'),
    buildOrderedApp(scratch, 'A', ['a', 'b']),
    buildOrderedApp(scratch, 'B', ['b', 'a']),
  ]);
  builds.push(world);
  const fixture = await createFixture({ EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10' }, 'fmx');
  const { config, clients } = fixture;
  // `init` without the flag: a table with no affinity, as most start.
  const plain = await runCli(['init'], fixture.env);
  expect(plain.code, plain.stderr).toBe(0);
  const reader = createWorld({ config, clients, client: {} });
  const run = (runId: string) => reader.runs.get(runId, { resolveData: 'all' });
  setWorld(reader);
  const { getRun } = await import('workflow/api');

  const spawnReplica = async (name: string, build: 'A' | 'B', env: Record<string, string>): Promise<Replica> => {
    const appDir = build === 'A' ? appA : appB;
    // Each build's id: the hash of its compiled workflow bundle.
    const options = { tuning: { buildDir: path.join(appDir, '.well-known/workflow/v1') } };
    const { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: _, ...base } = { ...process.env, ...fixture.env };
    const child = await spawnOrderedChild(
      path.join(here, '..', 'helpers', 'affinity-child.mjs'),
      [world.indexUrl, appDir, WORKFLOW_FILE, JSON.stringify(options)],
      { ...base, ...env },
      children,
      `replica ${name}`,
    );
    return { ...child, name, build, deploymentId: child.ready[0] as string };
  };

  // A2 first, on a table without affinity: it reports the id of before affinity.
  const a2 = await spawnReplica('A2', 'A', {});
  expect(a2.deploymentId).toBe('eve-world-aws');
  const init = await runCli(['init', '--deployment-affinity'], fixture.env);
  expect(init.code, init.stderr).toBe(0);
  expect(await readTableFormat(clients.ddb, config.tableName)).toMatchObject({
    affinity: true,
    minReader: AFFINITY_MIN_READER,
  });
  const a1 = await spawnReplica('A1', 'A', { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' });
  const b1 = await spawnReplica('B1', 'B', { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'off' });
  expect(a1.deploymentId).toMatch(/^build:[0-9a-f]{16}$/);
  expect(b1.deploymentId).toMatch(/^build:[0-9a-f]{16}$/);
  expect(b1.deploymentId).not.toBe(a1.deploymentId);
  // The variable `off` is named and ignored.
  expect(b1.output()).toMatch(/EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=off is ignored: table \S+ pins runs/);
  // A2 joins at its next heartbeat: it counts beats on A's deployment and says so.
  await waitUntil(
    'A2 to take part',
    () => /now pins runs to their deployment: this process takes part as build:/.test(a2.output()),
    30_000,
  ).catch((e) => {
    throw new Error(`${e}\nA2:\n${a2.output().slice(-3000)}`);
  });
  expect(a2.output()).toContain(`takes part as ${a1.deploymentId}`);

  // Runs on every replica, parked on their hooks, then every hook resumed from another replica.
  const replicas = [a1, a2, b1];
  const started: Array<{ id: string; label: string; on: Replica }> = [];
  for (const r of replicas)
    for (let i = 0; i < 3; i++) {
      const label = `${r.name}-${i}`;
      started.push({ id: await r.start(label, label), label, on: r });
    }
  for (const s of started)
    expect((await run(s.id)).deploymentId).toBe(s.on.build === 'A' ? a1.deploymentId : b1.deploymentId);
  for (const [i, s] of started.entries()) {
    await waitUntil(
      `hook gate:${s.label}`,
      async () => Boolean(await reader.hooks.getByToken(`gate:${s.label}`).catch(() => undefined)),
      90_000,
    );
    await replicas[(i + 1) % replicas.length].resume(`r-${s.label}`, `gate:${s.label}`);
  }
  await waitUntil(
    'every run to finish',
    async () =>
      (await Promise.all(started.map((s) => run(s.id)))).every((r) => r.status !== 'running' && r.status !== 'pending'),
    180_000,
  ).catch((e) => {
    throw new Error(`${e}\n${replicas.map((r) => `${r.name}:\n${r.output().slice(-2000)}`).join('\n')}`);
  });
  for (const s of started) {
    expect((await run(s.id)).status, s.label).toBe('completed');
    expect(await getRun(s.id).returnValue).toEqual(
      s.on.build === 'A' ? { build: 'A', order: ['a', 'b'] } : { build: 'B', order: ['b', 'a'] },
    );
  }
  // Every step body ran in a process of its run's own build, once per step.
  const bodies = replicas.flatMap((r) => bodiesOf(r.output()).map((b) => ({ ...b, in: r.build })));
  for (const s of started) {
    const mine = bodies.filter((b) => b.label === s.label);
    expect(mine.map((b) => b.step).sort(), s.label).toEqual(['a', 'b']);
    for (const b of mine) expect([b.build, b.in], s.label).toEqual([s.on.build, s.on.build]);
  }

  // The CLI's start, with the variable on in the operator's shell: a live deployment, no phantom.
  const before = (await listDeployments({ config, clients } as never)).map((d) => d.id).sort();
  expect(before).toEqual([a1.deploymentId, b1.deploymentId].sort());
  const workflowId = JSON.parse(readFileSync(path.join(appB, '.well-known/workflow/v1/manifest.json'), 'utf8'))
    .workflows[WORKFLOW_FILE].ordered.workflowId as string;
  const cli = await runCli(['start', workflowId, '"cli-0"', '--json'], {
    ...fixture.env,
    EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on',
  });
  expect(cli.code, cli.stderr).toBe(0);
  const started0 = JSON.parse(cli.stdout) as { runId: string; deploymentId: string };
  // The newest deployment with a live consumer: B (registered after A).
  expect(started0.deploymentId).toBe(b1.deploymentId);
  expect((await run(started0.runId)).deploymentId).toBe(b1.deploymentId);
  await waitUntil(
    'the CLI run to wait on its hook',
    async () => Boolean(await reader.hooks.getByToken('gate:cli-0').catch(() => undefined)),
    90_000,
  );
  await a1.resume('r-cli-0', 'gate:cli-0');
  await waitUntil('the CLI run to finish', async () => (await run(started0.runId)).status === 'completed', 90_000);
  expect(await getRun(started0.runId).returnValue).toEqual({ build: 'B', order: ['b', 'a'] });
  expect((await listDeployments({ config, clients } as never)).map((d) => d.id).sort()).toEqual(before);

  // `--deployment` pins it where the operator says.
  const onA = await runCli(['start', workflowId, '"cli-1"', '--deployment', a1.deploymentId, '--json'], fixture.env);
  expect(onA.code, onA.stderr).toBe(0);
  expect(JSON.parse(onA.stdout).deploymentId).toBe(a1.deploymentId);
  const unknown = await runCli(['start', workflowId, '"cli-2"', '--deployment', 'build:nope'], fixture.env);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/deployment build:nope is not registered on table/);

  // `latest` ignores a deployment with no live consumer: one registered last that never beats,
  // and B once SIGKILLed.
  await registerDeployment({ config, clients } as never, 'build:phantom0000000', 'node');
  expect(await reader.resolveLatestDeploymentId?.()).toBe(b1.deploymentId);
  b1.proc.kill('SIGKILL');
  await new Promise((r) => b1.proc.once('exit', r));
  expect(await reader.resolveLatestDeploymentId?.()).toBe(a1.deploymentId);

  // Nothing dead-lettered.
  const dlqUrl = (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: config.deadLetterQueue }))).QueueUrl;
  const dlq = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 1 }));
  expect(dlq.Messages ?? []).toHaveLength(0);
  setWorld(undefined as never);
  await reader.close();
}, 900_000);
