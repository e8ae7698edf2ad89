// Throughput, side by side: many concurrent runs through ONE consumer process, on eve-world-aws
// (embedded emulators, SQS + the in-process consumer) and on @workflow/world-local, in the same
// process one after the other. Every run is `manySteps(steps)` (sequential steps); one run per
// ten more is `tokenStream(100, 20)` (one step streaming 100 chunks at 50 chunks/s through
// getWritable()). Prints a table; asserts nothing.
//
//   npm run build && node test/e2e/build.mjs && node bench/throughput.mjs [--runs=200] [--steps=10]
//
// runs/s and steps/s: all runs started at once, measured until the last one returns.
// Step latency: for step k of a run, the time from the previous step's step_completed (or
// run_started) to its own step_completed, from the event log's timestamps (scheduling + queue +
// execution), over every step of every run. AWS requests: SDK middleware (bench/lib/meter.mjs),
// every call from the first start() to the last return, divided by the steps (token runs count
// as one step each); SQS counts sends, deletes, visibility changes and receives that returned
// messages (empty long polls are idle cost, reported apart).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importOwn } from './lib/dist.mjs';
import { createRecorder, instrumentClients } from './lib/meter.mjs';
import { sized } from './lib/quick.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist/src');
const WELL_KNOWN = path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1');
const arg = (name, def) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? def);

function pct(values, p) {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
}

let flowInstances = 0;

async function loadApp() {
  const manifest = JSON.parse(readFileSync(path.join(WELL_KNOWN, 'manifest.json'), 'utf8'));
  // A fresh flow route per World: core's route caches the first World's queue handler.
  const flow = await import(`${pathToFileURL(path.join(WELL_KNOWN, 'flow.mjs')).href}?world=${++flowInstances}`);
  const api = await import('workflow/api');
  const runtime = await import('workflow/runtime');
  return {
    manySteps: manifest.workflows['workflows/checklist.ts'].manySteps,
    tokenStream: manifest.workflows['workflows/tokens.ts'].tokenStream,
    flow,
    api,
    runtime,
  };
}

/** Start everything at once, wait for every return value, then read the event logs. */
async function drive(app, _world, { runs, steps }) {
  const t0 = performance.now();
  const started = [];
  for (let i = 0; i < runs; i++) {
    started.push(app.api.start(app.manySteps, [steps]));
    if (i % 10 === 9) started.push(app.api.start(app.tokenStream, [100, 20]));
  }
  const handles = await Promise.all(started);
  await Promise.all(handles.map((h) => h.returnValue));
  const seconds = (performance.now() - t0) / 1000;
  return { handles, seconds };
}

async function stepLatencies(world, handles) {
  const lat = [];
  for (const h of handles) {
    const events = [];
    let cursor;
    do {
      const page = await world.events.list({
        runId: h.runId,
        pagination: { cursor, limit: 1000 },
        resolveData: 'none',
      });
      events.push(...page.data);
      cursor = page.hasMore ? page.cursor : undefined;
    } while (cursor);
    let prev = events.find((e) => e.eventType === 'run_started')?.createdAt;
    for (const e of events) {
      if (e.eventType !== 'step_completed') continue;
      if (prev) lat.push(new Date(e.createdAt).getTime() - new Date(prev).getTime());
      prev = e.createdAt;
    }
  }
  return lat;
}

function summary(label, { handles, seconds }, lat, runs, steps, rec) {
  const tokenRuns = handles.length - runs;
  const totalSteps = runs * steps + tokenRuns;
  const row = {
    world: label,
    runs: handles.length,
    seconds,
    runsPerSecond: handles.length / seconds,
    stepsPerSecond: totalSteps / seconds,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
  };
  if (rec) {
    const calls = rec.calls.filter((c) => !c.observer && c.inWindow);
    const ddb = calls.filter((c) => c.service === 'ddb').length;
    const sqs = calls.filter((c) => c.service === 'sqs' && (c.command !== 'ReceiveMessage' || c.received > 0)).length;
    row.ddbPerStep = ddb / totalSteps;
    row.sqsPerStep = sqs / totalSteps;
  }
  return row;
}

async function onAws(app, stackEnv, opts) {
  const dist = pathToFileURL(DIST).href;
  const { createWorld } = await importOwn(dist, 'index.js');
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  const { reconcile } = await importOwn(dist, 'provision/index.js');
  const config = loadConfig({ ...stackEnv, EVE_WORLD_AWS_PREFIX: `bench-tp-${randomBytes(3).toString('hex')}` });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const rec = createRecorder();
  await instrumentClients(clients, rec);
  const world = createWorld({ config, clients });
  world.registerHandler('__wkf_workflow_', app.flow.POST);
  await world.start();
  app.runtime.setWorld(world);
  try {
    const mark = rec.mark();
    const result = await drive(app, world, opts);
    for (const c of rec.since(mark)) c.inWindow = true;
    const lat = await stepLatencies(world, result.handles);
    return {
      ...summary(
        `eve-world-aws (consumer concurrency ${config.consumerConcurrency})`,
        result,
        lat,
        opts.runs,
        opts.steps,
        rec,
      ),
    };
  } finally {
    app.runtime.setWorld(undefined);
    await world.close();
    destroyClients(clients);
  }
}

async function onLocal(app, opts) {
  const { createWorld } = await import('@workflow/world-local');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'eve-bench-tp-local-'));
  const world = createWorld({ dataDir });
  world.registerHandler('__wkf_workflow_', app.flow.POST);
  await world.start();
  app.runtime.setWorld(world);
  try {
    const result = await drive(app, world, opts);
    const lat = await stepLatencies(world, result.handles);
    return summary('@workflow/world-local', result, lat, opts.runs, opts.steps);
  } finally {
    app.runtime.setWorld(undefined);
    await world.close?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchThroughput({ runs = sized(200, 10), steps = sized(10, 3), log = console.error } = {}) {
  const app = await loadApp();
  const { startStack } = await import(pathToFileURL(path.join(ROOT, 'dist/emulator/stack.js')).href);
  log(`Throughput: ${runs} runs x ${steps} steps + ${Math.floor(runs / 10)} token-streaming runs, all at once`);
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  const rows = [];
  try {
    rows.push(await onAws(app, stack.env, { runs, steps }));
  } finally {
    await stack.stop();
  }
  rows.push(await onLocal(await loadApp(), { runs, steps }));
  return rows;
}

export function printThroughput(rows, { runs, steps }) {
  const f = (n, d = 1) => (n === undefined || Number.isNaN(n) ? '-' : n.toFixed(d));
  const head = [
    'world',
    'runs',
    'seconds',
    'runs/s',
    'steps/s',
    'step p50 ms',
    'step p99 ms',
    'DDB req/step',
    'SQS req/step',
  ];
  const cells = [
    head,
    ...rows.map((r) => [
      r.world,
      String(r.runs),
      f(r.seconds),
      f(r.runsPerSecond, 2),
      f(r.stepsPerSecond),
      f(r.p50, 0),
      f(r.p99, 0),
      f(r.ddbPerStep, 2),
      f(r.sqsPerStep, 2),
    ]),
  ];
  const width = head.map((_, i) => Math.max(...cells.map((c) => c[i].length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  console.log(
    `\nThroughput: ${runs} concurrent runs of ${steps} sequential steps + ${Math.floor(runs / 10)} token-streaming runs (100 chunks at 50/s), one consumer process`,
  );
  console.log(line(head));
  console.log(`|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const c of cells.slice(1)) console.log(line(c));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const runs = arg('runs', sized(200, 10));
  const steps = arg('steps', sized(10, 3));
  printThroughput(await benchThroughput({ runs, steps }), { runs, steps });
  process.exit(0);
}
