/**
 * Two builds of one workflow whose code differs, for the deployment-affinity tests
 * (test/e2e/affinity.test.ts, in-process shape; test/e2e/affinity-lambda.test.ts, Lambda shape):
 * `ordered(label)` runs step A and step B in the build's order with a hook between them, and
 * returns `{ build, order }`, so a run's result says which build's code ran each half.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { StandaloneBuilder } from '@workflow/builders';

/** The workflow's file in each build's folder. */
export const WORKFLOW_FILE = 'workflows/order.ts';

export type StepOrder = ['a', 'b'] | ['b', 'a'];

/** The workflow of build `name`: its two steps in `order`, and a hook between them. */
function source(name: string, order: StepOrder): string {
  const call = (s: string) => `order.push(await step${s.toUpperCase()}(label));`;
  return `import { createHook } from 'workflow';
async function stepA(label: string): Promise<string> {
  'use step';
  return 'a';
}
async function stepB(label: string): Promise<string> {
  'use step';
  return 'b';
}
export async function ordered(label: string): Promise<{ build: string; order: string[] }> {
  'use workflow';
  const order: string[] = [];
  ${call(order[0])}
  const hook = createHook<{ go: boolean }>({ token: 'gate:' + label });
  for await (const _ of hook) break;
  ${call(order[1])}
  return { build: '${name}', order };
}
`;
}

/** Compiles build `name` (its steps in `order`) into `<scratch>/<name>`; returns that folder. */
export async function buildOrderedApp(scratch: string, name: string, order: StepOrder): Promise<string> {
  const dir = path.join(scratch, name);
  mkdirSync(path.join(dir, 'workflows'), { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{"private":true,"type":"module"}\n');
  writeFileSync(path.join(dir, WORKFLOW_FILE), source(name, order));
  await new StandaloneBuilder({
    dirs: ['./workflows'],
    workingDir: dir,
    buildTarget: 'standalone',
    stepsBundlePath: './.well-known/workflow/v1/__step_registrations.mjs',
    workflowsBundlePath: './.well-known/workflow/v1/flow.mjs',
    webhookBundlePath: './.well-known/workflow/v1/webhook.mjs',
    // Absolute: the builder resolves it against process.cwd(), not workingDir (test/e2e/build.mjs).
    workflowManifestPath: path.join(dir, '.well-known/workflow/v1/manifest.json'),
  }).build();
  return dir;
}

/** A child process serving one build (test/helpers/affinity-child.mjs, lambda-host-child.mjs). */
export interface OrderedChild {
  proc: ChildProcess;
  /** The fields of its `ready <deploymentId> [...]` line. */
  ready: string[];
  /** Starts `ordered(label)`: resolves with the run id (line `started <tag> <runId>`). */
  start(tag: string, label: string): Promise<string>;
  /** Resumes the hook `token` (line `resumed <tag> <...>`). */
  resume(tag: string, token: string): Promise<string>;
  output(): string;
}

/**
 * Spawns `node <script> ...args` and speaks its line protocol: commands on stdin (`start`,
 * `resume`), answers on stdout (`started|resumed|failed <tag> <rest>`); resolves once it prints
 * `ready ...`, rejects if it exits first. The process is pushed on `children` for the caller to stop.
 */
export function spawnOrderedChild(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  children: ChildProcess[],
  what: string,
): Promise<OrderedChild> {
  const proc = spawn(process.execPath, ['--no-warnings', script, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(proc);
  let out = '';
  let err = '';
  const waiting = new Map<string, { resolve: (id: string) => void; reject: (e: Error) => void }>();
  const ask = (tag: string, line: string) =>
    new Promise<string>((resolve, reject) => {
      waiting.set(tag, { resolve, reject });
      proc.stdin?.write(`${line}\n`);
    });
  proc.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-20_000);
  });
  return new Promise((resolve, reject) => {
    proc.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-200_000);
      for (const line of d.toString().split('\n')) {
        const ready = /^ready (.+)$/.exec(line);
        if (ready)
          resolve({
            proc,
            ready: (ready[1] as string).split(' '),
            output: () => `${out}\n${err}`,
            start: (tag, label) => ask(tag, `start ${tag} ordered ${JSON.stringify([label])}`),
            resume: (tag, token) => ask(tag, `resume ${tag} ${token} ${JSON.stringify({ go: true })}`),
          });
        const m = /^(started|resumed|failed) (\S+) (.*)$/.exec(line);
        const w = m && waiting.get(m[2] as string);
        if (m && w) {
          waiting.delete(m[2] as string);
          if (m[1] === 'failed') w.reject(new Error(`${m[2]} failed: ${m[3]}`));
          else w.resolve(m[3] as string);
        }
      }
    });
    proc.once('exit', (code, signal) =>
      reject(new Error(`${what} exited before it was ready (${code ?? signal}): ${err.slice(-3000)}`)),
    );
  });
}
