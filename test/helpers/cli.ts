/**
 * Helpers for CLI tests: spawn the real `bin/eve-world-aws` (dist/ is built by the global setup)
 * with a clean environment, read its output, and check for leftover processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'bin', 'eve-world-aws');

/** The parent env minus anything AWS or eve-world-aws, so tests never reach real AWS by accident. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      k.startsWith('AWS_') ||
      k.startsWith('EVE_WORLD_AWS_') ||
      k === 'JAVA_HOME' ||
      k === 'NO_COLOR' ||
      k === 'FORCE_COLOR'
    )
      continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run a command to completion with the CLI tests' clean environment; SIGKILL after the timeout. */
export function runCommand(
  command: string,
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 60_000,
  cwd = ROOT,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${path.basename(command)} ${args.join(' ')} timed out after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Run the CLI to completion (in the repository, or in `cwd`). */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 60_000,
  cwd = ROOT,
): Promise<CliResult> {
  return runCommand(process.execPath, [BIN, ...args], env, timeoutMs, cwd);
}

/** A long-running CLI process (emulate) with its output collected as it arrives. */
export class CliProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  /** `ownGroup`: start in a new process group, so `ctrlC()` can signal the whole group like a terminal. */
  constructor(args: string[], env: Record<string, string | undefined> = {}, ownGroup = false) {
    this.child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: cleanEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: ownGroup,
    });
    this.child.stdout?.on('data', (d: Buffer) => {
      this.stdout += d.toString();
    });
    this.child.stderr?.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Wait until stdout matches `re` (rejects if the process exits first or on timeout). */
  async waitFor(re: RegExp, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let done = false;
    void this.exited.then(() => {
      done = true;
    });
    while (!re.test(this.stdout)) {
      if (done)
        throw new Error(
          `exited before ${re}: ${JSON.stringify(await this.exited)}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`,
        );
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${re}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
      await sleep(100);
    }
  }

  /** What a terminal's Ctrl-C does: SIGINT to every process in the foreground group (java too). */
  ctrlC(): void {
    process.kill(-this.pid, 'SIGINT');
  }

  /** Last resort for a failed test: never leave the process behind. */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** `export K=V` lines -> { K: V } (values from emulate are never quoted: URLs and plain words). */
export function parseExports(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^export ([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2].replace(/^'(.*)'$/, '$1');
  }
  return env;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Wait for a process to disappear (an orphan is reaped by init a moment after it dies). */
export async function waitGone(pid: number, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await sleep(50);
  }
  return !isAlive(pid);
}

/** Direct children of `pid` (Linux /proc). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      // Field 4 is the parent pid; the command name (field 2) may contain spaces, so split after ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // the process went away while we looked
    }
  }
  return out;
}

/** PIDs of DynamoDB Local JVMs listening on `port` (Linux /proc). */
export function dynamoLocalOnPort(port: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      const i = args.indexOf('-port');
      if (args.some((a) => a.endsWith('DynamoDBLocal.jar')) && i >= 0 && args[i + 1] === String(port))
        out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

/** A process's command line, space-separated ('' when it is gone). */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}
