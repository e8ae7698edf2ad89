/**
 * Deployment affinity in the Lambda shape, offline (docs/design.md, "Deployment affinity on
 * Lambda"): two builds of one workflow whose code differs (A runs its steps a then b, B runs b
 * then a), each served as one published version of one host function (`lambda:<fn>:1` and
 * `lambda:<fn>:2`, child processes of this checkout's World in Lambda mode behind a plain HTTP
 * server, the Web Adapter's part) and registered on the stack's Lambda emulator, on the wire. The
 * worker is this checkout's SQS handler (EVE_WORLD_AWS_HOST_FUNCTION set), fed by a small event
 * source mapping loop that deletes exactly the records not reported as failures; its flow URL is
 * the `live` alias, a pass-through to whichever version is live. Runs started on A (version 1)
 * complete on A's code while B (version 2) is live and new runs start on B; every hook is resumed
 * from B. Then version 1 is deleted: its waiting run fails with `DEPLOYMENT_MISMATCH` once, never
 * dead-lettered. No process has EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: the table decides (recorded as
 * `init --deployment-affinity` does). Last, version 2 is retired by force while it serves: a start
 * there is refused with `DeploymentRetiredError`.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeleteMessageCommand, GetQueueUrlCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, expect, test } from 'vitest';
import { setWorld } from 'workflow/runtime';
import { registerLambdaTarget, removeLambdaTarget } from '../../emulator/lambda-service.js';
import { retireDeployment } from '../../src/cli/deployments.js';
import { loadConfig } from '../../src/config/index.js';
import { FLOW_PATH } from '../../src/config/limits.js';
import { createSqsHandler, type SQSRecord } from '../../src/consumer/delivery/sqs-event-handler.js';
import { createContext } from '../../src/context/world-context.js';
import { readDeployment } from '../../src/deployment/registry.js';
import { createWorld } from '../../src/index.js';
import { reconcile } from '../../src/provision/index.js';
import { AFFINITY_MIN_READER } from '../../src/schema/formats.js';
import { createFixture, stackEndpoint } from '../helpers/aws.js';
import { type Build, buildCurrent, removeBuild } from '../helpers/builds.js';
import { stopChildren } from '../helpers/faults-suite.js';
import { buildOrderedApp, type OrderedChild, spawnOrderedChild, WORKFLOW_FILE } from '../helpers/ordered-app.js';
import { MemoryLogger } from '../helpers/queue.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
/** Inside the checkout, so the compiled apps resolve `workflow` from its node_modules. */
const scratch = path.join(root, 'node_modules', '.cache', 'eve-world-aws', `affinity-lambda-${process.pid}`);
const RUNS_PER_BUILD = 2;
const SECRET = '7e1a9c3f5b2d8e0a4c6f1b9d3e5a7c2f8b0d6e4a1c3f9b5d7e2a0c8f6b4d1e3a';
const FN = `host-${randomBytes(4).toString('hex')}`;
const lambdaEndpoint = stackEndpoint('AWS_ENDPOINT_URL_LAMBDA');

const children: ChildProcess[] = [];
const builds: Build[] = [];
const closers: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
  await stopChildren(children);
  for (const b of builds) removeBuild(b);
  rmSync(scratch, { recursive: true, force: true });
});

interface Host extends OrderedChild {
  deploymentId: string;
  port: number;
}

/** One host version: a child process of build `world` serving `appDir` as `FN` version `version`. */
async function spawnHost(world: Build, appDir: string, env: Record<string, string>, version: string): Promise<Host> {
  const script = path.join(here, '..', 'helpers', 'lambda-host-child.mjs');
  const child = await spawnOrderedChild(
    script,
    [world.indexUrl, appDir, WORKFLOW_FILE],
    { ...process.env, ...env, AWS_LAMBDA_FUNCTION_NAME: FN, AWS_LAMBDA_FUNCTION_VERSION: version },
    children,
    'a host child',
  );
  return { ...child, deploymentId: child.ready[0] as string, port: Number(child.ready[1]) };
}

/**
 * The `live` alias's Function URL: passes each request on, `Host` header and all, to the port of
 * the version that is live (the signature binds the URL the worker sent to, as on AWS).
 */
async function liveUrl(live: () => number): Promise<string> {
  const server = http.createServer((req, res) => {
    const fwd = http.request(
      { host: '127.0.0.1', port: live(), path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    fwd.on('error', (e) => {
      res.writeHead(502);
      res.end(String(e));
    });
    req.pipe(fwd);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${FLOW_PATH}`;
}

async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`gave up waiting (${limitMs / 1000} s) for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('two host versions beside each other: every run finishes on the version that started it; a deleted version fails its runs once', async () => {
  const [world, appA, appB] = await Promise.all([
    buildCurrent('affinity-lambda'),
    buildOrderedApp(scratch, 'A', ['a', 'b']),
    buildOrderedApp(scratch, 'B', ['b', 'a']),
  ]);
  builds.push(world);
  const fixture = await createFixture(
    { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10', EVE_WORLD_AWS_SIGNING_SECRET: SECRET },
    'afl',
  );
  const { config, clients } = fixture;
  await reconcile(clients, config, 'apply', { minReader: AFFINITY_MIN_READER, affinity: true });
  // No variable: the table decides (every process of this build takes part).
  const env = { ...fixture.env };
  const reader = createWorld({ config, clients, client: {} });
  closers.push(() => reader.close());
  const run = (runId: string) => reader.runs.get(runId, { resolveData: 'all' });
  setWorld(reader);
  const { getRun } = await import('workflow/api');
  const returnOf = (runId: string) => getRun(runId).returnValue;

  // The worker: the SQS handler with the host function named, behind an event source mapping loop.
  let livePort = 0;
  const flowUrl = await liveUrl(() => livePort);
  const workerConfig = loadConfig({ ...fixture.env, EVE_WORLD_AWS_HOST_FUNCTION: FN });
  const workerCtx = createContext(workerConfig);
  const logger = new MemoryLogger();
  const handler = createSqsHandler({ context: workerCtx, flowUrl, logger });
  const queueUrl = (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: config.queue.split('/').at(-1) })))
    .QueueUrl as string;
  let polling = true;
  const esm = (async () => {
    while (polling) {
      const got = await clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
        }),
      );
      const msgs = got.Messages ?? [];
      if (msgs.length === 0) continue;
      const Records: SQSRecord[] = msgs.map((m) => ({
        messageId: m.MessageId as string,
        receiptHandle: m.ReceiptHandle as string,
        body: m.Body ?? '',
        attributes: { ...m.Attributes },
        messageAttributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
            k,
            { stringValue: v.StringValue, dataType: v.DataType ?? 'String' },
          ]),
        ),
      }));
      const res = await handler({ Records }, { getRemainingTimeInMillis: () => 60_000 });
      const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      for (const m of msgs)
        if (!failed.has(m.MessageId as string))
          await clients.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
    }
  })();
  closers.push(async () => {
    polling = false;
    await esm.catch(() => undefined);
  });

  // Version 1 (build A) deployed and live, with runs parked on their hooks.
  const a = await spawnHost(world, appA, env, '1');
  expect(a.deploymentId).toBe(`lambda:${FN}:1`);
  await registerLambdaTarget(lambdaEndpoint, FN, '1', `http://127.0.0.1:${a.port}`);
  livePort = a.port;
  const onA: string[] = [];
  for (let i = 0; i < RUNS_PER_BUILD; i++) onA.push(await a.start(`a${i}`, `a${i}`));
  const hookOf = (token: string) => async () => Boolean(await reader.hooks.getByToken(token).catch(() => undefined));
  const diagnose = (e: unknown) => {
    throw new Error(`${e}\nworker:\n${logger.lines.slice(-30).join('\n')}\nA:\n${a.output().slice(-3000)}`);
  };
  for (let i = 0; i < RUNS_PER_BUILD; i++)
    await waitUntil(`hook gate:a${i}`, hookOf(`gate:a${i}`), 90_000).catch(diagnose);

  // Version 2 (build B) deployed: `live` points at it; new runs start on it.
  const b = await spawnHost(world, appB, env, '2');
  expect(b.deploymentId).toBe(`lambda:${FN}:2`);
  await registerLambdaTarget(lambdaEndpoint, FN, '2', `http://127.0.0.1:${b.port}`);
  livePort = b.port;
  const onB: string[] = [];
  for (let i = 0; i < RUNS_PER_BUILD; i++) onB.push(await b.start(`b${i}`, `b${i}`));
  for (const id of onA) expect((await run(id)).deploymentId).toBe(a.deploymentId);
  for (const id of onB) expect((await run(id)).deploymentId).toBe(b.deploymentId);

  // Every hook resumed from B: A's runs finish on version 1.
  for (let i = 0; i < RUNS_PER_BUILD; i++) {
    await waitUntil(`hook gate:b${i}`, hookOf(`gate:b${i}`), 90_000).catch(diagnose);
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
  ).catch((e) => diagnose(`${e}\nB:\n${b.output().slice(-3000)}`));
  for (const id of onA) expect(await returnOf(id)).toEqual({ build: 'A', order: ['a', 'b'] });
  for (const id of onB) expect(await returnOf(id)).toEqual({ build: 'B', order: ['b', 'a'] });

  // Version 1 deleted while one of its runs waits: that run fails once, at its next delivery.
  const last = await a.start('a-last', 'a-last');
  await waitUntil('the last A run to wait on its hook', hookOf('gate:a-last'), 90_000).catch(diagnose);
  a.proc.kill('SIGTERM');
  await new Promise((r) => a.proc.once('exit', r));
  await removeLambdaTarget(lambdaEndpoint, FN, '1');
  await b.resume('r-last', 'gate:a-last');
  await waitUntil(
    'the run of the deleted version to fail',
    async () => (await run(last)).status === 'failed',
    60_000,
  ).catch((e) => diagnose(`${e}\nB:\n${b.output().slice(-4000)}`));
  expect((await readDeployment({ config, clients } as never, a.deploymentId, true))?.status).toBe('retired');
  const events = (await reader.events.list({ runId: last, pagination: { limit: 1000 }, resolveData: 'all' })).data;
  const failed = events.filter((e) => e.eventType === 'run_failed');
  expect(failed).toHaveLength(1);
  expect((failed[0] as { eventData?: { errorCode?: string } }).eventData?.errorCode).toBe('DEPLOYMENT_MISMATCH');
  expect(events.filter((e) => e.eventType === 'step_completed')).toHaveLength(1);

  // Version 2 retired by force while it serves: no run starts there any more (its process learns
  // it as a plain Node host's does: src/deployment/membership.ts).
  const forced = await retireDeployment(createContext(config, clients), b.deploymentId, { force: true });
  expect(forced.record.status).toBe('retired');
  await expect(b.start('b-after', 'b-after')).rejects.toThrow(
    /DeploymentRetiredError: deployment lambda:\S+:2 is retired/,
  );

  // Nothing dead-lettered.
  const dlqUrl = (
    await clients.sqs.send(new GetQueueUrlCommand({ QueueName: config.deadLetterQueue.split('/').at(-1) }))
  ).QueueUrl as string;
  const dlq = await clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 10 }),
  );
  expect(dlq.Messages ?? []).toHaveLength(0);
}, 600_000);
