/**
 * A World process of one build (test/helpers/builds.ts) running the compiled e2e workflows
 * (test/helpers/upgrade-child.mjs), for the tests that mix builds on one table: the rolling upgrade
 * (test/e2e/upgrade.test.ts) and the rollback (test/e2e/rollback.test.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Build } from './builds.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The compiled e2e workflows (test/e2e/app, built by the integration setup). */
export const E2E_BUNDLE = path.join(here, '..', 'e2e', 'app', '.well-known', 'workflow', 'v1');

export interface BuildChild {
  proc: ChildProcess;
  pid: number;
  /** WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS in the process once its createWorld ran (`-`: unset). */
  lease: string;
  /** Starts `workflow` of workflows/checklist.ts with `args`; resolves with the run id. */
  start(tag: string, args: unknown[], workflow?: string): Promise<string>;
  output(): string;
}

/**
 * Spawns a process of `build` with `env` (over this process's; `undefined` removes a variable), appending the step bodies it runs
 * to `tallyFile`; resolves once it consumes. The process is pushed on `children` for the caller to stop.
 */
export function spawnBuildChild(
  build: Build,
  env: Record<string, string | undefined>,
  tallyFile: string,
  children: ChildProcess[],
  options: Record<string, unknown> = {},
): Promise<BuildChild> {
  const script = path.join(here, 'upgrade-child.mjs');
  const proc = spawn(
    process.execPath,
    [
      '--no-warnings',
      script,
      build.indexUrl,
      path.join(E2E_BUNDLE, 'flow.mjs'),
      path.join(E2E_BUNDLE, 'manifest.json'),
      tallyFile,
      JSON.stringify(options),
    ],
    {
      env: Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined)),
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  children.push(proc);
  let out = '';
  let err = '';
  let lease = '-';
  const waiting = new Map<string, { resolve: (id: string) => void; reject: (e: Error) => void }>();
  proc.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-20_000);
  });
  return new Promise((resolve, reject) => {
    proc.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-200_000);
      for (const line of d.toString().split('\n')) {
        const leased = /^lease (\S+)$/.exec(line);
        if (leased) lease = leased[1] as string;
        if (line === 'ready')
          resolve({
            proc,
            pid: proc.pid as number,
            lease,
            output: () => `${out}\n${err}`,
            start: (tag, args, workflow = 'countedSteps') =>
              new Promise((res, rej) => {
                waiting.set(tag, { resolve: res, reject: rej });
                proc.stdin?.write(`start ${tag} ${workflow} ${JSON.stringify(args)}\n`);
              }),
          });
        const m = /^(started|failed) (\S+) (.*)$/.exec(line);
        const w = m && waiting.get(m[2] as string);
        if (m && w) {
          waiting.delete(m[2] as string);
          if (m[1] === 'started') w.resolve(m[3] as string);
          else w.reject(new Error(`run ${m[2]} failed to start: ${m[3]}`));
        }
      }
    });
    proc.once('exit', (code, signal) =>
      reject(new Error(`a ${build.dir} process exited before it was ready (${code ?? signal}): ${err.slice(-3000)}`)),
    );
  });
}
