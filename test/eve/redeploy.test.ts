/**
 * An eve agent redeployed mid-session (issue #32): the session stays on the build that started it.
 *
 * Two builds of the fixture app (test/eve/app) whose tool differs: build A's `add` returns a + b,
 * build B's a + b + 1000. Each is served from its own copy of `.output` as `eve start` serves it
 * (`node .output/server/index.mjs`, PORT set), on Node 24, with deployment affinity on and no id
 * set: each process derives `build:<fingerprint>` of the `.output` it runs. Both share one table and
 * one queue, as a plain Node host does while an old build drains.
 *
 * The table is opted in with `eve-world-aws init --deployment-affinity`, as docs/operations.md says.
 *
 * Session S starts on A. B is deployed beside it. The user's next message reaches B's endpoint,
 * yet the turn runs on A's code (the sum is 30, not 1030) in A's process; a new session started
 * on B runs on B's code in B's process. The two runs carry different deployment ids.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPort } from '../../emulator/stack.js';
import { destroyClients } from '../../src/aws/clients.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { runCli } from '../helpers/cli.js';
import {
  appDir,
  eveProcessEnv,
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
  waitHealthy,
} from '../helpers/eve.js';

const toolFile = path.join(appDir, 'agent/tools/add.ts');
const ORIGINAL_SUM = 'return { sum: a + b };';
const BUILD_B_SUM = 'return { sum: a + b + 1000 };';
/** Low, so the delivery a killed process held reappears within seconds (as in eve.test.ts). */
const VISIBILITY_TIMEOUT_SECONDS = 5;

interface Host {
  proc: Proc;
  base: string;
}

describe('eve redeployed mid-session (deployment affinity, plain Node host)', () => {
  let fixture: Fixture;
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  const builds: Record<'A' | 'B', string> = { A: '', B: '' };
  const hosts: Partial<Record<'A' | 'B', Host>> = {};
  const originalTool = readFileSync(toolFile, 'utf8');
  let session = '';

  /** `eve build` of the app as its source is now, copied out of `.output` into `<stateDir>/<name>`. */
  async function build(name: 'A' | 'B'): Promise<void> {
    rmSync(path.join(appDir, '.output'), { recursive: true, force: true });
    const p = spawnEve(`build-${name}`, ['build'], env, stateDir);
    const code = await p.exited;
    procs.delete(p);
    expect(code, `eve build ${name} failed:\n${logTail(p)}`).toBe(0);
    builds[name] = path.join(stateDir, `build-${name}`);
    cpSync(path.join(appDir, '.output'), builds[name], { recursive: true });
  }

  async function serve(name: 'A' | 'B'): Promise<Host> {
    const port = await childPort();
    const proc = spawnNode(
      `host-${name}`,
      [path.join(builds[name], 'server/index.mjs')],
      { ...env, PORT: String(port) },
      stateDir,
    );
    const host = { proc, base: `http://127.0.0.1:${port}` };
    await waitHealthy(host.base, proc);
    hosts[name] = host;
    return host;
  }

  const turn = async (host: Host, sessionId: string, turns: number) =>
    readUntil(host.base, sessionId, (e) => settled(e, turns), 90_000).catch((err) => {
      throw new Error(
        `${err.message}\n--- A ---\n${hosts.A ? logTail(hosts.A.proc) : ''}\n--- B ---\n${hosts.B ? logTail(hosts.B.proc) : ''}`,
      );
    });

  beforeAll(async () => {
    expect(existsSync(path.join(node24Bin, 'node')), 'run `npm ci --prefix test/eve/app` first').toBe(true);
    expect(originalTool, 'the fixture tool changed: update this test').toContain(ORIGINAL_SUM);
    stateDir = mkdtempSync(path.join(tmpdir(), 'eve-redeploy-'));
    fixture = await createFixture(
      { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_TIMEOUT_SECONDS) },
      'redeploy',
    );
    env = eveProcessEnv(fixture.env, stateDir, { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' });
    // As a user opts in (docs/operations.md, "Deployment affinity"): the table stops older readers.
    const init = await runCli(['init', '--deployment-affinity'], fixture.env);
    expect(init.code, init.stderr).toBe(0);
  });

  afterAll(async () => {
    writeFileSync(toolFile, originalTool);
    for (const p of [...procs]) await killGroup(p);
    // The next test file builds its own; a build of the changed tool must not be left behind.
    rmSync(path.join(appDir, '.output'), { recursive: true, force: true });
    if (fixture?.clients) destroyClients(fixture.clients);
    if (stateDir && process.env.EVE_E2E_KEEP !== '1') rmSync(stateDir, { recursive: true, force: true });
  });

  it('builds A and B, whose tools differ', async () => {
    await build('A');
    writeFileSync(toolFile, originalTool.replace(ORIGINAL_SUM, BUILD_B_SUM));
    try {
      await build('B');
    } finally {
      writeFileSync(toolFile, originalTool);
    }
  });

  it('a session starts on A', async () => {
    const a = await serve('A');
    const created = await postJson(`${a.base}/eve/v1/session`, { message: 'please add 2 and 3' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    session = String(created.json.sessionId);
    expect(finalMessages(await turn(a, session, 1))).toEqual(['The sum is 5.']);
  });

  it("B deployed while a turn runs on A; A killed mid-tool: B never runs A's work, A restarted finishes it", async () => {
    expect(session, 'needs the session on A').not.toBe('');
    const first = hosts.A as Host;

    // A turn whose tool holds (the fixture's `slow`), on A.
    const sent = await postJson(`${first.base}/eve/v1/session/${session}`, { message: 'slow: add 4 and 5' });
    expect(sent.status, JSON.stringify(sent.json)).toBeLessThan(300);
    const hold = path.join(stateDir, 'hold-4-5');
    for (let i = 0; i < 600 && !existsSync(hold); i++) await sleep(100);
    expect(existsSync(hold), 'the tool never started holding').toBe(true);

    // B is deployed mid-turn, then A dies inside the tool. Its delivery reappears after the
    // visibility timeout, on a queue only B consumes: without affinity B would run A's step on B's
    // code (a sum of 1009); with it, B puts the message back for A's deployment.
    const b = await serve('B');
    await killGroup(first.proc, 'SIGKILL');
    await sleep((VISIBILITY_TIMEOUT_SECONDS + 7) * 1000);
    expect(toolExecutions(stateDir, 4, 5).map((e) => e.pid)).toEqual([first.proc.child.pid]);

    // A's build comes back (same files, so the same deployment id) and finishes its turn.
    const again = await serve('A');
    expect(finalMessages(await turn(again, session, 2))).toEqual(['The sum is 5.', 'The sum is 9.']);
    expect(toolExecutions(stateDir, 4, 5).map((e) => e.pid)).toEqual([first.proc.child.pid, again.proc.child.pid]);

    const created = await postJson(`${b.base}/eve/v1/session`, { message: 'please add 7 and 8' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const fresh = String(created.json.sessionId);
    expect(finalMessages(await turn(b, fresh, 1))).toEqual(['The sum is 1015.']);
    expect(toolExecutions(stateDir, 7, 8).map((e) => e.pid)).toEqual([b.proc.child.pid]);

    // Each run is pinned to the build that started it.
    const { createWorld } = await import('../../src/index.js');
    const world = createWorld({ config: fixture.config, clients: fixture.clients });
    try {
      const [old, now] = await Promise.all([world.runs.get(session), world.runs.get(fresh)]);
      expect(old.deploymentId).toMatch(/^build:[0-9a-f]{16}$/);
      expect(now.deploymentId).toMatch(/^build:[0-9a-f]{16}$/);
      expect(now.deploymentId).not.toBe(old.deploymentId);
    } finally {
      await world.close().catch(() => {});
    }
  });

  it("the session's next message, accepted by B, moves the idle session to B by eve's checkpoint handoff", async () => {
    const b = hosts.B as Host;
    expect(b, 'needs B').toBeDefined();
    // eve (0.80.1, its SessionHandoff class) hands an idle session to the deployment that
    // accepted its message: a new owner run on B from a checkpoint, never a replay of A's run on
    // B's code. The turn then runs B's tool.
    const sent = await postJson(`${b.base}/eve/v1/session/${session}`, { message: 'now add 10 and 20' });
    expect(sent.status, JSON.stringify(sent.json)).toBeLessThan(300);
    expect(finalMessages(await turn(b, session, 3))).toEqual(['The sum is 5.', 'The sum is 9.', 'The sum is 1030.']);
    expect(toolExecutions(stateDir, 10, 20).map((e) => e.pid)).toEqual([b.proc.child.pid]);

    // A's run is still A's: nothing re-pinned it.
    const { createWorld } = await import('../../src/index.js');
    const world = createWorld({ config: fixture.config, clients: fixture.clients });
    try {
      const [old, now] = await Promise.all([world.runs.get(session), world.getDeploymentId()]);
      expect(old.deploymentId).toMatch(/^build:/);
      expect(typeof now).toBe('string');
    } finally {
      await world.close().catch(() => {});
    }
  });
});
