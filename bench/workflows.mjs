// Tables 1-3: real workflows (compiled by the Workflow DevKit builder, run by the real
// @workflow/core) on eve-world-aws against the embedded emulators, then on
// @workflow/world-local, one run at a time. Every AWS call is recorded by SDK middleware
// (lib/meter.mjs); a run's calls are those made between its start() and the moment the World is
// quiet again after its terminal event, so runs never share calls. The consumer's long polls are
// kept apart (they are per idle consumer-second, not per run).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createBilling } from './lib/billing.mjs';
import { importOwn } from './lib/dist.mjs';
import { itemSize, writeUnits } from './lib/dynamo-size.mjs';
import { mean, median } from './lib/format.mjs';
import { createRecorder, instrumentClients, instrumentWorld } from './lib/meter.mjs';
import { CALL_LATENCY_MS, DEFAULT_CALL_LATENCY_MS } from './lib/model.mjs';
import { sized } from './lib/quick.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The scenarios. `steps` = step bodies per run; `hooks` = hook payloads per run. */
export const SCENARIOS = [
  { id: 'seq1', label: 'sequential, 1 step', workflow: 'manySteps', args: () => [1], steps: 1, runs: sized(5, 1) },
  { id: 'seq10', label: 'sequential, 10 steps', workflow: 'manySteps', args: () => [10], steps: 10, runs: sized(5, 1) },
  {
    id: 'fanout8',
    label: 'fan-out of 8 (Promise.all)',
    workflow: 'fanOut',
    args: () => [8],
    steps: 8,
    runs: sized(5, 1),
  },
  {
    id: 'sleep',
    label: "sleep('1s') then 1 step",
    workflow: 'sleepThenStep',
    args: () => ['1s'],
    steps: 1,
    runs: sized(3, 1),
  },
  {
    id: 'hook',
    label: 'hook, 3 payloads',
    workflow: 'hookCollector',
    args: () => [`bench-hook-${randomBytes(6).toString('hex')}`, 3],
    steps: 0,
    hooks: 3,
    runs: sized(3, 1),
  },
];

const DDB_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
const DDB_READS = new Set(['GetItem', 'Query', 'Scan', 'TransactGetItems', 'BatchGetItem']);
const GSI_KEYS = ['GSI1PK', 'GSI2PK'];

/** Read units of a successful read; DynamoDB Local reports 0 for an empty result, AWS bills the minimum. */
function readUnits(call) {
  const measured = call.capacity?.total ?? 0;
  if (measured > 0) return { units: measured, adjusted: 0 };
  const min = call.command === 'TransactGetItems' ? 2 : call.input?.ConsistentRead ? 1 : 0.5;
  return { units: min, adjusted: min };
}

/** Upper-bound estimate of the write units a failed (cancelled / condition-failed) write is billed. */
function failedWriteUnits(call) {
  const input = call.input ?? {};
  const put = (item, tx) => {
    const size = itemSize(item ?? {});
    const copies = 1 + GSI_KEYS.filter((k) => item?.[k] !== undefined).length;
    return writeUnits(size, tx) * copies;
  };
  if (call.command === 'TransactWriteItems') {
    return (input.TransactItems ?? []).reduce((n, t) => n + (t.Put ? put(t.Put.Item, true) : 2), 0);
  }
  if (call.command === 'PutItem') return put(input.Item, false);
  return 1;
}

/**
 * Weighted longest chain of non-overlapping calls in [t0, tEnd]: the calls that could not have
 * run in parallel with each other, priced at the modelled per-call latency. A delivery (a
 * ReceiveMessage that returned messages) counts as one hop at its return time.
 */
export function criticalPath(calls, t0, tEnd) {
  const iv = [];
  for (const c of calls) {
    if (c.end === undefined || c.start < t0 - 0.5 || c.end > tEnd + 0.5) continue;
    if (c.command === 'ReceiveMessage') {
      if (c.received > 0) iv.push({ start: c.end - 0.001, end: c.end, w: CALL_LATENCY_MS.delivery, name: 'delivery' });
      continue;
    }
    iv.push({ start: c.start, end: c.end, w: CALL_LATENCY_MS[c.command] ?? DEFAULT_CALL_LATENCY_MS, name: c.command });
  }
  iv.sort((a, b) => a.end - b.end);
  // Weighted interval scheduling: M[i] = best weight using iv[0..i]; prev[i] = last interval
  // that ends before iv[i] starts.
  const M = [];
  const prev = [];
  const at = (i) => (i < 0 ? 0 : M[i]);
  for (let i = 0; i < iv.length; i++) {
    let j = i - 1;
    while (j >= 0 && iv[j].end > iv[i].start) j--;
    prev.push(j);
    M.push(Math.max(at(i - 1), iv[i].w + at(j)));
  }
  const byCommand = {};
  let n = 0;
  for (let i = iv.length - 1; i >= 0; ) {
    if (iv[i].w + at(prev[i]) >= at(i - 1)) {
      byCommand[iv[i].name] = (byCommand[iv[i].name] ?? 0) + 1;
      n++;
      i = prev[i];
    } else i--;
  }
  return { ms: at(iv.length - 1), calls: n, byCommand };
}

/** Per-run numbers from one run's calls. */
function summarizeRun(calls, worldCalls, t0, tEnd) {
  const counts = {};
  const failed = {};
  let wru = 0;
  let rru = 0;
  let rruAdjusted = 0;
  let gsiWru = 0;
  let failedWru = 0;
  let billedWru = 0;
  let billedGsiWru = 0;
  let sqsRequests = 0;
  let s3 = {};
  for (const c of calls) {
    if (c.observer) continue;
    if (c.command === 'ReceiveMessage') {
      if (c.received > 0) {
        counts['ReceiveMessage (with messages)'] = (counts['ReceiveMessage (with messages)'] ?? 0) + 1;
        sqsRequests++;
      }
      continue;
    }
    counts[c.command] = (counts[c.command] ?? 0) + 1;
    if (!c.ok) failed[c.command] = (failed[c.command] ?? 0) + 1;
    if (c.service === 'ddb') {
      if (c.billed) {
        billedWru += c.billed.total;
        billedGsiWru += c.billed.gsi;
      }
      if (DDB_WRITES.has(c.command)) {
        if (c.ok) {
          wru += c.capacity?.total ?? 0;
          gsiWru += c.capacity?.gsi ?? 0;
        } else failedWru += failedWriteUnits(c);
      } else if (DDB_READS.has(c.command) && c.ok) {
        const r = readUnits(c);
        rru += r.units;
        rruAdjusted += r.adjusted;
      }
    } else if (c.service === 'sqs') {
      const body = c.input?.MessageBody ?? '';
      sqsRequests += c.command === 'SendMessage' ? Math.max(1, Math.ceil(Buffer.byteLength(body) / 65536)) : 1;
    } else if (c.service === 's3') {
      s3 = { ...s3, [c.command]: (s3[c.command] ?? 0) + 1 };
    }
  }
  const world = {};
  for (const w of worldCalls) if (!w.observer) world[w.name] = (world[w.name] ?? 0) + 1;
  return {
    counts,
    failed,
    wru,
    gsiWru,
    failedWru,
    billedWru,
    billedGsiWru,
    rru,
    rruAdjusted,
    sqsRequests,
    s3,
    world,
    path: criticalPath(
      calls.filter((c) => !c.observer),
      t0,
      tEnd,
    ),
  };
}

function averageRuns(runs) {
  const avgMap = (key) => {
    const out = {};
    for (const r of runs) for (const [k, v] of Object.entries(r[key])) out[k] = (out[k] ?? 0) + v / runs.length;
    return out;
  };
  const avg = (f) => mean(runs.map(f));
  return {
    counts: avgMap('counts'),
    failed: avgMap('failed'),
    world: avgMap('world'),
    s3: avgMap('s3'),
    wru: avg((r) => r.wru),
    gsiWru: avg((r) => r.gsiWru),
    failedWru: avg((r) => r.failedWru),
    billedWru: avg((r) => r.billedWru),
    billedGsiWru: avg((r) => r.billedGsiWru),
    rru: avg((r) => r.rru),
    rruAdjusted: avg((r) => r.rruAdjusted),
    sqsRequests: avg((r) => r.sqsRequests),
    pathCalls: avg((r) => r.path.calls),
    pathMs: avg((r) => r.path.ms),
    pathByCommand: avgMap2(runs.map((r) => r.path.byCommand)),
  };
}
function avgMap2(maps) {
  const out = {};
  for (const m of maps) for (const [k, v] of Object.entries(m)) out[k] = (out[k] ?? 0) + v / maps.length;
  return out;
}

// ------------------------------------------------------------------ storage snapshots

async function scanTable(ddb, table) {
  const items = new Map();
  let start;
  do {
    const res = await ddb.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const it of res.Items ?? []) {
      const size = itemSize(it);
      const gsiCopies = GSI_KEYS.filter((k) => it[k] !== undefined).length;
      const indexKeys = Object.fromEntries(GSI_KEYS.filter((k) => it[k] !== undefined).map((k) => [k, it[k].S]));
      items.set(`${it.PK?.S}|${it.SK?.S}`, {
        size,
        gsiCopies,
        pk: it.PK?.S ?? '',
        sk: it.SK?.S ?? '',
        indexKeys,
        indexBytes: indexCopyBytes(it),
      });
    }
    start = res.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * Bytes one item copies into the indexes it is in: what the table's projection copies (keys and
 * the projected attributes; the whole item for ALL), plus DynamoDB's 100 bytes of index overhead.
 */
const PROJECTION = { GSI1: { type: 'ALL', attrs: [] }, GSI2: { type: 'ALL', attrs: [] } };
function indexCopyBytes(it) {
  let n = 0;
  for (const [g, pk, sk] of [
    ['GSI1', 'GSI1PK', 'GSI1SK'],
    ['GSI2', 'GSI2PK', 'GSI2SK'],
  ]) {
    if (it[pk] === undefined) continue;
    const p = PROJECTION[g];
    const copied =
      p.type === 'ALL'
        ? it
        : Object.fromEntries(
            ['PK', 'SK', pk, sk, ...p.attrs].filter((k) => it[k] !== undefined).map((k) => [k, it[k]]),
          );
    n += itemSize(copied) + 100;
  }
  return n;
}

/** How the index partition keys spread: per index, items, distinct keys, and the largest key's share. */
function indexSpread(items) {
  const out = {};
  for (const [g, pk] of [
    ['GSI1', 'GSI1PK'],
    ['GSI2', 'GSI2PK'],
  ]) {
    const all = new Map();
    const runs = new Map();
    for (const v of items.values()) {
      const key = v.indexKeys?.[pk];
      if (key === undefined) continue;
      all.set(key, (all.get(key) ?? 0) + 1);
      if (v.sk === 'RUN#meta') runs.set(key, (runs.get(key) ?? 0) + 1);
    }
    const summary = (m) => {
      const total = [...m.values()].reduce((a, b) => a + b, 0);
      const [maxKey, max] = [...m.entries()].reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
      return { items: total, keys: m.size, maxKey, maxShare: total ? max / total : 0 };
    };
    out[g] = { all: summary(all), runItems: summary(runs) };
  }
  return out;
}

async function listBucket(s3, bucket) {
  const objects = new Map();
  let token;
  do {
    const res = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of res.Contents ?? []) objects.set(o.Key, o.Size ?? 0);
    token = res.IsTruncated ? res.NextContinuationToken : undefined;
  } while (token);
  return objects;
}

async function snapshot(clients, config) {
  return {
    items: await scanTable(clients.ddb, config.tableName),
    objects: await listBucket(await clients.s3(), config.bucket),
  };
}

/** What the runs between two snapshots left behind (new or grown items and objects). */
function storedBetween(before, after, runs) {
  let itemBytes = 0;
  let items = 0;
  let billedBytes = 0; // + 100 bytes per item, and what its indexes copy (see indexCopyBytes)
  let indexBytes = 0;
  const byKind = {};
  for (const [k, v] of after.items) {
    const old = before.items.get(k);
    if (old && old.size === v.size) continue;
    items++;
    itemBytes += v.size;
    indexBytes += v.indexBytes;
    billedBytes += v.size + 100 + v.indexBytes;
    const kind = v.pk.split('#')[0];
    byKind[kind] = (byKind[kind] ?? 0) + v.size;
  }
  let s3Bytes = 0;
  let objects = 0;
  for (const [k, size] of after.objects) {
    if (before.objects.get(k) === size) continue;
    objects++;
    s3Bytes += size;
  }
  const per = (n) => n / runs;
  return {
    itemsPerRun: per(items),
    itemBytesPerRun: per(itemBytes),
    billedBytesPerRun: per(billedBytes),
    indexBytesPerRun: per(indexBytes),
    s3ObjectsPerRun: per(objects),
    s3BytesPerRun: per(s3Bytes),
    itemBytesByPartitionKind: Object.fromEntries(Object.entries(byKind).map(([k, v]) => [k, per(v)])),
  };
}

function dirBytes(dir) {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) n += dirBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

// ------------------------------------------------------------------ driving runs

let flowInstances = 0;

async function loadApp(wellKnown) {
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  const workflows = manifest.workflows['workflows/checklist.ts'];
  // A fresh copy of the flow route per World: core's route caches the first World's queue
  // handler, so a second World in this process would otherwise get the first one's (which, closed
  // by default, refuses its deliveries as unsigned).
  const flow = await import(`${pathToFileURL(path.join(wellKnown, 'flow.mjs')).href}?world=${++flowInstances}`);
  const api = await import('workflow/api');
  const runtime = await import('workflow/runtime');
  return { workflows, flow, api, runtime };
}

/** Wait until the World has no call in flight (long polls aside) and has been quiet for `quietMs`. */
async function settle(rec, wr, quietMs = 250, maxMs = 5000) {
  const deadline = rec.now() + maxMs;
  for (;;) {
    await sleep(40);
    const busy = rec.calls.filter((c) => c.end === undefined && c.command !== 'ReceiveMessage');
    const lastEnd = Math.max(
      0,
      ...rec.calls
        .filter((c) => c.command !== 'ReceiveMessage' && c.end !== undefined)
        .slice(-50)
        .map((c) => c.end),
    );
    const quietFor = rec.now() - Math.max(lastEnd, ...wr.worldCalls.slice(-50).map((c) => c.end ?? rec.now()));
    if ((busy.length === 0 && wr.inFlight() === 0 && quietFor >= quietMs) || rec.now() > deadline) return;
  }
}

async function runOnce(app, rec, wr, sc) {
  const m = rec.mark();
  const wm = wr.mark();
  const args = sc.args();
  const t0 = rec.now();
  const run = await app.api.start(app.workflows[sc.workflow], args);
  if (sc.hooks) {
    await wr.event(run.runId, 'hook_created');
    for (let i = 0; i < sc.hooks; i++) await app.api.resumeHook(args[0], { value: i });
  }
  const tEnd = await wr.event(run.runId, 'terminal');
  await settle(rec, wr);
  const tSettled = rec.now();
  // A long poll that delivered this run's message usually started before the run did: receives
  // belong to the run whose window they returned in; every other call to the window it started in.
  const calls = rec.calls.filter((c, i) =>
    c.command === 'ReceiveMessage' ? c.end !== undefined && c.end >= t0 && c.end <= tSettled : i >= m,
  );
  return { runId: run.runId, wallMs: tEnd - t0, t0, tEnd, calls, worldCalls: wr.since(wm) };
}

/** Run every scenario on one World; `measureStorage` snapshots what the measured runs stored. */
async function runScenarios(app, _world, rec, wr, { measureStorage, log, label }) {
  const out = {};
  for (const sc of SCENARIOS) {
    await runOnce(app, rec, wr, sc); // warm-up: JIT, connections, first-delivery paths
    const before = measureStorage ? await measureStorage.before() : undefined;
    const runs = [];
    for (let i = 0; i < sc.runs; i++) runs.push(await runOnce(app, rec, wr, sc));
    const stored = measureStorage ? await measureStorage.after(before, runs.length) : undefined;
    const summaries = runs.map((r) => summarizeRun(r.calls, r.worldCalls, r.t0, r.tEnd));
    const wall = runs.map((r) => r.wallMs);
    out[sc.id] = {
      scenario: { ...sc, args: undefined },
      runs: runs.length,
      wallMs: wall,
      wallMsMedian: median(wall),
      ...averageRuns(summaries),
      stored,
    };
    log(`  ${label} ${sc.id}: ${runs.length} runs, median ${median(wall).toFixed(0)} ms`);
  }
  return out;
}

// ------------------------------------------------------------------ the two Worlds

export async function benchOurs({ stackEnv, wellKnown, dist, log }) {
  const { createWorld } = await importOwn(dist, 'index.js');
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  const { reconcile } = await importOwn(dist, 'provision/index.js');
  const app = await loadApp(wellKnown);

  const config = loadConfig({ ...stackEnv, EVE_WORLD_AWS_PREFIX: `bench-${randomBytes(3).toString('hex')}` });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const { TABLE_SCHEMA } = await importOwn(dist, 'schema/keys.js', 'ddb.js');
  for (const g of TABLE_SCHEMA.gsis)
    PROJECTION[g.name] = {
      type: g.projection?.ProjectionType ?? 'ALL',
      attrs: [...(g.projection?.NonKeyAttributes ?? [])],
    };
  const observer = createClients(config); // the bench's own reads (scans, listings): not counted
  const rec = createRecorder();
  await instrumentClients(clients, rec);
  // Write units as AWS bills them, from the requests sent (lib/billing.mjs).
  const billing = createBilling(TABLE_SCHEMA);
  rec.onEnd = billing.observe;
  const world = createWorld({ config, clients });
  const wr = instrumentWorld(world, rec);
  world.registerHandler('__wkf_workflow_', app.flow.POST);
  const consumerStarted = rec.now();
  await world.start();
  app.runtime.setWorld(world);
  try {
    const scenarios = await runScenarios(app, world, rec, wr, {
      label: 'eve-world-aws',
      log,
      measureStorage: {
        before: () => snapshot(observer, config),
        after: async (before, runs) => storedBetween(before, await snapshot(observer, config), runs),
      },
    });
    // Idle consumer: nothing to do, only long polls.
    // Long polls wait up to WaitTimeSeconds (20 s), so the window is a little longer than one.
    const idleSeconds = sized(21, 1);
    const idleStart = rec.now();
    await sleep(idleSeconds * 1000);
    const idleEnd = rec.now();
    // Receives that returned inside the window (each is one billed request).
    const idleReceives = rec.calls.filter(
      (c) => c.command === 'ReceiveMessage' && c.end !== undefined && c.end >= idleStart && c.end <= idleEnd,
    ).length;
    const receives = rec.calls.filter((c) => c.command === 'ReceiveMessage');
    const consumerSeconds = (rec.now() - consumerStarted) / 1000;
    const idle = {
      windowSeconds: idleSeconds,
      receivesInWindow: idleReceives,
      perIdleConsumerSecond: idleReceives / ((idleEnd - idleStart) / 1000),
      waitTimeSeconds: receives.find((c) => c.waitSeconds !== undefined)?.waitSeconds,
      session: {
        consumerSeconds,
        receives: receives.length,
        emptyReceives: receives.filter((c) => c.end !== undefined && c.received === 0).length,
      },
    };
    const spread = indexSpread((await snapshot(observer, config)).items);
    const m = (f) => (f(scenarios.seq10) - f(scenarios.seq1)) / 9;
    return {
      // One more sequential inline step: billed = AWS's rules from the requests sent; local = DynamoDB Local's report.
      perStep: {
        billedWru: m((x) => x.billedWru),
        billedGsiWru: m((x) => x.billedGsiWru),
        localWru: m((x) => x.wru),
        ddbRequests: m((x) =>
          Object.entries(x.counts)
            .filter(([k]) => !/Message|Receive/.test(k))
            .reduce((a, [, v]) => a + v, 0),
        ),
      },
      billingUnknown: billing.unknown(),
      scenarios,
      idle,
      indexSpread: spread,
      projections: PROJECTION,
      config: { consumerConcurrency: config.consumerConcurrency, payloadThresholdBytes: config.payloadThresholdBytes },
    };
  } finally {
    app.runtime.setWorld(undefined);
    await world.close();
    destroyClients(clients);
    destroyClients(observer);
  }
}

export async function benchLocal({ wellKnown, log }) {
  const { createWorld } = await import('@workflow/world-local');
  const pkg = JSON.parse(
    readFileSync(new URL('../node_modules/@workflow/world-local/package.json', import.meta.url), 'utf8'),
  );
  const app = await loadApp(wellKnown);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'eve-bench-world-local-'));
  const rec = createRecorder();
  const world = createWorld({ dataDir });
  const wr = instrumentWorld(world, rec);
  world.registerHandler('__wkf_workflow_', app.flow.POST);
  await world.start();
  app.runtime.setWorld(world);
  try {
    const scenarios = await runScenarios(app, world, rec, wr, {
      label: `world-local ${pkg.version}`,
      log,
      measureStorage: {
        before: async () => dirBytes(dataDir),
        after: async (before, runs) => ({ diskBytesPerRun: (dirBytes(dataDir) - before) / runs }),
      },
    });
    return { version: pkg.version, scenarios };
  } finally {
    app.runtime.setWorld(undefined);
    await world.close?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
