/**
 * The deployment id is the workflow code core loads (issue 39, "Identity is the code that runs";
 * src/deployment/build-location.ts, src/deployment/fingerprint.ts), for a Workflow DevKit app with
 * its own server: `server/main.mjs`, an entry script outside the bundle folder, that imports the
 * bundle `wf build` wrote at the app's root (`.well-known/workflow/v1/`). Each app is built by the
 * real `wf build` CLI in its own folder and served by a process of this checkout's World with
 * affinity on, started from another working folder; the process prints the id it registered.
 *
 * - Two builds whose step differs get two ids (the entry script's folder is the same in both).
 * - A log file appearing (in the app, in `server/`, in the bundle folder), or the builder's cache,
 *   changes nothing at the next start.
 * - One source built in two folders gets one id, though `wf build` wrote absolute paths into its
 *   debug listings.
 * - Two builds given the same EVE_WORLD_AWS_DEPLOYMENT_ID: the second refuses to start with one
 *   error naming the fix, while the first build (and the same source built elsewhere) starts under
 *   it again.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listDeployments, readDeployment } from '../../src/deployment/registry.js';
import { reconcile } from '../../src/provision/index.js';
import { AFFINITY_MIN_READER } from '../../src/schema/formats.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { type Build, buildCurrent, removeBuild } from '../helpers/builds.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..');
/** Inside the checkout, so each app resolves `workflow` from its node_modules, as an app beside its own does. */
const scratch = path.join(root, 'node_modules', '.cache', 'eve-world-aws', `identity-${process.pid}`);
const wf = path.join(root, 'node_modules', '@workflow', 'cli', 'bin', 'run.js');
const bundleDir = (app: string) => path.join(app, '.well-known', 'workflow', 'v1');

/** The app's workflow: one step whose body is `body`. */
const source = (body: string) => `export async function greet(name: string): Promise<string> {
  'use step';
  ${body}
}
export async function hello(name: string): Promise<string> {
  'use workflow';
  return greet(name);
}
`;

/** The app's own server: the World (whose URL it is given) and the bundle relative to itself. */
const SERVER = `const [worldUrl] = process.argv.slice(2);
const { installPromiseWithResolvers } = await import(new URL('./util/polyfills.js', worldUrl).href);
installPromiseWithResolvers();
const { createWorld } = await import(worldUrl);
const flow = await import(new URL('../.well-known/workflow/v1/flow.mjs', import.meta.url).href);
const world = createWorld();
world.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
try {
  await world.start();
  process.stdout.write(\`ready \${await world.getDeploymentId()}\\n\`);
} catch (err) {
  process.stdout.write(\`refused \${JSON.stringify(\`\${err.name}: \${err.message}\`)}\\n\`);
} finally {
  await world.close();
}
`;

/** Writes app `name` (its workflow's step body `body`) and builds it with `wf build`; returns its folder. */
async function buildApp(name: string, body: string): Promise<string> {
  const app = path.join(scratch, name);
  mkdirSync(path.join(app, 'workflows'), { recursive: true });
  mkdirSync(path.join(app, 'server'), { recursive: true });
  writeFileSync(path.join(app, 'package.json'), '{"private":true,"type":"module"}\n');
  writeFileSync(path.join(app, 'workflows', 'hello.ts'), source(body));
  writeFileSync(path.join(app, 'server', 'main.mjs'), SERVER);
  await run(process.execPath, [wf, 'build'], { cwd: app, env: { ...process.env, NO_COLOR: '1' } });
  return app;
}

let fixture: Fixture;
let world: Build;
let env: NodeJS.ProcessEnv;
const apps: Record<'A' | 'A2' | 'B', string> = { A: '', A2: '', B: '' };
/** Build A's derived id, once the first test has served it. */
let idOfA: string | undefined;
/** Each test serves a few processes, each loading its 8 MB bundle: minutes on a loaded machine. */
const SLOW = 300_000;

/** Serves `app` once (from another working folder): `ready <id>` or `refused <error>`. */
async function serve(app: string, extra: Record<string, string> = {}): Promise<{ id?: string; refused?: string }> {
  const { stdout, stderr } = await run(
    process.execPath,
    ['--no-warnings', path.join(app, 'server', 'main.mjs'), world.indexUrl],
    { cwd: tmpdir(), env: { ...env, ...extra } },
  ).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`the server of ${app} failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
  });
  const ready = /^ready (\S+)$/m.exec(stdout);
  if (ready) return { id: ready[1] };
  const refused = /^refused (.+)$/m.exec(stdout);
  if (refused) return { refused: JSON.parse(refused[1] as string) as string };
  throw new Error(`no answer from the server of ${app}:\n${stdout}\n${stderr}`);
}

beforeAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  world = await buildCurrent('identity');
  fixture = await createFixture({}, 'idn');
  // `init --deployment-affinity`: the table every process of this test registers on.
  await reconcile(fixture.clients, fixture.config, 'apply', { minReader: AFFINITY_MIN_READER });
  env = { ...process.env, ...fixture.env, EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' };
  delete env.EVE_WORLD_AWS_DEPLOYMENT_ID;
  // One at a time: each build takes a core for seconds.
  apps.A = await buildApp('one/app', "return 'hello ' + name;");
  apps.A2 = await buildApp('two/app', "return 'hello ' + name;");
  apps.B = await buildApp('three/app', "return 'goodbye ' + name;");
}, 240_000);

afterAll(() => {
  if (world) removeBuild(world);
  rmSync(scratch, { recursive: true, force: true });
});

describe('the deployment id of an app with its own server (entry script outside the bundle folder)', () => {
  it(
    'two builds whose step differs get two ids; the same source built in two folders gets one',
    async () => {
      const [a, a2, b] = await Promise.all([serve(apps.A), serve(apps.A2), serve(apps.B)]);
      expect(a.id).toMatch(/^build:[0-9a-f]{16}$/);
      expect(b.id).toMatch(/^build:[0-9a-f]{16}$/);
      expect(b.id).not.toBe(a.id);
      // wf build wrote each folder's absolute paths into its debug listing: not part of the build.
      const listing = (app: string) =>
        readFileSync(path.join(bundleDir(app), 'flow.mjs.__wf_tmp.js.debug.json'), 'utf8');
      expect(listing(apps.A2)).not.toBe(listing(apps.A));
      expect(a2.id).toBe(a.id);
      idOfA = a.id;
      // Each registered, with its fingerprint beside the id.
      const registered = await listDeployments({ config: fixture.config, clients: fixture.clients } as never);
      expect(registered.map((d) => d.id).sort()).toEqual([a.id, b.id].sort());
      for (const d of registered) expect(`build:${d.fingerprint}`).toBe(d.id);
    },
    SLOW,
  );

  it(
    'a log file (in the app, its server folder or the bundle folder) or a build cache appearing changes nothing',
    async () => {
      writeFileSync(path.join(apps.A, 'app.log'), 'GET / 200\n');
      writeFileSync(path.join(apps.A, 'server', 'server.log'), 'listening\n');
      writeFileSync(path.join(bundleDir(apps.A), 'flow.log'), 'delivered\n');
      mkdirSync(path.join(apps.A, '.swc', 'plugins'), { recursive: true });
      writeFileSync(path.join(apps.A, '.swc', 'plugins', 'cache.json'), '{}');
      expect((await serve(apps.A)).id).toBe(idOfA);
    },
    SLOW,
  );

  it(
    'two builds under one EVE_WORLD_AWS_DEPLOYMENT_ID: the second refuses to start, naming the fix',
    async () => {
      const named = { EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-7' };
      expect(await serve(apps.A, named)).toEqual({ id: 'release-7' });
      const fingerprint = (
        await readDeployment({ config: fixture.config, clients: fixture.clients } as never, 'release-7')
      )?.fingerprint;
      expect(`build:${fingerprint}`).toBe(idOfA);
      const clash = await serve(apps.B, named);
      expect(clash.id).toBeUndefined();
      expect(clash.refused).toMatch(
        new RegExp(
          `^DeploymentClashError: EVE_WORLD_AWS_DEPLOYMENT_ID is release-7, which another build registered on table ${fixture.config.tableName} \\(build ${fingerprint}, first seen .*\\); this process runs build [0-9a-f]{16}\\. Two builds under one id would run each other's runs on their own code: give each build its own id \\(a release tag or commit\\), or unset it to derive build:[0-9a-f]{16}\\. Example: EVE_WORLD_AWS_DEPLOYMENT_ID=release-7-[0-9a-f]{8}$`,
        ),
      );
      // The registered build starts again under its id, and so do the same source built elsewhere and
      // the build copied as it is (a deploy that moves the artifact).
      cpSync(apps.A, path.join(scratch, 'copied', 'app'), { recursive: true });
      expect(
        await Promise.all([apps.A, apps.A2, path.join(scratch, 'copied', 'app')].map((app) => serve(app, named))),
      ).toEqual([{ id: 'release-7' }, { id: 'release-7' }, { id: 'release-7' }]);
    },
    SLOW,
  );
});
