// Table 7: what the step lease (src/storage/write/step-lease.ts) costs. It replaced the per-message
// delivery lease (a `LEASE#<messageId>` PutItem taken by the consumer for every delivery): the
// lease now rides the `step_started` transaction that is written anyway, on the step item. Cases,
// each against DynamoDB Local in the embedded stack, through the World's storage (dist/):
//   start     a lazy step_started inside a delivery scope (stamped) vs. outside one (not stamped)
//   complete  step_completed of a leased step (clears the lease) vs. of an unleased one
//   refused   a duplicate copy's start of a running step whose lease another delivery holds,
//             from another "process" (no remembered step item): refused before any write
//   extend    one heartbeat of the flow route (UpdateItem on the step item), small and ~3 KB input
//   release   what a failed handler leaves held, released (UpdateItem)
// Counted per operation with SDK middleware on the DynamoDB client (bench/lib/meter.mjs): requests
// by command, capacity as DynamoDB Local's ConsumedCapacity (ReturnConsumedCapacity INDEXES).
//
// `npm run bench -- --only=lease` runs it in the suite; `node bench/lease.mjs` runs it standalone
// with its own emulator stack (after `npm run build`).
import './lib/polyfills.mjs';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importOwn, srcOutOf } from './lib/dist.mjs';
import { fmt, table } from './lib/format.mjs';
import { createRecorder, instrumentClients } from './lib/meter.mjs';
import { PRICES } from './lib/model.mjs';
import { sized } from './lib/quick.mjs';

/** Operations measured per case (after one warm-up). */
const OPS = sized(20, 2);
/** The in-process poller's lease (half its 30 s visibility). */
const TTL_MS = 15_000;

function account(calls) {
  const counts = {};
  let wru = 0;
  let rru = 0;
  for (const c of calls) {
    counts[c.command] = (counts[c.command] ?? 0) + 1;
    const units = c.capacity?.total ?? 0;
    if (['GetItem', 'Query', 'BatchGetItem', 'TransactGetItems', 'Scan'].includes(c.command)) rru += units;
    else wru += units;
  }
  return { requests: calls.length, counts, wru, rru };
}

function summarize(per) {
  const n = per.length;
  const sum = (f) => per.reduce((a, d) => a + f(d), 0);
  const counts = {};
  for (const d of per) for (const [k, v] of Object.entries(d.counts)) counts[k] = (counts[k] ?? 0) + v;
  for (const k of Object.keys(counts)) counts[k] /= n;
  return {
    ops: n,
    requests: sum((d) => d.requests) / n,
    counts,
    wru: sum((d) => d.wru) / n,
    rru: sum((d) => d.rru) / n,
  };
}

export async function benchLease({ stackEnv, dist, log }) {
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  const { reconcile } = await importOwn(dist, 'provision/index.js');
  const { createContext } = await importOwn(dist, 'context/world-context.js', 'context.js');
  const { createStorage } = await importOwn(dist, 'storage/index.js');
  const { runInDelivery } = await importOwn(dist, 'context/delivery-scope.js', 'delivery-scope.js');
  const { extendStepLeases, releaseStepLeases } = await importOwn(dist, 'storage/index.js');
  const { SPEC_VERSION_CURRENT: sv } = await import('@workflow/world');
  const config = loadConfig({ ...stackEnv, EVE_WORLD_AWS_PREFIX: `bench-lease-${randomBytes(3).toString('hex')}` });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const recorder = createRecorder();
  await instrumentClients({ ddb: clients.ddb }, recorder);
  const ctx = createContext(config, clients);
  const storage = createStorage(ctx);
  const tableRef = { ddb: clients.ddb, table: config.tableName };

  const newLease = (ttlMs = TTL_MS) => ({ token: randomBytes(8).toString('hex'), ttlMs, started: new Map() });
  const scoped = (lease, fn) =>
    lease ? runInDelivery({ messageId: 'msg_bench', attempt: 1, logTails: new Map(), stepLease: lease }, fn) : fn();
  const run = async () => {
    const { run } = await storage.events.create(null, {
      eventType: 'run_created',
      specVersion: sv,
      eventData: { deploymentId: 'dpl_bench', workflowName: 'wf//bench', input: new Uint8Array([1, 2, 3]) },
    });
    await storage.events.create(run.runId, { eventType: 'run_started', specVersion: sv });
    return run.runId;
  };
  const lazy = (stepId, input) => ({
    eventType: 'step_started',
    specVersion: sv,
    correlationId: stepId,
    eventData: { stepName: 'step//bench', input, ownerMessageId: 'msg_bench' },
  });
  const restart = (stepId) => ({
    eventType: 'step_started',
    specVersion: sv,
    correlationId: stepId,
    eventData: { stepName: 'step//bench', ownerMessageId: 'msg_bench' },
  });
  const complete = (stepId) => ({
    eventType: 'step_completed',
    specVersion: sv,
    correlationId: stepId,
    eventData: { result: new Uint8Array([4, 5, 6]) },
  });
  const small = new Uint8Array(16);
  const large = new Uint8Array(3000).fill(7);

  /** A running step, started (leased or not) outside the measurement. */
  async function runningStep(lease, input = small) {
    const runId = await run();
    const stepId = `step_${randomBytes(6).toString('hex')}`;
    await scoped(lease, () => storage.events.create(runId, lazy(stepId, input)));
    return { runId, stepId };
  }
  async function measure(fn) {
    const mark = recorder.mark();
    await fn();
    return account(recorder.since(mark));
  }

  const cases = {
    'start, unleased (outside a delivery)': async () => {
      const runId = await run();
      return measure(() => storage.events.create(runId, lazy(`step_${randomBytes(6).toString('hex')}`, small)));
    },
    'start, leased (inside a delivery)': async () => {
      const runId = await run();
      const lease = newLease();
      return measure(() =>
        scoped(lease, () => storage.events.create(runId, lazy(`step_${randomBytes(6).toString('hex')}`, small))),
      );
    },
    'complete, unleased step': async () => {
      const s = await runningStep(undefined);
      return measure(() => storage.events.create(s.runId, complete(s.stepId)));
    },
    'complete, leased step (clears the lease)': async () => {
      const lease = newLease();
      const s = await runningStep(lease);
      return measure(() => scoped(lease, () => storage.events.create(s.runId, complete(s.stepId))));
    },
    'duplicate copy refused (TooEarlyError, another process)': async () => {
      const s = await runningStep(newLease());
      const other = createStorage(ctx); // another "process": no remembered step item
      return measure(() =>
        scoped(newLease(), () => other.events.create(s.runId, restart(s.stepId))).then(
          () => {
            throw new Error('refused: the copy was allowed to start a leased step');
          },
          (err) => {
            if (err?.name !== 'TooEarlyError') throw err;
          },
        ),
      );
    },
    'heartbeat, one step (16-byte input)': async () => {
      const lease = newLease();
      await runningStep(lease);
      return measure(() => extendStepLeases(tableRef, lease));
    },
    'heartbeat, one step (3 KB input inline)': async () => {
      const lease = newLease();
      await runningStep(lease, large);
      return measure(() => extendStepLeases(tableRef, lease));
    },
    'release after a failed handler, one step': async () => {
      const lease = newLease();
      await runningStep(lease);
      return measure(() => releaseStepLeases(tableRef, lease));
    },
  };

  const results = {};
  try {
    for (const [name, fn] of Object.entries(cases)) {
      log(`  ${name}: ${OPS} operations...`);
      await fn(); // warm-up
      const per = [];
      for (let i = 0; i < OPS; i++) per.push(await fn());
      results[name] = { ...summarize(per), raw: per };
    }
  } finally {
    destroyClients(clients);
  }
  return {
    ops: OPS,
    ttlMs: TTL_MS,
    cases: results,
    price: { wru: PRICES.dynamodbWriteRequestUnit, rru: PRICES.dynamodbReadRequestUnit },
    // The consumer's former per-delivery lease (Table 7 until 2026-12-01): one PutItem, 1 WRU, per delivery.
    replaced: { requests: 1, wru: 1 },
  };
}

export function printLeaseTable(lease, print = console.log) {
  if (!lease.price?.wru) {
    print('(Table 7 in this result file measures the former LEASE# delivery lease; rerun --only=lease)');
    return;
  }
  const c = (s) =>
    Object.entries(s.counts)
      .map(([k, v]) => `${Number.isInteger(v) ? v : fmt(v, 2)} ${k}`)
      .join(' + ');
  const rows = Object.entries(lease.cases).map(([k, s]) => [
    k,
    fmt(s.requests, 1),
    c(s),
    fmt(s.wru, 1),
    fmt(s.rru, 1),
    `$${((s.wru * lease.price.wru + s.rru * lease.price.rru) * 1e6).toFixed(2)}`,
  ]);
  print(
    table(
      `Table 7. Step lease cost (src/storage/write/step-lease.ts; mean of ${lease.ops} operations per case)`,
      ['operation', 'DynamoDB requests', 'by command', 'WRU', 'RRU', '$ / M operations'],
      rows,
      [
        `The lease rides the step_started transaction: a leased start sends the same requests as an unleased one (the stamp is ~60 bytes on the step item). The delivery lease it replaced cost ${lease.replaced.requests} PutItem and ${lease.replaced.wru} WRU on EVERY delivery; now a delivery pays nothing extra unless its step outlives a heartbeat (ttl/3, ttl ${lease.ttlMs / 1000} s for the in-process poller) or its handler fails with a step still running.`,
        'A heartbeat is an UpdateItem of the step item, billed by the item size (an inline input makes it bigger). A refused duplicate writes nothing: it is decided on the read of the step (and the log position), and core then defers the copy.',
        `Capacity: DynamoDB Local's ConsumedCapacity (ReturnConsumedCapacity INDEXES); transactional writes count 2 WRU per KB. $ at DynamoDB on-demand $${(lease.price.wru * 1e6).toFixed(3)} per million WRU, $${(lease.price.rru * 1e6).toFixed(3)} per million RRU.`,
      ],
    ),
  );
}

// Standalone: node bench/lease.mjs (needs dist/: npm run build).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ROOT = fileURLToPath(new URL('..', import.meta.url));
  const DIST = path.join(ROOT, 'dist');
  const SRC_OUT = srcOutOf(DIST);
  const log = (...a) => console.error(...a);
  const { startStack } = await import(pathToFileURL(path.join(DIST, 'emulator/stack.js')).href);
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  let results;
  try {
    results = await benchLease({ stackEnv: stack.env, dist: pathToFileURL(SRC_OUT).href, log });
  } finally {
    await stack.stop();
  }
  printLeaseTable(results);
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench/results/lease-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log('Results: bench/results/lease-latest.json');
  process.exit(0);
}
