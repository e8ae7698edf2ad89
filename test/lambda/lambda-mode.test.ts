/**
 * eve on AWS Lambda, offline: the deployment the CDK construct describes, run on this machine.
 *
 * - Host: the eve fixture app (test/eve/app) built with `eve build` and served the way the host
 *   image runs it (the generated Dockerfile's CMD and ENV; the Lambda Web Adapter starts it), with the World in Lambda mode (AWS_LAMBDA_FUNCTION_NAME set:
 *   no in-process poller) and the signing secret configured. A recording proxy stands in for the
 *   Function URL.
 * - Worker: the BUNDLED file the construct deploys (dist/lambda-worker/index.mjs, Handler
 *   `index.handler`), in separate Node 24 "execution environment" processes, invoked by an
 *   event-source-mapping simulator with real SQS records from the emulator's queue and a Lambda
 *   context; the simulator deletes exactly the records not reported in `batchItemFailures`.
 * - Steps: first turn streams to completion; a second message resumes the session; SIGKILL of the
 *   host mid-turn, restart, and the same turn completes. Every delivery reaches the flow route
 *   signed; unsigned or forged requests get 401.
 *
 * Runs with `npm run test:eve` (needs `npm run test:eve:setup` once and `npm run build`).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPort } from '../../emulator/stack.js';
import { destroyClients } from '../../src/aws/clients.js';
import { hostDockerfile } from '../../src/cdk/dockerfile.js';
import { WORKER_HANDLER } from '../../src/cdk/worker-asset.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import {
  appDir,
  count,
  ended,
  finalMessages,
  killGroup,
  logTail,
  node24Bin,
  type Proc,
  postJson,
  procs,
  readUntil,
  settled,
  sleep,
  spawnEve,
  spawnNode,
  toolExecutions,
  toolSums,
  turnEvents,
  waitHealthy,
} from '../helpers/eve.js';
import { EsmSimulator } from './esm-simulator.js';
import { FunctionUrlProxy } from './function-url.js';

/** ENV and CMD of a Dockerfile (the generated host image's). */
function imageOf(dockerfile: string): { env: Record<string, string>; cmd: string[] } {
  const lines = dockerfile.replace(/\\\n\s*/g, ' ').split('\n');
  const env: Record<string, string> = {};
  for (const l of lines.filter((x) => x.startsWith('ENV '))) {
    for (const kv of l.slice(4).trim().split(/\s+/)) {
      const i = kv.indexOf('=');
      env[kv.slice(0, i)] = kv.slice(i + 1);
    }
  }
  const cmd = lines.find((x) => x.startsWith('CMD '));
  return { env, cmd: cmd ? (JSON.parse(cmd.slice(4)) as string[]) : [] };
}

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const workerDir = path.join(root, 'dist/lambda-worker');
const VISIBILITY_TIMEOUT_SECONDS = 5;
const FLOW = '/.well-known/workflow/v1/flow';

describe('eve on the Lambda deployment shape (host + bundled worker + ESM simulator), offline', () => {
  let fixture: Fixture;
  let stateDir: string;
  let hostEnv: NodeJS.ProcessEnv;
  let evePort: number;
  let urlPort: number;
  let base: string;
  let host: Proc | undefined;
  let starts = 0;
  let esm: EsmSimulator;
  let proxy: FunctionUrlProxy;
  let sessionA = '';
  const secret = randomBytes(32).toString('hex');

  const executionsOf = (a: number, b: number) => toolExecutions(stateDir, a, b);

  /**
   * The host as the container runs it: the generated Dockerfile's CMD with its ENV (what the Lambda
   * Web Adapter starts; `eve start` does the same, spawning `node .output/server/index.mjs` with
   * HOST/PORT), only HOST and PORT changed to a free loopback port.
   */
  async function startHost(): Promise<void> {
    starts += 1;
    const image = imageOf(hostDockerfile());
    expect(image.cmd.slice(0, 1), 'the image runs node').toEqual(['node']);
    const env = { ...hostEnv, ...image.env, HOST: '127.0.0.1', PORT: String(evePort) };
    host = spawnNode(`host-${starts}`, image.cmd.slice(1), env, stateDir);
    await waitHealthy(`http://127.0.0.1:${evePort}`, host);
  }

  const fail = (err: Error, ...logs: Proc[]) => {
    throw new Error(
      `${err.message}\n${logs.map((p) => `--- ${p.name} ---\n${logTail(p)}`).join('\n')}\n--- worker ---\n${tail(path.join(stateDir, 'worker.log'))}`,
    );
  };
  const tail = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').slice(-3000) : '(none)');

  beforeAll(async () => {
    expect(existsSync(path.join(node24Bin, 'node')), 'run `npm run test:eve:setup` first').toBe(true);
    expect(existsSync(path.join(workerDir, 'index.mjs')), 'run `npm run build` first (it bundles the worker)').toBe(
      true,
    );
    stateDir = mkdtempSync(path.join(tmpdir(), 'eve-lambda-'));
    fixture = await createFixture(
      { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_TIMEOUT_SECONDS) },
      'lam',
    );
    [evePort, urlPort] = [await childPort(), await childPort()];
    base = `http://127.0.0.1:${urlPort}`;

    const common: NodeJS.ProcessEnv = {
      PATH: `${node24Bin}${path.delimiter}${process.env.PATH ?? ''}`,
      HOME: process.env.HOME,
      ...fixture.env,
      EVE_WORLD_AWS_SIGNING_SECRET: secret,
      EVE_TELEMETRY_DISABLED: '1',
      DO_NOT_TRACK: '1',
    };
    // The host: eve as the adapter runs it; AWS_LAMBDA_FUNCTION_NAME puts the World in Lambda mode.
    hostEnv = { ...common, AWS_LAMBDA_FUNCTION_NAME: 'eve-host', EVE_E2E_STATE_DIR: stateDir };

    proxy = new FunctionUrlProxy(() => `http://127.0.0.1:${evePort}`);
    await proxy.listen(urlPort);

    const queueUrl = (await fixture.clients.sqs.send(new GetQueueUrlCommand({ QueueName: fixture.config.queue })))
      .QueueUrl as string;
    const queueArn = (
      await fixture.clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
      )
    ).Attributes?.QueueArn as string;
    esm = new EsmSimulator({
      sqs: fixture.clients.sqs,
      queueUrl,
      queueArn,
      node: path.join(node24Bin, 'node'),
      codeDir: workerDir,
      handler: WORKER_HANDLER,
      // The worker's environment as the construct sets it: World resources, the flow URL behind the
      // Function URL, the same secret.
      env: { ...common, AWS_LAMBDA_FUNCTION_NAME: 'eve-worker', EVE_WORLD_AWS_FLOW_URL: `${base}${FLOW}` },
      timeoutMs: 60_000,
      batchSize: 10,
      maxConcurrency: 2,
      logFile: path.join(stateDir, 'worker.log'),
    });
    esm.start();

    // `eve build` of the fixture app (pinned to JustBashSandbox: hermetic on hosts with /dev/kvm).
    rmSync(path.join(appDir, '.output'), { recursive: true, force: true });
    const build = spawnEve('build', ['build'], { ...common }, stateDir);
    const code = await build.exited;
    procs.delete(build);
    expect(code, `eve build failed:\n${logTail(build)}`).toBe(0);
  });

  afterAll(async () => {
    await esm?.stop();
    for (const p of [...procs]) await killGroup(p);
    await proxy?.close();
    if (esm)
      console.log(
        `[lambda-e2e] esm: ${JSON.stringify({ ...esm.stats, batches: esm.stats.batches.length })}; flow requests: ${proxy?.requests.length}`,
      );
    if (fixture?.clients) destroyClients(fixture.clients);
    if (stateDir && process.env.EVE_E2E_KEEP !== '1') rmSync(stateDir, { recursive: true, force: true });
  });

  it('first turn streams to completion; every step ran through SQS -> bundled worker -> signed flow POST', async () => {
    await startHost();
    const created = await postJson(`${base}/eve/v1/session`, { message: 'please add 2 and 3' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    sessionA = String(created.json.sessionId);
    const events = await readUntil(base, sessionA, (e) => settled(e, 1), 90_000).catch((e) => fail(e, host!));
    expect(events.map((e) => e.type)).not.toContain('turn.failed');
    expect(toolSums(events)).toEqual([5]);
    expect(finalMessages(events)).toEqual(['The sum is 5.']);
    // The host has no poller: the deliveries were the simulator's invocations of the worker.
    expect(esm.stats.invocations).toBeGreaterThan(0);
    // The client can see turn.completed before the worker's invocation returns (the stream ends
    // inside the flow POST), and the simulator deletes a record only after its batch returns.
    for (const end = Date.now() + 30_000; esm.stats.deleted === 0 && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 100));
    expect(esm.stats.deleted).toBeGreaterThan(0);
    expect(proxy.requests.length).toBeGreaterThan(0);
  });

  it('a second message resumes the session and completes turn 2', async () => {
    expect(sessionA, 'needs the first turn').not.toBe('');
    const sent = await postJson(`${base}/eve/v1/session/${sessionA}`, { message: 'now add 10 and 20' });
    expect(sent.status, JSON.stringify(sent.json)).toBeLessThan(300);
    const events = await readUntil(base, sessionA, (e) => settled(e, 2), 90_000).catch((e) => fail(e, host!));
    expect(count(events, 'turn.completed')).toBe(2);
    expect(finalMessages(events)).toEqual(['The sum is 5.', 'The sum is 30.']);
  });

  it('SIGKILL of the host mid-turn, restart: the same turn completes', async () => {
    const holdFile = path.join(stateDir, 'hold-4-5');
    const created = await postJson(`${base}/eve/v1/session`, { message: 'slow: add 4 and 5' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const sessionB = String(created.json.sessionId);
    const before = await readUntil(base, sessionB, (e) => count(e, 'actions.requested') >= 1, 90_000).catch((e) =>
      fail(e, host!),
    );
    const turnId = String(before.find((e) => e.type === 'actions.requested')?.data?.turnId);
    for (let i = 0; i < 200 && !existsSync(holdFile); i++) await sleep(50);
    expect(existsSync(holdFile), 'the tool never started holding').toBe(true);

    const failuresBefore = esm.stats.reportedFailures + esm.stats.failedInvocations;
    const killed = host!;
    const heldBy = Number(readFileSync(holdFile, 'utf8'));
    await killGroup(killed, 'SIGKILL');
    expect(() => process.kill(heldBy, 0)).toThrow();

    await startHost();
    const after = await readUntil(base, sessionB, (e) => ended(e, 1), 120_000).catch((e) => fail(e, killed, host!));
    const turn = turnEvents(after, turnId);
    expect(turn.map((e) => e.type)).toContain('turn.completed');
    expect(finalMessages(turn)).toEqual(['The sum is 9.']);
    const runs = executionsOf(4, 5);
    expect(runs.length).toBe(2);
    expect(runs[0].pid).toBe(heldBy);
    // The delivery the dead host held was reported as a batch item failure (or the invocation
    // failed), so the simulator did not delete it and SQS handed it out again.
    expect(esm.stats.reportedFailures + esm.stats.failedInvocations).toBeGreaterThan(failuresBefore);
    for (const b of esm.stats.batches) {
      expect(new Set([...b.failed, ...b.deleted])).toEqual(new Set(b.sent));
      expect(b.deleted.filter((id) => b.failed.includes(id))).toEqual([]);
    }
  });

  it('every delivery reached the flow route signed; unsigned and forged requests get 401', async () => {
    expect(proxy.requests.length).toBeGreaterThan(3);
    expect(proxy.requests.filter((r) => !r.signed)).toEqual([]);
    const body = JSON.stringify({ runId: 'wrun_forged', stepId: 'x', stepName: 'x' });
    const delivery = {
      'content-type': 'application/json',
      'x-vqs-queue-name': '__wkf_workflow_x',
      'x-vqs-message-id': 'm1',
      'x-vqs-message-attempt': '1',
    };
    const unsigned = await fetch(`${base}${FLOW}`, { method: 'POST', headers: delivery, body });
    expect(unsigned.status).toBe(401);
    const ts = String(Math.floor(Date.now() / 1000));
    const forged = await fetch(`${base}${FLOW}`, {
      method: 'POST',
      headers: {
        ...delivery,
        'x-eve-timestamp': ts,
        'x-eve-signature': `v1=${createHmac('sha256', 'not-the-secret-000').update(body).digest('hex')}`,
      },
      body,
    });
    expect(forged.status).toBe(401);
  });
});
