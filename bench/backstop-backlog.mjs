// The liveness backstop under a backlog (issue 40, item 4; src/backstop/backlog.ts): N runs'
// messages wait in the queue while the consumers are stopped, for longer than B + T; the backstop
// ticks meanwhile (at the defaults, B = 60 s and T = 30 s, on an injected clock: `--backlog-minutes`
// of ticks without waiting them); then a consumer starts and drains the queue. Three variants per
// run, each on fresh resources of one embedded emulator stack:
//   control  no backstop tick: the workload's own sends and deliveries;
//   ungated  the backstop as before this change: every repeat wake goes out (the backlog reader
//            answers "no backlog");
//   gated    this build: a repeat wake waits while the queue shows messages.
// The runs are `gated(key)` (one step, its body counted in `globalThis.__e2eStepTally`), started on
// a World with no poller; the ticks are `runBackstopTick` every T of the injected clock (`ungated`:
// a backlog reader that answers 0); the drain is a World with the in-process poller (concurrency 8,
// its own ticker off), until SQS shows no message visible, in flight or delayed three seconds in a
// row and every body ran. Measured: wakes sent and held (the tick reports), SendMessage calls after
// the runs were queued (SDK middleware) and flow-route deliveries, each beyond the control's of the
// same run, bodies that ran twice, runs completed. The JSON is written after every run.
//
//   node bench/backstop-backlog.mjs [--n=1000] [--runs=3] [--backlog-minutes=10]
//
// Needs dist/ (npm run build); builds the e2e workflow bundle when stale. Prints the table (median
// and range over the runs) and writes bench/results/backstop-backlog-<timestamp>.json.
import './lib/polyfills.mjs';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { importOwn, srcOutOf } from './lib/dist.mjs';
import { fmt, table } from './lib/format.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WELL_KNOWN = path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1');
const B = 60_000;
const T = 30_000;
const VARIANTS = ['control', 'ungated', 'gated'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

function arg(name, fallback) {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : fallback;
}

async function limited(items, n, fn) {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]);
    }),
  );
}

let flowInstances = 0;

/** One variant on fresh resources: N runs queued, the backlog's ticks, then the drain. */
async function variant({ dist, stackEnv, n, backlogMs, kind, log }) {
  const { createWorld } = await importOwn(dist, 'index.js');
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  const { reconcile } = await importOwn(dist, 'provision/index.js');
  const { createContext } = await importOwn(dist, 'context/world-context.js');
  const { runBackstopTick } = await importOwn(dist, 'backstop/index.js');
  const api = await import('workflow/api');
  const runtime = await import('workflow/runtime');
  const workflows = JSON.parse(readFileSync(path.join(WELL_KNOWN, 'manifest.json'), 'utf8')).workflows[
    'workflows/checklist.ts'
  ];
  // A fresh flow route per World (core's route caches the first World's queue handler).
  const flow = await import(`${pathToFileURL(path.join(WELL_KNOWN, 'flow.mjs')).href}?bb=${++flowInstances}`);

  const tag = `bb-${kind}-${randomBytes(3).toString('hex')}`;
  const env = { ...stackEnv, EVE_WORLD_AWS_PREFIX: tag, EVE_WORLD_AWS_CONCURRENCY: '8' };
  const config = loadConfig(env);
  // The defaults, untuned: the bound the docs state is for them.
  if (config.backstopSeconds * 1000 !== B || config.backstopTickSeconds * 1000 !== T)
    throw new Error(
      `the backstop's defaults changed (B = ${config.backstopSeconds} s, T = ${config.backstopTickSeconds} s)`,
    );
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  let sends = 0;
  clients.sqs.middlewareStack.add(
    (next, context) => async (a) => {
      if (context.commandName === 'SendMessageCommand') sends++;
      return next(a);
    },
    { step: 'initialize', name: 'benchCountSends' },
  );
  const ctx = createContext(config, clients);
  // The consumers are stopped: a World with no poller (and so no in-process backstop ticker).
  const producer = createWorld({ config, clients, consumer: { consumer: 'none', earlyDelivery: false } });
  await producer.start();
  runtime.setWorld(producer);
  globalThis.__e2eStepTally ??= new Map();
  const tally = globalThis.__e2eStepTally;
  const keys = Array.from({ length: n }, (_, i) => `${tag}:${i}`);
  const runIds = [];
  const t0 = Date.now();
  await limited(keys, 16, async (key) => {
    runIds.push((await api.start(workflows.gated, [key])).runId);
  });
  const queued = sends;
  log(`    ${kind}: ${n} runs queued in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

  // The backlog: ticks every T from the last commit on, while nothing consumes.
  const backstop = { woken: 0, held: 0, checks: 0, sends: 0, ms: 0 };
  if (kind !== 'control') {
    const start = Date.now();
    const from = Date.now();
    for (let now = from; now <= from + backlogMs; now += T) {
      const report = await runBackstopTick(ctx, {
        now: () => now,
        logger: quiet,
        ...(kind === 'ungated' ? { backlog: async () => 0 } : {}),
      });
      backstop.woken += report.woken;
      backstop.held += report.held ?? 0;
      backstop.checks += report.checked;
    }
    backstop.sends = sends - queued;
    backstop.ms = Date.now() - start;
    log(
      `    ${kind}: backlog of ${backlogMs / 60_000} min ticked in ${(backstop.ms / 1000).toFixed(0)} s: ${backstop.woken} wakes, ${backstop.held} held`,
    );
  }

  // The consumers start (without the in-process ticker: only the ticks above are measured, and
  // the control has none).
  let deliveries = 0;
  const consumer = createWorld({
    config: loadConfig(env, { backstopTickSeconds: 0 }),
    clients,
    consumer: { earlyDelivery: false },
  });
  consumer.registerHandler('__wkf_workflow_', (req) => {
    deliveries++;
    return flow.POST(req);
  });
  const drainStart = Date.now();
  await consumer.start();
  const queueUrl = await (await importOwn(dist, 'queue/transport.js')).createTransport(ctx).queueUrl();
  const ran = () => keys.filter((k) => (tally.get(k) ?? 0) > 0).length;
  let empty = 0;
  for (;;) {
    await sleep(1000);
    const a = await clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const left =
      Number(a.Attributes?.ApproximateNumberOfMessages) +
      Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible) +
      Number(a.Attributes?.ApproximateNumberOfMessagesDelayed);
    empty = left === 0 && ran() === n ? empty + 1 : 0;
    if (empty >= 3) break;
    if (Date.now() - drainStart > 3 * 3600_000)
      throw new Error(`${kind}: not drained after 3 h (${left} left, ${ran()}/${n} ran)`);
  }
  const drainMs = Date.now() - drainStart;
  await consumer.close();
  let completed = 0;
  await limited(runIds, 16, async (id) => {
    if ((await producer.runs.get(id, { resolveData: 'none' })).status === 'completed') completed++;
  });
  const twice = keys.filter((k) => (tally.get(k) ?? 0) > 1).length;
  await producer.close();
  runtime.setWorld(undefined);
  destroyClients(clients);
  const out = {
    kind,
    n,
    backlogMinutes: backlogMs / 60_000,
    queuedSends: queued,
    backstop,
    drainSends: sends - queued - backstop.sends,
    sendsAfterQueued: sends - queued,
    deliveries,
    drainMs,
    completed,
    bodiesTwice: twice,
  };
  log(
    `    ${kind}: drained in ${(drainMs / 1000).toFixed(0)} s; ${out.sendsAfterQueued} sends after the runs were queued, ${deliveries} deliveries, ${completed}/${n} completed, ${twice} bodies twice`,
  );
  return out;
}

const spread = (values) => {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median: m, min: s[0], max: s.at(-1) };
};
const range = (s, d = 0) =>
  s.min === s.max ? fmt(s.median, d) : `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;

export function summarize(runs) {
  const by = (kind) => runs.map((r) => r.variants.find((v) => v.kind === kind));
  const control = by('control');
  const out = {};
  for (const kind of VARIANTS) {
    const vs = by(kind);
    const extra = vs.map((v, i) => v.sendsAfterQueued - control[i].sendsAfterQueued);
    const extraDeliveries = vs.map((v, i) => v.deliveries - control[i].deliveries);
    out[kind] = {
      wakes: spread(vs.map((v) => v.backstop.woken)),
      held: spread(vs.map((v) => v.backstop.held)),
      extraSends: spread(extra),
      extraDeliveries: spread(extraDeliveries),
      drainSeconds: spread(vs.map((v) => v.drainMs / 1000)),
      bodiesTwice: spread(vs.map((v) => v.bodiesTwice)),
      completed: spread(vs.map((v) => v.completed)),
    };
  }
  return out;
}

export function printBacklog(r) {
  const s = r.summary;
  const rows = VARIANTS.map((k) => [
    k,
    range(s[k].wakes),
    range(s[k].held),
    range(s[k].extraSends),
    range(s[k].extraDeliveries),
    range(s[k].bodiesTwice),
    `${range(s[k].completed)}/${r.n}`,
    range(s[k].drainSeconds),
  ]);
  console.log(
    table(
      `Backstop under a backlog: ${r.n} runs queued, consumers stopped for ${r.backlogMinutes} min of backstop ticks (B = 60 s, T = 30 s), then drained; median (range) of ${r.runs.length} runs`,
      ['variant', 'wakes', 'held', 'extra sends', 'extra deliveries', 'bodies twice', 'completed', 'drain (s)'],
      rows,
      [
        'Extra sends and deliveries: beyond the control variant (no backstop) of the same run. ungated: every repeat wake goes out (the backstop before this change). gated: a repeat wake waits while the queue shows messages (src/backstop/backlog.ts); bound: one wake per run.',
        `${r.facts.date.slice(0, 16).replace('T', ' ')} UTC; commit ${r.facts.commit}; Node ${r.facts.node}; ${r.facts.cpus} CPUs; load ${r.facts.loadAtStart.join(' / ')} at the start, ${r.loadAtEnd.join(' / ')} at the end; DynamoDB Local + fauxqs on 127.0.0.1.`,
      ],
    ),
  );
}

// Standalone: node bench/backstop-backlog.mjs (needs dist/: npm run build).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const n = arg('n', 1000);
  const runs = arg('runs', 3);
  const backlogMs = arg('backlog-minutes', 10) * 60_000;
  const log = (...a) => console.error(...a);
  const DIST = path.join(ROOT, 'dist');
  const dist = pathToFileURL(srcOutOf(DIST)).href;
  log('Building the e2e workflow bundle (test/e2e/build.mjs; skipped when fresh)...');
  const { buildE2eApp } = await import(pathToFileURL(path.join(ROOT, 'test/e2e/build.mjs')).href);
  await buildE2eApp();
  const { machineFacts } = await import('./session-runs.mjs');
  const facts = machineFacts({ dist, force: true, maxLoad: Number.POSITIVE_INFINITY });
  const { startStack } = await import(pathToFileURL(path.join(DIST, 'emulator/stack.js')).href);
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  for (const signal of ['SIGINT', 'SIGTERM'])
    process.once(signal, () => {
      stack.stop().finally(() => process.exit(130));
    });
  const result = { facts, n, backlogMinutes: backlogMs / 60_000, runs: [] };
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  const file = path.join(ROOT, 'bench/results', `backstop-backlog-${facts.date.replace(/[:.]/g, '-')}.json`);
  // Written after every run, so a bench cut short keeps what it measured.
  const save = () => {
    result.loadAtEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
    result.summary = summarize(result.runs);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  };
  try {
    for (let i = 1; i <= runs; i++) {
      const load = os.loadavg().map((x) => x.toFixed(2));
      log(`run ${i}/${runs} (load ${load.join(' ')})`);
      const variants = [];
      for (const kind of VARIANTS) variants.push(await variant({ dist, stackEnv: stack.env, n, backlogMs, kind, log }));
      result.runs.push({ variants, loadBefore: load.map(Number) });
      save();
    }
  } finally {
    await stack.stop();
  }
  save();
  printBacklog(result);
  console.log(`Results: ${path.relative(ROOT, file)}`);
  process.exit(0);
}
