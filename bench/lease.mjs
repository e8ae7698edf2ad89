// Table 7: what the durable per-message delivery lease (src/consumer/delivery-lease.ts) costs per
// delivery (issue 12). The lease as the consumer uses it (deliveryLeasePort: acquire, heartbeat
// every ttl/3, release or expire) against DynamoDB Local in the embedded emulator stack, four cases:
//   acked      a delivery acked inside one heartbeat (acquire; the lease is left to expire)
//   settle     a delivery whose copy comes back (deferred, hopped), inside one heartbeat (acquire + release)
//   extend     a delivery that runs past one heartbeat: released right after its first extension
//   deferred   a duplicate copy that finds the lease held by another live delivery (not run)
// Counted per delivery with SDK middleware on the DynamoDB client (bench/lib/meter.mjs): requests
// by command, write units as DynamoDB Local's ConsumedCapacity (ReturnConsumedCapacity INDEXES).
// DynamoDB Local returns no capacity for a failed conditional write; AWS bills it as a write of the
// item's size (1 WRU under 1 KB), so failed writes are also estimated from the request's item size.
//
// `npm run bench -- --only=lease` runs it in the suite; `node bench/lease.mjs` runs it standalone
// with its own emulator stack (after `npm run build`).
import './lib/polyfills.mjs';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { itemSize, writeUnits } from './lib/dynamo-size.mjs';
import { fmt, table } from './lib/format.mjs';
import { createRecorder, instrumentClients } from './lib/meter.mjs';
import { PRICES } from './lib/model.mjs';

/** Deliveries measured per case (after one warm-up delivery per case). */
const DELIVERIES = 20;
/** The in-process poller's lease (half its 30 s visibility): no heartbeat fires in the settle case. */
const SETTLE_TTL_MS = 15_000;
/**
 * Short lease for the extension case: the heartbeat (ttl / 3) fires after 500 ms, and the delivery is
 * released right after it, well before the second heartbeat (1 s).
 */
const EXTEND_TTL_MS = 1500;

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/** Write units a failed conditional write would be billed on AWS (estimated from the request). */
function estimatedFailedWru(call) {
  const item = call.input?.Item ?? call.input?.Key;
  return item ? writeUnits(itemSize(item), false) : 1;
}

function account(calls) {
  const counts = {};
  let wru = 0;
  let failedWru = 0;
  let failed = 0;
  let failedReported = 0;
  for (const c of calls) {
    counts[c.command] = (counts[c.command] ?? 0) + 1;
    if (c.ok) wru += c.capacity?.total ?? 0;
    else {
      failed++;
      // A failed write: billed by AWS; DynamoDB Local reports nothing (use its number if it does).
      if (c.capacity) failedReported++;
      if (WRITES.has(c.command)) failedWru += c.capacity?.total ?? estimatedFailedWru(c);
    }
  }
  return { requests: calls.length, counts, wru, failed, failedWru, failedReported };
}

function summarize(perDelivery) {
  const n = perDelivery.length;
  const sum = (f) => perDelivery.reduce((a, d) => a + f(d), 0);
  const counts = {};
  for (const d of perDelivery) for (const [k, v] of Object.entries(d.counts)) counts[k] = (counts[k] ?? 0) + v;
  for (const k of Object.keys(counts)) counts[k] /= n;
  return {
    deliveries: n,
    requests: sum((d) => d.requests) / n,
    counts,
    wru: sum((d) => d.wru) / n,
    failed: sum((d) => d.failed) / n,
    failedWru: sum((d) => d.failedWru) / n,
    /** Failed requests for which DynamoDB Local did return ConsumedCapacity. */
    failedReported: sum((d) => d.failedReported),
    billedWru: sum((d) => d.wru + d.failedWru) / n,
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function benchLease({ stackEnv, dist, log }) {
  const { loadConfig } = await import(`${dist}/config.js`);
  const { createClients, destroyClients } = await import(`${dist}/aws/clients.js`);
  const { reconcile } = await import(`${dist}/resources.js`);
  const { deliveryLeasePort } = await import(`${dist}/consumer/delivery-lease.js`);
  const config = loadConfig({ ...stackEnv, EVE_WORLD_AWS_PREFIX: `bench-lease-${randomBytes(3).toString('hex')}` });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const recorder = createRecorder();
  await instrumentClients({ ddb: clients.ddb }, recorder);
  const warnings = [];
  const port = deliveryLeasePort({ config, clients }, { logger: { warn: (m) => warnings.push(m) } });
  const messageId = () => `bench-${randomBytes(8).toString('hex')}`;

  const cases = {
    acked: async () => {
      const mark = recorder.mark();
      const held = await port.acquire(messageId(), { ttlMs: SETTLE_TTL_MS });
      if (!held.acquired) throw new Error('acked: lease unexpectedly held');
      held.expire();
      return account(recorder.since(mark));
    },
    settle: async () => {
      const mark = recorder.mark();
      const held = await port.acquire(messageId(), { ttlMs: SETTLE_TTL_MS });
      if (!held.acquired) throw new Error('settle: lease unexpectedly held');
      await held.release();
      return account(recorder.since(mark));
    },
    extend: async () => {
      const mark = recorder.mark();
      const held = await port.acquire(messageId(), { ttlMs: EXTEND_TTL_MS });
      if (!held.acquired) throw new Error('extend: lease unexpectedly held');
      // Release as soon as the first heartbeat's UpdateItem has returned: exactly one extension.
      const t = performance.now();
      while (!recorder.since(mark).some((c) => c.command === 'UpdateItem' && c.end !== undefined)) {
        if (performance.now() - t > 10_000) throw new Error('extend: no heartbeat within 10 s');
        await sleep(5);
      }
      await held.release();
      const calls = recorder.since(mark);
      const extensions = calls.filter((c) => c.command === 'UpdateItem').length;
      if (extensions !== 1) log(`  (extend: ${extensions} extensions in one delivery; machine busy?)`);
      return { ...account(calls), extensions };
    },
    deferred: async () => {
      const id = messageId();
      const holder = await port.acquire(id, { ttlMs: SETTLE_TTL_MS });
      if (!holder.acquired) throw new Error('deferred: first copy did not get the lease');
      const mark = recorder.mark();
      const copy = await port.acquire(id, { ttlMs: SETTLE_TTL_MS });
      const calls = recorder.since(mark);
      if (copy.acquired) throw new Error('deferred: the duplicate copy took a held lease');
      await holder.release();
      return account(calls);
    },
  };

  const results = {};
  try {
    for (const [name, run] of Object.entries(cases)) {
      log(`  ${name}: ${DELIVERIES} deliveries...`);
      await run(); // warm-up: connections, JIT; not counted
      const per = [];
      for (let i = 0; i < DELIVERIES; i++) per.push(await run());
      results[name] = { ...summarize(per), raw: per };
      if (name === 'extend') results[name].extensions = per.reduce((a, d) => a + d.extensions, 0) / per.length;
    }
  } finally {
    destroyClients(clients);
  }
  const perExtension = (results.extend.billedWru - results.settle.billedWru) / results.extend.extensions;
  return {
    deliveries: DELIVERIES,
    ttlMs: { settle: SETTLE_TTL_MS, extend: EXTEND_TTL_MS },
    perExtension,
    warnings,
    cases: results,
    price: PRICES.dynamodbWriteRequestUnit,
  };
}

export function printLeaseTable(lease, print = console.log) {
  const labels = {
    acked: 'acked within one heartbeat (acquire; left to expire)',
    settle: 'comes back (deferred/hopped) within one heartbeat (acquire + release)',
    extend: 'one extension (acquire + extend + release)',
    deferred: 'duplicate copy, lease held (deferred)',
  };
  const c = (s, k) => {
    const v = s.counts[k] ?? 0;
    return Number.isInteger(v) ? String(v) : fmt(v, 2);
  };
  const rows = Object.entries(lease.cases).map(([k, s]) => [
    labels[k] ?? k,
    fmt(s.requests, 1),
    `${c(s, 'PutItem')} / ${c(s, 'UpdateItem')} / ${c(s, 'DeleteItem')}`,
    s.failed ? `${fmt(s.failed, 1)}` : '0',
    fmt(s.wru, 1),
    s.failedWru ? fmt(s.failedWru, 1) : '0',
    fmt(s.billedWru, 1),
    `$${(s.billedWru * lease.price * 1e6).toFixed(2)}`,
  ]);
  print(
    table(
      `Table 7. Delivery lease cost per delivery (src/consumer/delivery-lease.ts; mean of ${lease.deliveries} deliveries per case)`,
      [
        'delivery',
        'DynamoDB requests',
        'Put / Update / Delete',
        'failed¹',
        'WRU reported',
        'failed WRU¹',
        'WRU billed',
        '$ / M deliveries',
      ],
      rows,
      [
        `Each further extension: ${fmt(lease.perExtension, 1)} WRU (one UpdateItem; the heartbeat fires every ttl/3 while a delivery runs). Lease ttl ${lease.ttlMs.settle / 1000} s (the in-process poller's; no heartbeat fires in the settle case), ${lease.ttlMs.extend} ms in the extension case.`,
        "WRU reported: DynamoDB Local's ConsumedCapacity (ReturnConsumedCapacity INDEXES) for every successful request. " +
          `$ at DynamoDB on-demand $${(lease.price * 1e6).toFixed(3)} per million write request units.`,
        "¹ failed = ConditionalCheckFailed (the duplicate's put). DynamoDB Local returns no capacity for it; AWS bills a failed conditional write like the write (item size, here 1 WRU), estimated from the request and included in 'WRU billed'.",
      ],
    ),
  );
}

// Standalone: node bench/lease.mjs (needs dist/: npm run build).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ROOT = fileURLToPath(new URL('..', import.meta.url));
  const DIST = path.join(ROOT, 'dist');
  const log = (...a) => console.error(...a);
  const { startStack } = await import(pathToFileURL(path.join(DIST, 'emulator/stack.js')).href);
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  let results;
  try {
    results = await benchLease({ stackEnv: stack.env, dist: pathToFileURL(DIST).href, log });
  } finally {
    await stack.stop();
  }
  printLeaseTable(results);
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench/results/lease-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log('Results: bench/results/lease-latest.json');
  process.exit(0);
}
