// `npm run bench`: the benchmark suite (issue 8). Builds what it needs, starts one embedded
// emulator stack (DynamoDB Local + fauxqs), runs real workflows on eve-world-aws and on
// @workflow/world-local, measures cold start, runs the streams bench (bench/streams), the KMS and
// step-lease benches (bench/kms.mjs, bench/lease.mjs), the telemetry cost (bench/telemetry.mjs), prints the tables and writes
// bench/results/<timestamp>.json and bench/results/latest.json.
// Benchmarks print; they never assert. Method: bench/README.md.
// `--quick` (`npm run bench:quick`, what CI runs): every part once at a small size, to prove the
// bench still runs (bench/lib/quick.mjs); it writes bench/results/quick.json only. With
// EVE_WORLD_AWS_SKIP_BUILD=1 an existing dist/ is used as it is (CI has just built it).
import './lib/polyfills.mjs';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchColdStart } from './cold-start.mjs';
import { benchKms, printKmsTable } from './kms.mjs';
import { benchLambdaShape, printLambdaShape } from './lambda-shape.mjs';
import { benchLease, printLeaseTable } from './lease.mjs';
import { srcOutOf } from './lib/dist.mjs';
import { fmt, table } from './lib/format.mjs';
import { CALL_LATENCY_MS, dollars, PRICES } from './lib/model.mjs';
import { QUICK, sized } from './lib/quick.mjs';
import { benchSession, printSessionTables } from './session.mjs';
import { benchStreams } from './streams.mjs';
import { benchTelemetry, printTelemetryTable } from './telemetry.mjs';
import { benchLocal, benchOurs, SCENARIOS } from './workflows.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
/** The compiled src/ (dist/src/), as the bench modules import it. */
const SRC_OUT = path.join(DIST, 'src');
const WELL_KNOWN = path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1');
/** The World's entry in this build. */
const ENTRY = path.join(DIST, 'src/index.js');
const RESULTS = path.join(ROOT, 'bench/results');
const log = (...a) => console.error(...a);
/** `--cold-before=<dir>`: also time the dist/ of another build (a checkout of main, built) in Table 5. */
const coldBefore = process.argv.find((a) => a.startsWith('--cold-before='))?.slice('--cold-before='.length);
/** `--only=a,b` or `--only a,b`: run a subset (default: everything). */
function onlyArg(argv) {
  const i = argv.findIndex((a) => a === '--only' || a.startsWith('--only='));
  if (i < 0) return 'workflows,session,cold,streams,kms,lease,telemetry,lambda';
  return argv[i] === '--only' ? (argv[i + 1] ?? '') : argv[i].slice(7);
}
const only = new Set(onlyArg(process.argv).split(','));

function build() {
  if (process.env.EVE_WORLD_AWS_SKIP_BUILD === '1' && existsSync(ENTRY)) {
    log('Using the existing dist/ (EVE_WORLD_AWS_SKIP_BUILD=1).');
    return { ok: true, skipped: true };
  }
  log('Building dist/ (npm run build)...');
  const r = spawnSync('npm', ['run', '--silent', 'build'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    const why = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-15).join('\n');
    if (!existsSync(ENTRY)) throw new Error(`npm run build failed and there is no dist/:\n${why}`);
    log(`WARNING: npm run build failed; benchmarking the existing dist/ instead.\n${why}`);
    return { ok: false, error: why };
  }
  return { ok: true };
}

function gitInfo() {
  const git = (...args) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }).stdout?.trim();
  return { commit: git('rev-parse', 'HEAD') || undefined, dirty: (git('status', '--porcelain') ?? '').length > 0 };
}

const n0 = (n) => fmt(n, 0);
const n1 = (n) => fmt(n, 1);
const n2 = (n) => fmt(n, 2);
const usd = (n) => (Number.isNaN(n) || n === undefined ? '—' : `$${n.toFixed(n < 1 ? 3 : 2)}`);

// ------------------------------------------------------------------ table 1

const CMD_ORDER = [
  'TransactWriteItems',
  'GetItem',
  'Query',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactGetItems',
  'SendMessage',
  'SendMessageBatch',
  'ReceiveMessage (with messages)',
  'DeleteMessage',
  'DeleteMessageBatch',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
  'PutObject',
  'GetObject',
  'CreateSchedule',
];
const SHORT = {
  TransactWriteItems: 'TxWrite',
  GetItem: 'Get',
  Query: 'Query',
  PutItem: 'Put',
  UpdateItem: 'Update',
  DeleteItem: 'Delete',
  BatchWriteItem: 'BatchW',
  TransactGetItems: 'TxGet',
  SendMessage: 'Send',
  SendMessageBatch: 'SendB',
  'ReceiveMessage (with messages)': 'Recv',
  DeleteMessage: 'DelMsg',
  DeleteMessageBatch: 'DelMsgB',
  ChangeMessageVisibility: 'ChgVis',
  ChangeMessageVisibilityBatch: 'ChgVisB',
  PutObject: 'S3 Put',
  GetObject: 'S3 Get',
  CreateSchedule: 'Sched',
};

const total = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);
const writesPerRun = (world) =>
  Object.entries(world)
    .filter(([k]) => k.startsWith('events.create:'))
    .reduce((a, [, v]) => a + v, 0);

/** seq10 - seq1, per added step: the cost of one more sequential step. */
function marginal(s10, s1, f) {
  return (f(s10) - f(s1)) / 9;
}

function table1(ours, local) {
  const sc = ours.scenarios;
  const cmds = CMD_ORDER.filter((c) => Object.values(sc).some((s) => s.counts[c]));
  const extra = [...new Set(Object.values(sc).flatMap((s) => Object.keys(s.counts)))].filter((c) => !cmds.includes(c));
  const all = [...cmds, ...extra];
  const cell = (s, c) => {
    const v = s.counts[c];
    if (!v) return '·';
    const f = s.failed[c];
    return f ? `${n1(v)} (${n1(f)}✗)` : n1(v);
  };
  const rows = SCENARIOS.map((d) => {
    const s = sc[d.id];
    const units = d.steps || d.hooks;
    return [d.label, ...all.map((c) => cell(s, c)), n1(total(s.counts)), units ? n1(total(s.counts) / units) : '—'];
  });
  const m = (f) => marginal(sc.seq10, sc.seq1, f);
  rows.push([
    '→ one more sequential step (seq10 − seq1) / 9',
    ...all.map((c) => {
      const v = m((s) => s.counts[c] ?? 0);
      return Math.abs(v) < 0.05 ? '·' : n1(v);
    }),
    n1(m((s) => total(s.counts))),
    n1(m((s) => total(s.counts))),
  ]);
  const a = table(
    'Table 1a. AWS calls per run, by command (eve-world-aws; mean of the measured runs)',
    ['workflow', ...all.map((c) => SHORT[c] ?? c), 'total', 'per step¹'],
    rows,
    [
      '(n✗) = of which failed (TransactionCanceled / ConditionalCheckFailed: retried by the World, billed by AWS).',
      'Recv = ReceiveMessage calls that returned messages; empty long polls are per idle consumer-second (Table 2).',
      '¹ per step body; for the hook workflow, per hook payload.',
    ],
  );

  if (!local) return a; // --skip-local: no comparison tables
  // 1b: versus the floor for a sequential inline step.
  const lsc = local.scenarios;
  const mw = (x) => marginal(x.seq10, x.seq1, (s) => writesPerRun(s.world));
  const ml = (x) => marginal(x.seq10, x.seq1, (s) => s.world['events.list'] ?? 0);
  const reads = (s) => (s.counts.GetItem ?? 0) + (s.counts.Query ?? 0) + (s.counts.TransactGetItems ?? 0);
  const b = table(
    'Table 1b. One more sequential inline step, against the floor',
    ['per added step', 'floor', 'eve-world-aws', `world-local ${local.version}`],
    [
      ['World writes (events.create)', '2', n1(mw(sc)), n1(mw(lsc))],
      ['events.list calls', '0', n1(ml(sc)), n1(ml(lsc))],
      ['AWS calls', '2', n1(m((s) => total(s.counts))), 'n/a'],
      ['  of which DynamoDB writes (TxWrite)', '2', n1(m((s) => s.counts.TransactWriteItems ?? 0)), 'n/a'],
      ['  of which DynamoDB reads (Get/Query)', '0', n1(m(reads)), 'n/a'],
      ['Write request units, billed (AWS rules)', '—', n1(m((s) => s.billedWru ?? Number.NaN)), 'n/a'],
      ['Write request units, DynamoDB Local report', '—', n1(m((s) => s.wru)), 'n/a'],
      ['Read request units', '0', n1(m((s) => s.rru)), 'n/a'],
      [
        'Per-run overhead (seq1 minus one step): AWS calls',
        '—',
        n1(total(sc.seq1.counts) - m((s) => total(s.counts))),
        'n/a',
      ],
      [
        'Per-run overhead: events.list',
        '0',
        n1((sc.seq1.world['events.list'] ?? 0) - ml(sc)),
        n1((lsc.seq1.world['events.list'] ?? 0) - ml(lsc)),
      ],
    ],
    [
      'Floor: a lazy step_started and a step_completed (two single-transaction writes), no events.list (the inline delta fast path).',
    ],
  );
  // 1c: World calls per run, both Worlds (the runtime's side of the contract).
  const kinds = [
    ['events.create', (w) => writesPerRun(w)],
    ['events.list', (w) => w['events.list'] ?? 0],
    [
      'other reads',
      (w) =>
        Object.entries(w)
          .filter(([k]) => !k.startsWith('events.create') && k !== 'events.list' && k !== 'queue')
          .reduce((x, [, v]) => x + v, 0),
    ],
    ['queue()', (w) => w.queue ?? 0],
  ];
  const c = table(
    'Table 1c. World calls per run (what @workflow/core asked of the World): eve-world-aws / world-local',
    ['workflow', ...kinds.map(([k]) => k)],
    SCENARIOS.map((d) => [d.label, ...kinds.map(([, f]) => `${n1(f(sc[d.id].world))} / ${n1(f(lsc[d.id].world))}`)]),
    [
      'Equal columns mean the runtime drove both Worlds the same way; the AWS calls above are what eve-world-aws spends per World call.',
    ],
  );
  return `${a}\n${b}\n${c}`;
}

// ------------------------------------------------------------------ table 2

/** Dollars at AWS's billing of the requests sent (billed WRU includes failed writes); older results: DynamoDB Local's units. */
function costOf(s) {
  const wru = s.billedWru ?? s.wru + s.failedWru;
  return dollars({ wru, rru: s.rru, sqsRequests: s.sqsRequests, s3: s.s3 });
}

function table2(ours) {
  const sc = ours.scenarios;
  const rows = SCENARIOS.map((d) => {
    const s = sc[d.id];
    const c = costOf(s);
    const st = s.stored;
    const s3req = total(s.s3);
    return [
      d.label,
      n1(s.billedWru),
      n1(s.billedGsiWru),
      n1(s.wru),
      n1(s.gsiWru),
      s.failedWru ? n1(s.failedWru) : '0',
      n1(s.rru),
      n1(s.sqsRequests),
      n0(s3req),
      `${n1(st.itemBytesPerRun / 1024)} / ${n1(st.billedBytesPerRun / 1024)}`,
      n1(st.s3BytesPerRun / 1024),
      usd(c.total * 1e6),
      d.steps ? usd((c.total * 1e6) / d.steps) : '—',
    ];
  });
  const m = (f) => marginal(sc.seq10, sc.seq1, f);
  const mc = m((s) => costOf(s).total);
  rows.push([
    '→ one more sequential step',
    n1(m((s) => s.billedWru)),
    n1(m((s) => s.billedGsiWru)),
    n1(m((s) => s.wru)),
    n1(m((s) => s.gsiWru)),
    n1(m((s) => s.failedWru)),
    n1(m((s) => s.rru)),
    n1(m((s) => s.sqsRequests)),
    '0',
    `${n1(m((s) => s.stored.itemBytesPerRun) / 1024)} / ${n1(m((s) => s.stored.billedBytesPerRun) / 1024)}`,
    '0.0',
    '—',
    usd(mc * 1e6),
  ]);
  const idle = ours.idle;
  const idleMonth = (30 * 24 * 3600) / (idle.waitTimeSeconds ?? 20);
  return table(
    'Table 2. Consumed capacity and cost per run (eve-world-aws)',
    [
      'workflow',
      'billed WRU',
      'of which GSI',
      'DDB Local WRU',
      'of which GSI',
      'failed WRU²',
      'RRU³',
      'SQS req',
      'S3 req',
      'KB stored⁴',
      'S3 KB',
      '$ / M runs',
      '$ / M steps',
    ],
    rows,
    [
      `Prices (${PRICES.region}, ${PRICES.asOf}): DynamoDB on-demand $${(PRICES.dynamodbWriteRequestUnit * 1e6).toFixed(3)} per million write request units, $${(PRICES.dynamodbReadRequestUnit * 1e6).toFixed(3)} per million read request units; SQS standard $${(PRICES.sqsRequest * 1e6).toFixed(2)} per million requests (64 KB chunks); S3 $${(PRICES.s3Put * 1e3).toFixed(3)} per 1,000 PUT, $${(PRICES.s3Get * 1e3).toFixed(4)} per 1,000 GET. Free tiers not applied; storage not included in $.`,
      'billed WRU: write request units as AWS bills the requests sent (bench/lib/billing.mjs: 1 per KB of the larger of old/new item, 2 per KB per transaction action incl. ConditionCheck, 1 per KB per index write, 2 for a changed index key; failed writes included); $ use it. DDB Local WRU/RRU: ConsumedCapacity (ReturnConsumedCapacity=INDEXES) as returned by DynamoDB Local for every successful call; GSI = the part spent on index copies.',
      '² failed writes: DynamoDB Local returns no capacity for them; estimated from the request (item size, x2 transactional, one copy per GSI key) as an upper bound, included in $.',
      '³ DynamoDB Local reports 0 for a Query that matches nothing; AWS bills the minimum (0.5 eventual / 1 strong), which is added here.',
      `⁴ item bytes left in the table by one run (DynamoDB size rules, approximate) / billed storage incl. 100 B per item and one copy per GSI the item is projected into. At $${PRICES.dynamodbStorageGbMonth}/GB-month, the seq10 run costs $${((sc.seq10.stored.billedBytesPerRun / 1024 ** 3) * PRICES.dynamodbStorageGbMonth * 1e6).toFixed(2)} per million runs per month kept.`,
      `SQS req = sends + deletes + visibility changes + receives that returned messages. Idle consumer: one long poll per ${idle.waitTimeSeconds ?? 20} s (measured ${idle.receivesInWindow} receive(s) in a ${idle.windowSeconds} s idle window = ${n2(idle.perIdleConsumerSecond)}/s) ≈ ${Math.round(idleMonth).toLocaleString('en-US')} requests = ${usd(idleMonth * PRICES.sqsRequest)} per consumer-month, independent of runs.`,
    ],
  );
}

// ------------------------------------------------------------------ table 3

function table3(ours, local) {
  const sc = ours.scenarios;
  const lsc = local.scenarios;
  const rows = SCENARIOS.map((d) => {
    const s = sc[d.id];
    const l = lsc[d.id];
    const units = d.steps || d.hooks;
    return [
      d.label,
      n0(s.wallMsMedian),
      n0(l.wallMsMedian),
      n2(s.wallMsMedian / l.wallMsMedian),
      units ? n1(s.wallMsMedian / units) : '—',
      units ? n1(l.wallMsMedian / units) : '—',
      n1(s.pathCalls),
      n0(s.pathMs),
      units ? n1(s.pathMs / units) : '—',
    ];
  });
  const m = (x, f) => marginal(x.seq10, x.seq1, f);
  const ms = m(sc, (s) => s.wallMsMedian);
  const ml = m(lsc, (s) => s.wallMsMedian);
  rows.push([
    '→ one more sequential step',
    n1(ms),
    n1(ml),
    n2(ms / ml),
    n1(ms),
    n1(ml),
    n1(m(sc, (s) => s.pathCalls)),
    n1(m(sc, (s) => s.pathMs)),
    n1(m(sc, (s) => s.pathMs)),
  ]);
  const lat = Object.entries(CALL_LATENCY_MS)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return table(
    `Table 3. Wall time, eve-world-aws (emulators) vs @workflow/world-local ${local.version}, and modelled AWS latency`,
    [
      'workflow',
      'ours ms/run',
      'local ms/run',
      'ours/local',
      'ours ms/step¹',
      'local ms/step¹',
      'critical-path calls',
      'modelled AWS ms/run',
      'modelled ms/step¹',
    ],
    rows,
    [
      'Wall time: median over the measured runs, from start() to the terminal event being written, same process, same compiled workflows, one run at a time. The sleep row includes the 1 s sleep.',
      'Emulator latency is not AWS latency (DynamoDB Local is a JVM on this machine; world-local writes files). Modelled AWS latency = the longest chain of calls that did not overlap in time (weighted interval scheduling over the recorded calls of the run) × the assumed in-region latency per call, excluding any sleep.',
      `Assumed latency per call (ms): ${lat} (delivery = SendMessage returned → the long poll returns it).`,
      '¹ per step body; for the hook workflow, per hook payload.',
    ],
  );
}

// ------------------------------------------------------------------ table 4

function table4(streams) {
  if (!streams) return '\nTable 4. Streams: not run.';
  const parts = streams.tables.map((t, i) =>
    table(
      `Table 4${'abcdefgh'[i] ?? i}. ${t.title}`,
      t.head,
      t.rows.filter((r) => !r[0].startsWith('warm')),
    ),
  );
  parts.push(
    "\nTables 4a-c are bench/streams (`npm run bench:streams`), 4d `npm run bench:tokens` (through core's writer, before = commit f1d0e53), 4e bench/throughput.mjs (BENCH_THROUGHPUT_RUNS runs), 4f bench/tail.mjs; the first three run as child processes with their own emulator stacks. In-process reader: same process as the writer (in-process bus); other process: a child-process reader that only polls.",
  );
  return parts.join('\n');
}

// ------------------------------------------------------------------ table 5

function table5(cold) {
  if (!cold) return '\nTable 5. Cold start: not run.';
  const rows = cold.map((c) => [
    c.name,
    n0(c.importAndCreateMsMedian),
    n0(c.importAndCreateMsP90),
    c.importAndCreateCpuMsMedian === undefined ? '—' : n0(c.importAndCreateCpuMsMedian),
    n0(c.processWallMsMedian),
    c.graph.files,
    c.graph.ownFiles ?? '—',
    c.graph.awsClients ? c.graph.awsClients.map((x) => x.replace('client-', '')).join(', ') || '—' : '—',
    n2(c.graph.bytes / 1024 / 1024),
    c.graph.packages,
    c.graph.topPackages
      .slice(0, 3)
      .map((p) => `${p.name} ${n0(p.bytes / 1024)} KB`)
      .join(', '),
  ]);
  return table(
    `Table 5. Cold start: fresh Node ${process.version} process, import + createWorld() (${cold[0]?.runs} runs each)`,
    [
      'World',
      'median ms',
      'p90 ms',
      'CPU ms',
      'process wall ms',
      'files loaded',
      'own modules',
      'AWS clients loaded',
      'MB loaded',
      'packages',
      'largest packages',
    ],
    rows,
    [
      "own modules = files of the World's own package (this package's dist/, or @workflow/world-local). AWS clients loaded = the @aws-sdk/client-* packages in the graph; S3, KMS and the Scheduler load on first use.",
      '`--cold-before=<dir>` adds the dist/ of another build (e.g. main before a change) as a row.',
      'ms = performance.now() around `await import(world)` + `createWorld()` inside the child; CPU ms = process.cpuUsage() (user + system) over the same span, less disturbed by other work on the machine; process wall = spawn to exit (adds Node start-up). One untimed run per World first warms the OS file cache; runs alternate between the Worlds.',
      'Import graph: a separate run with a module.register() load hook recording every ESM file plus require.cache for the CommonJS files (the AWS SDK is CommonJS); bytes = on-disk size of those files.',
    ],
  );
}

// ------------------------------------------------------------------ table 6

function table6(ours) {
  if (!ours?.indexSpread) return '\nTable 6. Index spread: not measured (result from an older bench).';
  const sc = ours.scenarios;
  const m = (f) => (f(sc.seq10) - f(sc.seq1)) / 9;
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  const rows = [
    ['One more sequential inline step: billed write units (AWS rules), all', n1(m((s) => s.billedWru ?? Number.NaN))],
    ['  of which index copies', n1(m((s) => s.billedGsiWru ?? Number.NaN))],
    ['One more sequential inline step: DynamoDB Local write units, all', n1(m((s) => s.wru))],
    ['  of which index copies', n1(m((s) => s.gsiWru))],
    ...SCENARIOS.map((d) => [
      `${d.label}: index write units per run (of all)`,
      `${n1(sc[d.id].gsiWru)} (of ${n1(sc[d.id].wru)})`,
    ]),
    ...SCENARIOS.map((d) => [
      `${d.label}: bytes copied into indexes per run`,
      fmt(sc[d.id].stored?.indexBytesPerRun ?? 0, 0),
    ]),
  ];
  for (const [g, v] of Object.entries(ours.indexSpread)) {
    rows.push([
      `${g}: run items / distinct keys / largest key's share`,
      `${v.runItems.items} / ${v.runItems.keys} / ${pct(v.runItems.maxShare)}`,
    ]);
    rows.push([
      `${g}: all items / distinct keys / largest key's share`,
      `${v.all.items} / ${v.all.keys} / ${pct(v.all.maxShare)} (${v.all.maxKey})`,
    ]);
  }
  const proj = Object.entries(ours.projections ?? {})
    .map(([g, p]) => `${g} ${p.type}${p.attrs?.length ? ` [${p.attrs.join(', ')}]` : ''}`)
    .join(', ');
  return table(
    'Table 6. Indexes: write units, bytes copied, and how the partition keys spread (eve-world-aws)',
    ['measure', 'value'],
    rows,
    [
      `Projections: ${proj}. Index write units are DynamoDB's ConsumedCapacity per GSI (ReturnConsumedCapacity INDEXES).`,
      "Spread: after all scenarios, over the items of the bench's table. Run items are listed under 16 shard keys per list (RUNS#<n>, WF#<name>#<n>); with this few runs the largest share is 1/16 plus sampling noise. Before sharding, one key (GSI2PK RUN, and WF#<name> per workflow) held 100% of the run items.",
    ],
  );
}

// ------------------------------------------------------------------ main

function printTables(results) {
  const out = [];
  if (results.ours) out.push(table1(results.ours, results.local), table2(results.ours));
  if (results.ours && results.local) out.push(table3(results.ours, results.local));
  out.push(table4(results.streams), table5(results.coldStart));
  if (results.ours) out.push(table6(results.ours));
  console.log(out.join('\n'));
  if (results.session) printSessionTables(results.session);
  const la = (l) => (l ?? []).map((x) => x.toFixed(1)).join(' ');
  console.log(
    `\nTotal ${results.seconds.toFixed(0)} s. Node ${results.machine.node}, ${results.machine.cpus} × ${results.machine.cpuModel}; load average ${la(results.machine.loadAvgAtStart)} at start, ${la(results.machine.loadAvgAtEnd)} at end (timings are sensitive to other work on the machine).`,
  );
}

async function main() {
  const from = process.argv.find((a) => a.startsWith('--from='))?.slice(7);
  if (from) {
    // Re-print the tables of a saved result file (no measuring).
    const saved = JSON.parse(readFileSync(from, 'utf8'));
    printTables(saved);
    if (saved.kms) printKmsTable(saved.kms);
    if (saved.lease) printLeaseTable(saved.lease);
    if (saved.telemetry) printTelemetryTable(saved.telemetry);
    if (saved.lambdaShape) printLambdaShape(saved.lambdaShape);
    return;
  }
  // The benches this one runs as child processes (bench:streams, bench:tokens, throughput) see it too.
  if (QUICK) process.env.BENCH_QUICK = '1';
  const started = new Date();
  const t0 = performance.now();
  const buildInfo = build();
  log('Building the e2e workflow bundle (test/e2e/build.mjs; skipped when fresh)...');
  const { buildE2eApp } = await import(pathToFileURL(path.join(ROOT, 'test/e2e/build.mjs')).href);
  await buildE2eApp();
  const { startStack } = await import(pathToFileURL(path.join(DIST, 'emulator/stack.js')).href);

  const results = {
    startedAt: started.toISOString(),
    machine: {
      node: process.version,
      platform: `${os.platform()} ${os.arch()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memGb: Math.round(os.totalmem() / 1024 ** 3),
      loadAvgAtStart: os.loadavg(),
    },
    git: gitInfo(),
    build: buildInfo,
    prices: PRICES,
    callLatencyMs: CALL_LATENCY_MS,
  };

  log('Starting the embedded emulator stack (DynamoDB Local + fauxqs)...');
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  try {
    if (only.has('workflows')) {
      log('Workflows on eve-world-aws...');
      results.ours = await benchOurs({
        stackEnv: stack.env,
        wellKnown: WELL_KNOWN,
        dist: pathToFileURL(SRC_OUT).href,
        log,
      });
      if (process.argv.includes('--skip-local')) log('Skipping @workflow/world-local (--skip-local).');
      else {
        log('Workflows on @workflow/world-local...');
        results.local = await benchLocal({ wellKnown: WELL_KNOWN, log });
      }
    }
    if (only.has('session')) {
      log('Session: one hook, 100 turns (bench/session.mjs)...');
      results.session = await benchSession({
        stackEnv: stack.env,
        wellKnown: WELL_KNOWN,
        dist: pathToFileURL(SRC_OUT).href,
        log,
        turns: Number(process.env.BENCH_SESSION_TURNS ?? sized(100, 3)),
        local: !process.argv.includes('--skip-local'),
      });
    }
    if (only.has('cold')) {
      log('Cold start...');
      const env = { ...stack.env, EVE_WORLD_AWS_PREFIX: 'bench-cold' };
      results.coldStart = await benchColdStart({
        log,
        targets: [
          {
            name: 'eve-world-aws (dist/src/index.js)',
            url: pathToFileURL(ENTRY).href,
            factory: 'createWorld',
            env,
          },
          ...(coldBefore
            ? [
                {
                  name: `eve-world-aws before (${coldBefore})`,
                  url: pathToFileURL(path.join(srcOutOf(path.resolve(coldBefore)), 'index.js')).href,
                  factory: 'createWorld',
                  env,
                },
              ]
            : []),
          {
            name: `@workflow/world-local`,
            url: import.meta.resolve('@workflow/world-local'),
            factory: 'createWorld',
            env: {},
            own: '@workflow/world-local',
          },
        ],
      });
    }
    if (only.has('kms')) {
      log('KMS envelope encryption (bench/kms.mjs)...');
      results.kms = await benchKms({
        stackEnv: stack.env,
        wellKnown: WELL_KNOWN,
        dist: pathToFileURL(SRC_OUT).href,
        log,
      });
    }
    if (only.has('lease')) {
      log('Step lease (bench/lease.mjs)...');
      results.lease = await benchLease({ stackEnv: stack.env, dist: pathToFileURL(SRC_OUT).href, log });
    }
    if (only.has('telemetry')) {
      log('Telemetry cost (bench/telemetry.mjs)...');
      results.telemetry = await benchTelemetry({
        stackEnv: stack.env,
        wellKnown: WELL_KNOWN,
        dist: pathToFileURL(SRC_OUT).href,
        log,
      });
    }
    if (only.has('lambda')) {
      // One run of each shape here; `node bench/lambda-shape.mjs --runs=3` gives the side-by-side table.
      log('The Lambda shape (bench/lambda-shape.mjs)...');
      results.lambdaShape = await benchLambdaShape({
        stackEnv: stack.env,
        wellKnown: WELL_KNOWN,
        dist: pathToFileURL(SRC_OUT).href,
        log,
        turns: sized(30, 3),
        runs: 1,
      });
    }
  } finally {
    await stack.stop();
  }
  if (only.has('streams')) {
    log('Streams (npm run bench:streams)...');
    results.streams = await benchStreams({ log });
  }
  results.seconds = (performance.now() - t0) / 1000;
  results.machine.loadAvgAtEnd = os.loadavg();

  printTables(results);
  if (results.kms) printKmsTable(results.kms);
  if (results.lease) printLeaseTable(results.lease);
  if (results.telemetry) printTelemetryTable(results.telemetry);
  if (results.lambdaShape) printLambdaShape(results.lambdaShape);

  mkdirSync(RESULTS, { recursive: true });
  const json = `${JSON.stringify({ ...results, quick: QUICK || undefined }, null, 2)}\n`;
  if (QUICK) {
    // Its numbers mean nothing: never the latest results.
    writeFileSync(path.join(RESULTS, 'quick.json'), json);
    console.log('Quick pass done (every part ran once, at a small size). Results: bench/results/quick.json');
    return;
  }
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const file = path.join(RESULTS, `${stamp}.json`);
  writeFileSync(file, json);
  writeFileSync(path.join(RESULTS, 'latest.json'), json);
  console.log(`Results: ${path.relative(ROOT, file)} (and bench/results/latest.json)`);
}

await main();
