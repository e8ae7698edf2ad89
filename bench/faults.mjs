// The fault suite at a larger size (#12): runs test/e2e/faults.test.ts (real workflows through real
// core with throttling / 5xx / lost responses on DynamoDB, SQS and S3, and duplicate SQS
// deliveries consumed by two Worlds at once) with EVE_FAULTS_RUNS runs per scenario, then prints a
// table and writes bench/results/faults-<timestamp>.json (+ faults-latest.json).
//
//   node bench/faults.mjs                 # 1000 runs per scenario (tens of minutes on 2 cores)
//   node bench/faults.mjs --runs 200 --rate 0.05 --dup-rate 0.1 --seed 3 --only dup   (wire|dup|kill|clock|deploy)
//
// `deploy`: two deployments on a table with deployment affinity, the old one retired by force
// half-way (test/helpers/faults-deployments.ts); its table follows the others.
//
// The test's own assertions (every run completes, dense slots, one terminal event per step and run,
// empty DLQ, nothing stranded) still apply; the extra step bodies are what this script reports.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, table } from './lib/format.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = path.join(ROOT, 'bench', 'results');

function arg(name, def) {
  const i = process.argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return def;
  const a = process.argv[i];
  return a.includes('=') ? a.slice(a.indexOf('=') + 1) : process.argv[i + 1];
}

const runs = Number(arg('runs', '1000'));
const rate = Number(arg('rate', '0.03'));
const dupRate = Number(arg('dup-rate', '0.1'));
const seed = Number(arg('seed', '1'));
const only = arg('only', '');
if (only && !['wire', 'dup', 'kill', 'clock', 'deploy'].includes(only))
  throw new Error(`--only must be wire, dup, kill, clock or deploy, got ${only}`);
for (const [k, v] of Object.entries({ runs, rate, dupRate, seed })) {
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k} must be a non-negative number (e.g. --runs 1000)`);
}

mkdirSync(RESULTS, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const file = path.join(RESULTS, `faults-${stamp}.json`);
console.error(`Fault suite: ${runs} runs per scenario, fault rate ${rate}, duplicate rate ${dupRate}, seed ${seed}...`);
const t0 = performance.now();
const res = spawnSync(
  process.execPath,
  [path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/e2e/faults.test.ts'],
  {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      EVE_FAULTS_RUNS: String(runs),
      EVE_FAULTS_RATE: String(rate),
      EVE_FAULTS_DUP_RATE: String(dupRate),
      EVE_FAULTS_SEED: String(seed),
      // One SIGKILL per 3 s of work at most; scale the cap with the run count.
      EVE_FAULTS_MAX_KILLS: process.env.EVE_FAULTS_MAX_KILLS ?? String(Math.max(4, Math.ceil(runs / 10))),
      EVE_FAULTS_REPORT: file,
      ...(only ? { EVE_FAULTS_ONLY: only } : {}),
    },
  },
);
let reports = [];
try {
  reports = JSON.parse(readFileSync(file, 'utf8'));
} catch {
  console.error(`No report at ${file}: the suite did not finish (exit ${res.status}).`);
  process.exit(1);
}
const out = {
  startedAt: stamp,
  seconds: (performance.now() - t0) / 1000,
  runs,
  rate,
  dupRate,
  seed,
  testsPassed: res.status === 0,
  reports,
};
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
writeFileSync(path.join(RESULTS, 'faults-latest.json'), `${JSON.stringify(out, null, 2)}\n`);

const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
const deployReports = reports.filter((r) => 'startedOld' in r);
const wireReports = reports.filter((r) => !('startedOld' in r));
const byKind = (r, kind) =>
  Object.entries(r.injected).reduce((n, [k, v]) => (k.split(' ')[1].startsWith(`${kind}:`) ? n + v : n), 0);
if (wireReports.length > 0)
  console.log(
    table(
      `Fault suite: ${runs} runs of countedSteps(3) (3 sequential steps + fan-out of 4 + sleep; the clock scenario's take 3 s a step) per scenario, seed ${seed}`,
      [
        'scenario',
        'runs done',
        'requests',
        'throttled',
        '5xx',
        'lost resp.',
        'dup sends',
        'SIGKILLs',
        'SIGSTOPs',
        'holes',
        'bad terminals',
        'DLQ',
        'stranded',
        'extra bodies',
        'extra %',
        'backstop',
        's',
      ],
      wireReports.map((r) => [
        r.scenario,
        `${r.completed}/${r.runs}`,
        sum(r.requests),
        byKind(r, 'throttle'),
        byKind(r, 'error5xx'),
        byKind(r, 'lose-response'),
        byKind(r, 'duplicate'),
        r.killed ?? 0,
        r.paused ? `${r.paused} (${r.pausedPastLease} > lease)` : 0,
        r.holeyLogs,
        r.badStepTerminals + r.badRunTerminals,
        r.dlqMessages,
        r.nonTerminalRuns + r.pendingClaims + r.queueLeft,
        `${r.extraBodies}/${r.bodiesExpected}${r.extraBodiesPaused ? ` (${r.extraBodiesPaused} paused)` : ''}`,
        fmt(r.extraBodiesPct, 2),
        r.backstopRuns === undefined ? '-' : `${r.backstopRuns} (${r.backstopWakes})`,
        fmt(r.seconds, 0),
      ]),
      [
        'holes = runs whose event ids are not slots 1..n; bad terminals = steps/runs without exactly one terminal event; stranded = runs left pending/running + idempotency claims left pending + messages left in the queue.',
        'extra bodies = step-body executions beyond one per step (side effects; the event log stays exactly-once); (n paused) = of steps mid-body in a process SIGSTOPped past its step lease.',
        'SIGSTOPs = consumer processes paused mid-body (the clock scenario; "> lease": longer than the step lease ttl).',
        'backstop = runs the liveness backstop woke (wakes sent): runs a fault left with no message that would wake them.',
        `Suite ${res.status === 0 ? 'passed' : 'FAILED (see above)'}. Results: ${path.relative(ROOT, file)}`,
      ],
    ),
  );
if (deployReports.length > 0)
  console.log(
    table(
      'Deployments: two on one table with deployment affinity, the old one retired by force half-way',
      [
        'runs',
        'new: done',
        'old: done',
        'old: failed by retire',
        'named first',
        'refused after',
        'accepted after',
        'bodies on other dep.',
        'bad terminals',
        'DLQ',
        'left',
        'faults',
        's',
      ],
      deployReports.map((r) => [
        r.runs,
        `${r.completedNew}/${r.startedNew}`,
        `${r.completedOld}/${r.startedOld}`,
        r.failedByRetire,
        r.namedFailing,
        r.refusedAfterRetire,
        r.acceptedAfterRetire,
        r.bodiesOnOtherDeployment,
        r.badStepTerminals + r.badRunTerminals,
        r.dlqMessages,
        r.queueLeft,
        sum(r.injected),
        fmt(r.seconds, 0),
      ]),
      [
        'old: failed by retire = runs of the retired deployment failed with DEPLOYMENT_MISMATCH (each named by the retirement first); refused/accepted after = starts on it once retired (accepted must be 0).',
        'bodies on other dep. = step bodies that ran in a process of the other deployment (must be 0).',
      ],
    ),
  );
process.exit(res.status ?? 1);
