/**
 * Deployment affinity as a user meets it, in the in-process shape (docs/operations.md, "Deployment
 * affinity"): two builds of one workflow whose code differs (A runs its steps a then b, B runs b
 * then a), each served by its own consumer process of this checkout's World, on one table and one
 * queue, affinity recorded on the table (no process sets a variable), each build's id the hash of
 * its compiled flow bundle. Runs are started on A;
 * then B is deployed beside it and runs are started on B; every hook is resumed from B. Every A
 * run must finish on A's code and every B run on B's (a replay of an A run on B's code would
 * diverge), with nothing in the DLQ. Then A is stopped and retired: its parked run fails with
 * `DEPLOYMENT_MISMATCH` on its next delivery, once and at once (core's first re-route is refused,
 * no re-route budget spent), never looping, never dead-lettered.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, expect, test } from 'vitest';
import { setWorld } from 'workflow/runtime';
import { errorText } from '../../src/cli/shared/format.js';
import { markRetired, readDeployment } from '../../src/deployment/registry.js';
import { createWorld } from '../../src/index.js';
import { readTableFormat } from '../../src/preflight/format-check.js';
import { reconcile } from '../../src/provision/index.js';
import { AFFINITY_MIN_READER } from '../../src/schema/formats.js';
import { createFixture } from '../helpers/aws.js';
import { type Build, buildCurrent, removeBuild } from '../helpers/builds.js';
import { stopChildren } from '../helpers/faults-suite.js';
import { buildOrderedApp, type OrderedChild, spawnOrderedChild, WORKFLOW_FILE } from '../helpers/ordered-app.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
/** Inside the checkout, so the compiled apps resolve `workflow` from its node_modules. */
const scratch = path.join(root, 'node_modules', '.cache', 'eve-world-aws', `affinity-${process.pid}`);
const RUNS_PER_BUILD = 3;

const children: ChildProcess[] = [];
const builds: Build[] = [];
afterAll(async () => {
  await stopChildren(children);
  for (const b of builds) removeBuild(b);
  rmSync(scratch, { recursive: true, force: true });
});

interface Child extends OrderedChild {
  deploymentId: string;
}

async function spawnChild(world: Build, appDir: string, env: Record<string, string>): Promise<Child> {
  const script = path.join(here, '..', 'helpers', 'affinity-child.mjs');
  // The build's id: the hash of its compiled workflow bundle (what `eve start` hashes is its server folder).
  const options = { tuning: { buildDir: path.join(appDir, '.well-known/workflow/v1') } };
  const child = await spawnOrderedChild(
    script,
    [world.indexUrl, appDir, WORKFLOW_FILE, JSON.stringify(options)],
    { ...process.env, ...env },
    children,
    'an affinity child',
  );
  return { ...child, deploymentId: child.ready[0] as string };
}

async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`gave up waiting (${limitMs / 1000} s) for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('two builds beside each other: every run finishes on the build that started it; a retired build fails its runs at once', async () => {
  const [world, appA, appB] = await Promise.all([
    buildCurrent('affinity'),
    buildOrderedApp(scratch, 'A', ['a', 'b']),
    buildOrderedApp(scratch, 'B', ['b', 'a']),
  ]);
  builds.push(world);
  const fixture = await createFixture({ EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10' }, 'aff');
  const { config, clients } = fixture;
  // `init --deployment-affinity`: readers that ignore eve.dep are refused from now on.
  await reconcile(clients, config, 'apply', { minReader: AFFINITY_MIN_READER, affinity: true });
  expect((await readTableFormat(clients.ddb, config.tableName)).minReader).toBe(AFFINITY_MIN_READER);
  // No variable: the table decides (every process of this build takes part).
  const env = { ...fixture.env };
  // A reader of the table and its runs (no consumer, affinity off: it never sends).
  const reader = createWorld({ config, clients, client: {} });
  const run = (runId: string) => reader.runs.get(runId, { resolveData: 'all' });
  setWorld(reader);
  const { getRun } = await import('workflow/api');
  const returnOf = (runId: string) => getRun(runId).returnValue;

  // Build A alone, with runs parked on their hooks.
  const a = await spawnChild(world, appA, env);
  expect(a.deploymentId).toMatch(/^build:[0-9a-f]{16}$/);
  const onA: string[] = [];
  for (let i = 0; i < RUNS_PER_BUILD; i++) onA.push(await a.start(`a${i}`, `a${i}`));
  await waitUntil(
    'every A run to wait on its hook',
    async () => {
      for (let i = 0; i < RUNS_PER_BUILD; i++)
        if (!(await reader.hooks.getByToken(`gate:a${i}`).catch(() => undefined))) return false;
      return true;
    },
    90_000,
  );

  // B deployed beside it; new runs start on B.
  const b = await spawnChild(world, appB, env);
  expect(b.deploymentId).toMatch(/^build:[0-9a-f]{16}$/);
  expect(b.deploymentId).not.toBe(a.deploymentId);
  const onB: string[] = [];
  for (let i = 0; i < RUNS_PER_BUILD; i++) onB.push(await b.start(`b${i}`, `b${i}`));
  for (const id of onA) expect((await run(id)).deploymentId).toBe(a.deploymentId);
  for (const id of onB) expect((await run(id)).deploymentId).toBe(b.deploymentId);
  expect((await readDeployment({ config, clients } as never, a.deploymentId, true))?.status).toBe('active');

  // Every hook resumed from B: A's runs go back to A.
  for (let i = 0; i < RUNS_PER_BUILD; i++) {
    await waitUntil(
      `hook gate:b${i}`,
      async () => Boolean(await reader.hooks.getByToken(`gate:b${i}`).catch(() => undefined)),
      90_000,
    );
    await b.resume(`ra${i}`, `gate:a${i}`);
    await b.resume(`rb${i}`, `gate:b${i}`);
  }
  await waitUntil(
    'every run to finish',
    async () =>
      (await Promise.all([...onA, ...onB].map((id) => run(id)))).every(
        (r) => r.status !== 'running' && r.status !== 'pending',
      ),
    120_000,
  ).catch((e) => {
    throw new Error(`${e}\nA:\n${a.output().slice(-3000)}\nB:\n${b.output().slice(-3000)}`);
  });
  for (const id of onA) expect(await returnOf(id)).toEqual({ build: 'A', order: ['a', 'b'] });
  for (const id of onB) expect(await returnOf(id)).toEqual({ build: 'B', order: ['b', 'a'] });

  // A retired while one of its runs waits: that run fails once, at its next delivery.
  const last = await a.start('a-last', 'a-last');
  await waitUntil(
    'the last A run to wait on its hook',
    async () => Boolean(await reader.hooks.getByToken('gate:a-last').catch(() => undefined)),
    90_000,
  );
  a.proc.kill('SIGTERM');
  await new Promise((r) => a.proc.once('exit', r));
  expect(await markRetired({ config, clients } as never, a.deploymentId, 'test: A drained')).toBe(true);
  await b.resume('r-last', 'gate:a-last');
  await waitUntil('the retired run to fail', async () => (await run(last)).status === 'failed', 60_000).catch((e) => {
    throw new Error(`${e}\nB:\n${b.output().slice(-4000)}`);
  });
  const events = (await reader.events.list({ runId: last, pagination: { limit: 1000 }, resolveData: 'all' })).data;
  const failed = events.filter((e) => e.eventType === 'run_failed');
  expect(failed).toHaveLength(1);
  const failure = (failed[0] as { eventData?: { errorCode?: string; error?: unknown } }).eventData;
  expect(failure?.errorCode).toBe('DEPLOYMENT_MISMATCH');
  // At once: core failed it on its first re-route, which the World refused (recovery attempts 0),
  // not after spending its re-route budget on a deployment that cannot answer.
  const why = errorText(failure?.error) ?? '';
  expect(why).toContain(
    `is pinned to deployment "${a.deploymentId}", but was received by deployment "${b.deploymentId}".`,
  );
  expect(why).toContain('The run was stopped to protect against code-skew errors.');
  expect(why).not.toMatch(/re-routed the message/);
  // Its step b never ran on B's code (B would have run its own order).
  expect(events.filter((e) => e.eventType === 'step_completed')).toHaveLength(1);

  // Nothing dead-lettered.
  const dlq = await clients.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: await (async () => {
        const { GetQueueUrlCommand } = await import('@aws-sdk/client-sqs');
        return (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: config.deadLetterQueue })))
          .QueueUrl as string;
      })(),
      WaitTimeSeconds: 1,
      MaxNumberOfMessages: 10,
    }),
  );
  expect(dlq.Messages ?? []).toHaveLength(0);
  await reader.close();
}, 600_000);
