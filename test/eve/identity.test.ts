/**
 * eve's build output as the deployment id (issue 39, "Identity is the code that runs";
 * src/deployment/fingerprint.ts). The fixture app (test/eve/app) is copied into three folders of
 * the same layout (its `node_modules` linked beside it, as an install of its own would sit) and
 * built there by the real `eve build`: two from the same source, one whose tool differs.
 *
 * - The same source built in two folders gets one fingerprint, though eve wrote each folder's path,
 *   a random scratch folder, the asset times and hashes of its path-bearing manifests into the bytes.
 * - The build whose tool differs gets another.
 * - A copy of one build's `.output`, served the way `eve start` serves it (`node server/index.mjs`)
 *   from the app's folder, which holds another build, with a log file written into its `server/`,
 *   registers `build:<that fingerprint>`: the process names the code it runs.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPort } from '../../emulator/stack.js';
import { destroyClients } from '../../src/aws/clients.js';
import { createContext } from '../../src/context/world-context.js';
import { fingerprintBuild } from '../../src/deployment/fingerprint.js';
import { listDeployments } from '../../src/deployment/registry.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { runCli } from '../helpers/cli.js';
import {
  appDir,
  eveProcessEnv,
  killGroup,
  logTail,
  node24Bin,
  procs,
  sleep,
  spawnEve,
  spawnNode,
  waitHealthy,
} from '../helpers/eve.js';

const ORIGINAL_SUM = 'return { sum: a + b };';

describe("eve's build output as the deployment id", () => {
  let fixture: Fixture;
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  const outputs: Record<'one' | 'two' | 'other', string> = { one: '', two: '', other: '' };

  /** The fixture app copied to `<stateDir>/<name>/app` (its tool's sum `sum`) and built there; returns its `.output`. */
  async function buildCopy(name: keyof typeof outputs, sum = ORIGINAL_SUM): Promise<string> {
    const app = path.join(stateDir, name, 'app');
    mkdirSync(app, { recursive: true });
    cpSync(path.join(appDir, 'agent'), path.join(app, 'agent'), { recursive: true });
    cpSync(path.join(appDir, 'package.json'), path.join(app, 'package.json'));
    symlinkSync(path.join(appDir, 'node_modules'), path.join(app, 'node_modules'), 'dir');
    const tool = path.join(app, 'agent', 'tools', 'add.ts');
    writeFileSync(tool, readFileSync(tool, 'utf8').replace(ORIGINAL_SUM, sum));
    const p = spawnEve(`build-${name}`, ['build'], env, stateDir, app);
    const code = await p.exited;
    procs.delete(p);
    expect(code, `eve build ${name} failed:\n${logTail(p)}`).toBe(0);
    return path.join(app, '.output');
  }

  beforeAll(async () => {
    expect(existsSync(path.join(node24Bin, 'node')), 'run `npm ci --prefix test/eve/app` first').toBe(true);
    expect(readFileSync(path.join(appDir, 'agent/tools/add.ts'), 'utf8')).toContain(ORIGINAL_SUM);
    stateDir = mkdtempSync(path.join(tmpdir(), 'eve-identity-'));
    fixture = await createFixture({}, 'eveid');
    env = eveProcessEnv(fixture.env, stateDir, { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' });
    const init = await runCli(['init', '--deployment-affinity'], fixture.env);
    expect(init.code, init.stderr).toBe(0);
  });

  afterAll(async () => {
    for (const p of [...procs]) await killGroup(p);
    if (fixture?.clients) destroyClients(fixture.clients);
    if (stateDir && process.env.EVE_E2E_KEEP !== '1') rmSync(stateDir, { recursive: true, force: true });
  });

  it('one source built in two folders: one fingerprint; a build whose tool differs: another', async () => {
    // One at a time: each build takes the machine's cores for a while.
    outputs.one = await buildCopy('one');
    outputs.two = await buildCopy('two');
    outputs.other = await buildCopy('other', 'return { sum: a + b + 1000 };');
    const chunk = (out: string) => readFileSync(path.join(out, 'server/_chunks/node-server.mjs'), 'utf8');
    expect(chunk(outputs.two)).not.toBe(chunk(outputs.one)); // eve wrote each folder into the bundle
    const [one, two, other] = await Promise.all(
      [outputs.one, outputs.two, outputs.other].map((dir) => fingerprintBuild({ kind: 'nitro-output', dir })),
    );
    expect(two).toBe(one);
    expect(other).not.toBe(one);
  }, 600_000); // three eve builds: about a minute each on a loaded machine

  it('a copy of the build served from the app folder, with a log file in it, registers the fingerprint of the code it runs', async () => {
    expect(outputs.one, 'needs the builds').not.toBe('');
    const deployed = path.join(stateDir, 'deploy', 'build-one');
    cpSync(outputs.one, deployed, { recursive: true });
    writeFileSync(path.join(deployed, 'server', 'server.log'), 'listening\n');
    const expected = `build:${await fingerprintBuild({ kind: 'nitro-output', dir: outputs.one })}`;
    const port = await childPort();
    // The working folder is the fixture app's, as `eve start` runs: whatever .output it holds is not this build.
    const proc = spawnNode(
      'host-one',
      [path.join(deployed, 'server/index.mjs')],
      { ...env, PORT: String(port) },
      stateDir,
    );
    await waitHealthy(`http://127.0.0.1:${port}`, proc);
    const ctx = createContext(fixture.config, fixture.clients);
    let ids: string[] = [];
    for (let i = 0; i < 300 && !ids.includes(expected); i++) {
      ids = (await listDeployments(ctx)).map((d) => d.id);
      if (!ids.includes(expected)) await sleep(200);
    }
    expect(ids, logTail(proc)).toEqual([expected]);
    await killGroup(proc);
  });
});
