// The Lambda shape, measured (issue 41): the session bench's chat session (bench/session.mjs: one
// hook, each turn a step plus a step streaming 5 chunks, real @workflow/core, real World, the
// emulators) delivered the way each deployment shape delivers it, side by side:
//
// - `in-process`: the World's own poller in the host process (the figures docs/benchmarks.md
//   already gives; the reference).
// - `worker` (the CDK construct's two-function shape): an event source mapping (a receive loop on
//   the queue) invokes the SQS worker (this checkout's createSqsHandler, in its own World context),
//   which POSTs each record signed to the host's flow route over HTTP (127.0.0.1: the Function URL
//   hop without its front end), and the mapping deletes what the worker did not report failed.
// - `host` (`consumer: 'host'`): the mapping invokes the host itself; the Web Adapter's pass-through
//   is a POST of the raw batch to the flow route with `x-amzn-request-context: null`, which the
//   World's route delivers in process (src/consumer/delivery/pass-through.ts).
//
// The mapping's own latency (message sent -> function invoked) is not the emulator's: each batch
// waits a delay drawn from the published SQS-standard-to-Lambda distribution (p50 16 ms, p90 34 ms,
// p99 105 ms; piecewise linear between those quantiles, 8 ms at the bottom and 150 ms at the top,
// both assumed) after the emulator's receive returns. No early delivery in either Lambda shape
// (nothing registers an in-process handler in a Lambda host): every message takes the mapping.
//
// Per turn: latency (resumeHook() -> last chunk read), p50/p99 over turns 2..N; Lambda requests and
// GB-seconds per turn for each function (duration of each invocation, rounded up to 1 ms, times
// its memory: host 1024 MB x86_64, worker 256 MB arm64, the construct's defaults) at list prices.
// A cold turn: the warm p50 plus each cold init the turn pays in series (the worker: its bundle
// imported in a fresh Node process; the host: the World imported and created in a fresh process;
// the sandbox and the eve app's own start are the same in both shapes and are not in it).
//
// node bench/lambda-shape.mjs [--runs=3] [--turns=30] [--force] [--max-load=0.5] [--quick] (after
// `npm run build`); the JSON goes to bench/results/lambda-shape-<timestamp>.json. `npm run bench`
// runs it once (`--only=lambda`).
import './lib/polyfills.mjs';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runChild } from './lib/child.mjs';
import { importOwn, srcOutOf, stackUrlOf } from './lib/dist.mjs';
import { fmt, mean, median, pct, table } from './lib/format.mjs';
import { createRecorder, instrumentWorld } from './lib/meter.mjs';
import { sized } from './lib/quick.mjs';
import { loadSessionApp, runSession } from './session.mjs';
import { machineFacts, notIdle } from './session-runs.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECRET = 'b3c1e5a7d9f2b4c6e8a0d2f4b6c8e0a2d4f6b8c0e2a4d6f8b0c2e4a6d8f0b2c4';
const FLOW_PATH = '/.well-known/workflow/v1/flow';
const SHAPES = ['in-process', 'worker', 'host'];
/** Lambda list prices (us-east-1): per GB-second by architecture, per request. */
export const LAMBDA_PRICES = { x86GbSecond: 0.0000166667, armGbSecond: 0.0000133334, request: 0.2 / 1e6 };
const HOST = { gb: 1, price: LAMBDA_PRICES.x86GbSecond };
const WORKER = { gb: 0.25, price: LAMBDA_PRICES.armGbSecond };
/** Published SQS standard -> Lambda latency quantiles (ms); the ends are assumptions. */
const ESM_QUANTILES = [
  [0, 8],
  [0.5, 16],
  [0.9, 34],
  [0.99, 105],
  [1, 150],
];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One draw from the modelled event source mapping latency. */
export function esmDelay(u = Math.random()) {
  for (let i = 1; i < ESM_QUANTILES.length; i++) {
    const [q1, v1] = ESM_QUANTILES[i];
    const [q0, v0] = ESM_QUANTILES[i - 1];
    if (u <= q1) return v0 + ((u - q0) / (q1 - q0)) * (v1 - v0);
  }
  return ESM_QUANTILES.at(-1)[1];
}

/** A local HTTP server for `handler` (the host's Function URL, minus its front end). */
async function serveRoute(handler) {
  const http = await import('node:http');
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const r = await handler(
      new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }),
    );
    res.writeHead(r.status, Object.fromEntries(r.headers));
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/** Time each call of `fn` as one Lambda invocation of `fn`'s function into `book`. */
const billed = (book, rec, fn) => async (arg) => {
  const start = rec.now();
  try {
    return await fn(arg);
  } finally {
    book.push({ start, ms: Math.ceil(rec.now() - start) });
  }
};

/** The event source mapping: receive, wait the modelled delay, invoke, delete what was not failed. */
function eventSourceMapping({ sqs, queueUrl, queueArn, invoke }) {
  const { ReceiveMessageCommand, DeleteMessageBatchCommand } = sqs.commands;
  let polling = true;
  const inFlight = new Set();
  const loop = (async () => {
    while (polling) {
      const got = await sqs.client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      const msgs = got.Messages ?? [];
      if (msgs.length === 0) continue;
      const Records = msgs.map((m) => ({
        messageId: m.MessageId,
        receiptHandle: m.ReceiptHandle,
        body: m.Body ?? '',
        attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(Date.now()), ...m.Attributes },
        messageAttributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
            k,
            { stringValue: v.StringValue, dataType: v.DataType ?? 'String' },
          ]),
        ),
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: 'us-east-1',
      }));
      const p = (async () => {
        await sleep(esmDelay());
        const answer = await invoke({ Records });
        const failed = new Set((answer?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        const done = msgs.filter((m) => !failed.has(m.MessageId));
        if (done.length > 0)
          await sqs.client
            .send(
              new DeleteMessageBatchCommand({
                QueueUrl: queueUrl,
                Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
              }),
            )
            .catch(() => undefined);
      })().catch((e) => console.error(`bench/lambda-shape.mjs: a batch failed: ${e}`));
      inFlight.add(p);
      p.finally(() => inFlight.delete(p));
    }
  })();
  return async () => {
    polling = false;
    await loop;
    await Promise.all(inFlight);
  };
}

/** One session of `turns` turns in `shape`; per-turn latency and the invocations of each function. */
async function runShape({ shape, stackEnv, wellKnown, dist, turns, warmup, log }) {
  const { createWorld } = await importOwn(dist, 'index.js');
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  const { reconcile } = await importOwn(dist, 'provision/index.js');
  const { createContext } = await importOwn(dist, 'context/world-context.js');
  const { createSqsHandler } = await importOwn(
    dist,
    'consumer/delivery/sqs-event-handler.js',
    'consumer/sqs-event-handler.js',
  );
  const sqsLib = await import('@aws-sdk/client-sqs');
  const lambda =
    shape === 'in-process' ? {} : { AWS_LAMBDA_FUNCTION_NAME: 'bench-host', AWS_LAMBDA_FUNCTION_VERSION: '1' };
  const env = {
    ...stackEnv,
    EVE_WORLD_AWS_PREFIX: `bench-ls-${randomBytes(3).toString('hex')}`,
    EVE_WORLD_AWS_SIGNING_SECRET: SECRET,
    EVE_WORLD_AWS_METRICS: '0',
  };
  const config = loadConfig({ ...env, ...lambda });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const app = await loadSessionApp(wellKnown);
  const rec = createRecorder();
  const world = createWorld({ config, clients, ...(shape === 'in-process' ? {} : { consumer: { consumer: 'none' } }) });
  const wr = instrumentWorld(world, rec);
  const host = [];
  const worker = [];
  const closers = [];
  if (shape === 'in-process') {
    world.registerHandler('__wkf_workflow_', app.flow.POST);
    await world.start();
  } else {
    const queueUrl = (
      await clients.sqs.send(new sqsLib.GetQueueUrlCommand({ QueueName: config.queue.split('/').at(-1) }))
    ).QueueUrl;
    const queueArn = (
      await clients.sqs.send(new sqsLib.GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes.QueueArn;
    let invoke;
    if (shape === 'worker') {
      // The host's Function URL: every delivery one host invocation.
      const url = await serveRoute(billed(host, rec, (req) => app.flow.POST(req)));
      closers.push(url.close);
      const workerConfig = loadConfig({ ...env, AWS_LAMBDA_FUNCTION_NAME: 'bench-worker' });
      const handler = createSqsHandler({
        context: createContext(workerConfig),
        flowUrl: `${url.url}${FLOW_PATH}`,
        logger: { info() {}, warn() {}, error: (...a) => console.error(...a), debug() {} },
      });
      invoke = billed(worker, rec, (event) => handler(event, { getRemainingTimeInMillis: () => 900_000 }));
    } else {
      // The host itself: the adapter's pass-through POST, answered by the World's flow route.
      invoke = billed(host, rec, async (event) => {
        const res = await app.flow.POST(
          new Request(`http://127.0.0.1:8080${FLOW_PATH}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-amzn-request-context': 'null',
              'x-amzn-lambda-context': JSON.stringify({ deadline: Date.now() + 900_000 }),
            },
            body: JSON.stringify(event),
          }),
        );
        return res.json();
      });
    }
    closers.unshift(eventSourceMapping({ sqs: { client: clients.sqs, commands: sqsLib }, queueUrl, queueArn, invoke }));
  }
  app.runtime.setWorld(world);
  try {
    await runSession(app, rec, wr, { turns: warmup, label: `${shape} warm-up`, log });
    await sleep(500);
    const from = host.length;
    const fromW = worker.length;
    const session = await runSession(app, rec, wr, { turns, label: shape, log });
    await sleep(500);
    const ts = session.turns;
    // Invocations by the turn whose window they started in (message -> next message).
    const windowOf = (start) => {
      for (let i = ts.length - 1; i >= 0; i--) if (start >= ts[i].t0) return i;
      return -1;
    };
    const perTurn = ts.map(() => ({ host: { n: 0, ms: 0 }, worker: { n: 0, ms: 0 } }));
    for (const [book, key, start] of [
      [host, 'host', from],
      [worker, 'worker', fromW],
    ])
      for (const inv of book.slice(start)) {
        const i = windowOf(inv.start);
        if (i < 0) continue;
        perTurn[i][key].n++;
        perTurn[i][key].ms += inv.ms;
      }
    return { shape, turns: ts.map((t, i) => ({ turn: t.turn, latencyMs: t.latencyMs, ...perTurn[i] })) };
  } finally {
    app.runtime.setWorld(undefined);
    for (const c of closers) await c();
    await world.close();
    destroyClients(clients);
  }
}

/** A fresh Node process imports `url` and runs `code` on it: ms inside the process, 5 times. */
async function coldInit(url, call) {
  const code = `const t = performance.now(); const m = await import(${JSON.stringify(url)}); ${call}; console.log(JSON.stringify({ ms: performance.now() - t })); process.exit(0);`;
  const out = [];
  for (let i = 0; i < sized(6, 2); i++) {
    const { out: o } = await runChild(process.execPath, ['--no-warnings', '--input-type=module', '-e', code], {
      env: {
        ...process.env,
        EVE_WORLD_AWS_TABLE: 'bench-cold',
        EVE_WORLD_AWS_QUEUE: 'bench-cold',
        AWS_REGION: 'us-east-1',
      },
      cwd: ROOT,
      what: 'cold init child',
    });
    if (i > 0) out.push(JSON.parse(o.trim().split('\n').pop()).ms); // the first warms the file cache
  }
  return median(out);
}

/** Per-shape summary of one run: latency percentiles over turns 2..N, per-turn Lambda use. */
function summarize(r) {
  const ts = r.turns.slice(1);
  const lat = ts.map((t) => t.latencyMs);
  const gbs = (k, fn) => mean(ts.map((t) => (t[k].ms / 1000) * fn.gb));
  const hostGbs = gbs('host', HOST);
  const workerGbs = gbs('worker', WORKER);
  const hostReq = mean(ts.map((t) => t.host.n));
  const workerReq = mean(ts.map((t) => t.worker.n));
  const dollars = hostGbs * HOST.price + workerGbs * WORKER.price + (hostReq + workerReq) * LAMBDA_PRICES.request;
  return { p50: pct(lat, 50), p99: pct(lat, 99), hostGbs, workerGbs, hostReq, workerReq, dollarsPerTurn: dollars };
}

export async function benchLambdaShape({ stackEnv, wellKnown, dist, log, turns, runs }) {
  const out = { turns, runs, esmQuantiles: ESM_QUANTILES, prices: LAMBDA_PRICES, results: [] };
  for (let run = 1; run <= runs; run++)
    for (const shape of SHAPES) {
      log(`  run ${run}: ${shape}...`);
      const r = await runShape({ shape, stackEnv, wellKnown, dist, turns, warmup: sized(3, 1), log });
      out.results.push({ run, shape, summary: summarize(r), turns: r.turns });
    }
  log('  cold inits (fresh Node processes)...');
  // The bundle the construct deploys (`npm run build` writes it), where the package finds it.
  const { workerAssetDir } = await importOwn(dist, 'cdk/worker-asset.js');
  const bundle = pathToFileURL(path.join(workerAssetDir(), 'index.mjs')).href;
  out.coldInitRuns = sized(6, 2) - 1;
  out.coldInitMs = {
    worker: await coldInit(bundle, 'm.handler'),
    hostWorld: await coldInit(pathToFileURL(path.join(fileURLToPath(dist), 'index.js')).href, 'm.createWorld()'),
  };
  return out;
}

const range = (xs) => `${fmt(Math.min(...xs), 0)}-${fmt(Math.max(...xs), 0)}`;

export function printLambdaShape(r) {
  const by = (shape) => r.results.filter((x) => x.shape === shape).map((x) => x.summary);
  const rows = SHAPES.map((shape) => {
    const s = by(shape);
    const cold =
      shape === 'in-process'
        ? '-'
        : fmt(median(s.map((x) => x.p50)) + r.coldInitMs.hostWorld + (shape === 'worker' ? r.coldInitMs.worker : 0), 0);
    return [
      shape,
      s.map((x) => fmt(x.p50, 0)).join(' / '),
      range(s.map((x) => x.p50)),
      s.map((x) => fmt(x.p99, 0)).join(' / '),
      cold,
      shape === 'worker' ? '2' : shape === 'host' ? '1' : '-',
      fmt(median(s.map((x) => x.hostReq + x.workerReq)), 2),
      `${fmt(median(s.map((x) => x.hostGbs)), 4)} + ${fmt(median(s.map((x) => x.workerGbs)), 4)}`,
      shape === 'in-process' ? '-' : `$${(median(s.map((x) => x.dollarsPerTurn)) * 1e6).toFixed(2)}`,
    ];
  });
  console.log(
    table(
      `The Lambda shape: one chat session of ${r.turns} turns per run, ${r.runs} run(s) (p50/p99 over turns 2..${r.turns})`,
      [
        'shape',
        'p50 ms per run',
        'p50 range',
        'p99 ms per run',
        'cold turn ms',
        'cold starts',
        'Lambda requests/turn',
        'GB-s/turn host + worker',
        'Lambda $ per 1M turns',
      ],
      rows,
      [
        `Event source mapping latency modelled: quantiles ${JSON.stringify(ESM_QUANTILES)} (ms). Cold inits (median of ${r.coldInitRuns ?? 5} fresh processes after one that warms the file cache): worker bundle ${fmt(r.coldInitMs.worker, 0)} ms, host World ${fmt(r.coldInitMs.hostWorld, 0)} ms.`,
        'Prices: x86 $0.0000166667 and arm64 $0.0000133334 per GB-s, $0.20 per 1M requests; host 1024 MB x86_64, worker 256 MB arm64. The chat request itself (Function URL) is the same in every shape and is not counted.',
      ],
    ),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { buildE2eApp } = await import(pathToFileURL(path.join(ROOT, 'test/e2e/build.mjs')).href);
  await buildE2eApp();
  const dist = pathToFileURL(srcOutOf(path.resolve(ROOT, process.env.BENCH_DIST ?? 'dist'))).href;
  const { startStack } = await import(stackUrlOf(dist));
  const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
  const turns = Number(arg('turns', sized(30, 3)));
  const runs = Number(arg('runs', sized(3, 1)));
  if (!(Number.isInteger(turns) && turns >= 2) || !(Number.isInteger(runs) && runs >= 1)) {
    console.error('--turns=N (2 or more) and --runs=N (1 or more): whole numbers, e.g. --turns=30 --runs=3');
    process.exit(2);
  }
  const force = process.argv.includes('--force');
  const facts = machineFacts({ dist, force, maxLoad: Number(arg('max-load', 0.5)) });
  const why = notIdle(facts);
  if (why && !force) {
    console.error(`bench/lambda-shape.mjs: ${why}`);
    process.exit(1);
  }
  if (why) console.error(`bench/lambda-shape.mjs: measuring anyway (--force): ${why}`);
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  try {
    const r = await benchLambdaShape({
      stackEnv: stack.env,
      wellKnown: path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1'),
      dist,
      log: (...a) => console.error(...a),
      turns,
      runs,
    });
    r.facts = facts;
    printLambdaShape(r);
    const dir = path.join(ROOT, 'bench/results');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `lambda-shape-${facts.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
    console.error(`saved ${path.relative(ROOT, file)}`);
  } finally {
    await stack.stop();
  }
}
