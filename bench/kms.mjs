// Table 6: what KMS envelope encryption (EVE_WORLD_AWS_KMS_KEY_ID) costs per run. Real workflows
// on the real core, on eve-world-aws against the embedded emulators and their KMS endpoint, with
// and without the key. Counted per run: KMS calls (SDK middleware on the KMS client), the World's
// key requests and cache hits (the RunKeys' stats()), and key-item reads/writes. Then a cold
// process (new clients, empty cache: a new Lambda container, or an operator's `wf inspect`) asks for
// the key of each finished run once. Wall times are from the emulators, not AWS (informational).
//
// `npm run bench` runs it as part of the suite (`--only=kms` alone); `node bench/kms.mjs` runs it
// standalone with its own emulator stack (after `npm run build`).
import './lib/polyfills.mjs';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importOwn, srcOutOf, stackUrlOf } from './lib/dist.mjs';
import { fmt, median, table } from './lib/format.mjs';
import { sized } from './lib/quick.mjs';

/** KMS list price (us-east-1, symmetric requests) and the key's monthly fee. */
export const KMS_PRICES = { request: 0.03 / 1e4, keyMonth: 1 };

const SCENARIOS = [
  { id: 'seq10', label: 'sequential, 10 steps', workflow: 'manySteps', args: () => [10], runs: sized(5, 1) },
  { id: 'fanout8', label: 'fan-out of 8 (Promise.all)', workflow: 'fanOut', args: () => [8], runs: sized(5, 1) },
  {
    id: 'hook',
    label: 'hook, 3 payloads',
    workflow: 'hookCollector',
    args: () => [`bench-kms-${randomBytes(6).toString('hex')}`, 3],
    hooks: 3,
    runs: sized(3, 1),
  },
];

function countCalls(client, counts) {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      counts[context.commandName] = (counts[context.commandName] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'benchKmsCount' },
  );
}

let flowInstances = 0;

async function loadApp(wellKnown) {
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  return {
    workflows: manifest.workflows['workflows/checklist.ts'],
    // A fresh flow route per World: core's route caches the first World's queue handler.
    flow: await import(`${pathToFileURL(path.join(wellKnown, 'flow.mjs')).href}?world=${++flowInstances}`),
    api: await import('workflow/api'),
    runtime: await import('workflow/runtime'),
  };
}

async function runOne(app, world, scenario) {
  const args = scenario.args();
  const t = performance.now();
  const run = await app.api.start(app.workflows[scenario.workflow], args);
  if (scenario.hooks) {
    const token = args[0];
    for (let i = 0; i < scenario.hooks; i++) {
      for (let tries = 0; ; tries++) {
        try {
          await world.hooks.getByToken(token);
          break;
        } catch {
          if (tries > 400) throw new Error(`hook ${token} never appeared`);
          await new Promise((r) => setTimeout(r, 25));
        }
      }
      await app.api.resumeHook(token, { i, text: 'payload' });
    }
  }
  await run.returnValue;
  return { runId: run.runId, ms: performance.now() - t };
}

async function measure({ app, stackEnv, dist, scenario, encrypted }) {
  const { createWorld } = await importOwn(dist, 'index.js');
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  const { createContext } = await importOwn(dist, 'context/world-context.js', 'context.js');
  const { RunKeys } = await importOwn(dist, 'encryption/run-keys.js');
  // The World's key source, built here and handed to createWorld, so its stats can be read.
  const keysFor = (c) => (config.kmsKeyId ? new RunKeys(createContext(config, c), config.kmsKeyId) : undefined);
  const { reconcile } = await importOwn(dist, 'provision/index.js');
  const { LOCAL_KMS_ALIAS } = await import(stackUrlOf(dist));
  const config = loadConfig({
    ...stackEnv,
    EVE_WORLD_AWS_PREFIX: `bench-kms-${randomBytes(3).toString('hex')}`,
    ...(encrypted ? { EVE_WORLD_AWS_KMS_KEY_ID: LOCAL_KMS_ALIAS } : {}),
  });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const kmsCalls = {};
  countCalls(await clients.kms(), kmsCalls);
  const runKeys = keysFor(clients);
  const world = createWorld({ config, clients, runKeys });
  world.registerHandler('__wkf_workflow_', app.flow.POST);
  await world.start();
  app.runtime.setWorld(world);
  const runs = [];
  try {
    await runOne(app, world, scenario); // warm-up (connections, code paths); not counted
    for (let i = 0; i < scenario.runs; i++) {
      const kmsBefore = { ...kmsCalls };
      const statsBefore = runKeys?.stats();
      const r = await runOne(app, world, scenario);
      await new Promise((res) => setTimeout(res, 100)); // let the last settle finish
      const stats = runKeys?.stats();
      const delta = (k) => (stats && statsBefore ? stats[k] - statsBefore[k] : 0);
      runs.push({
        ...r,
        kms: Object.fromEntries(Object.entries(kmsCalls).map(([k, v]) => [k, v - (kmsBefore[k] ?? 0)])),
        keyRequests: delta('requests'),
        cacheHits: delta('cacheHits'),
        keyReads: delta('keyReads'),
        keyWrites: delta('keyWrites'),
      });
    }
  } finally {
    app.runtime.setWorld(undefined);
    await world.close();
  }
  // A cold process: new clients, empty cache, asks once per finished run.
  let cold;
  if (encrypted) {
    const coldCalls = {};
    const coldClients = createClients(config);
    countCalls(await coldClients.kms(), coldCalls);
    const readerKeys = keysFor(coldClients);
    const reader = createWorld({ config, clients: coldClients, runKeys: readerKeys });
    const t = performance.now();
    for (const r of runs) await reader.getEncryptionKeyForRun(await reader.runs.get(r.runId));
    cold = {
      runs: runs.length,
      msPerRun: (performance.now() - t) / runs.length,
      kms: coldCalls,
      stats: readerKeys.stats(),
    };
    await reader.close();
    destroyClients(coldClients);
  }
  destroyClients(clients);
  return { runs, cold };
}

function summarize(runs) {
  const per = (f) => runs.reduce((n, r) => n + f(r), 0) / runs.length;
  return {
    msMedian: median(runs.map((r) => r.ms)),
    generateDataKey: per((r) => r.kms.GenerateDataKeyCommand ?? 0),
    decrypt: per((r) => r.kms.DecryptCommand ?? 0),
    keyRequests: per((r) => r.keyRequests),
    cacheHits: per((r) => r.cacheHits),
    keyReads: per((r) => r.keyReads),
    keyWrites: per((r) => r.keyWrites),
  };
}

export async function benchKms({ stackEnv, wellKnown, dist, log }) {
  const app = await loadApp(wellKnown);
  const scenarios = [];
  log('  warm-up (DynamoDB Local and the JIT; discarded)...');
  await measure({ app, stackEnv, dist, scenario: { ...SCENARIOS[0], runs: 1 }, encrypted: false });
  for (const scenario of SCENARIOS) {
    log(`  ${scenario.label}: without a KMS key...`);
    const off = await measure({ app, stackEnv, dist, scenario, encrypted: false });
    log(`  ${scenario.label}: with EVE_WORLD_AWS_KMS_KEY_ID...`);
    const on = await measure({ app, stackEnv, dist, scenario, encrypted: true });
    scenarios.push({
      id: scenario.id,
      label: scenario.label,
      runs: scenario.runs,
      off: summarize(off.runs),
      on: summarize(on.runs),
      cold: on.cold,
      raw: { off: off.runs, on: on.runs },
    });
  }
  return { prices: KMS_PRICES, scenarios };
}

export function printKmsTable(kms, print = console.log) {
  const rows = kms.scenarios.map((s) => {
    const calls = s.on.generateDataKey + s.on.decrypt;
    return [
      s.label,
      fmt(s.on.keyRequests, 1),
      `${fmt(s.on.cacheHits, 1)} (${fmt((100 * s.on.cacheHits) / Math.max(1, s.on.keyRequests), 0)}%)`,
      fmt(s.on.generateDataKey, 1),
      fmt(s.on.decrypt, 1),
      `${fmt(s.on.keyWrites, 1)} / ${fmt(s.on.keyReads, 1)}`,
      `$${(calls * kms.prices.request * 1e6).toFixed(2)}`,
      `${fmt(s.cold.kms.DecryptCommand ?? 0, 0)} / ${s.cold.runs}`,
      `${fmt(s.off.msMedian, 0)} -> ${fmt(s.on.msMedian, 0)}`,
    ];
  });
  print(
    table(
      'Table 6. KMS envelope encryption per run (EVE_WORLD_AWS_KMS_KEY_ID set; the time column compares the same workflows without it)',
      [
        'scenario',
        'key requests',
        'cache hits',
        'GenerateDataKey',
        'Decrypt',
        'key item W / R',
        'KMS $ / 1M runs',
        'cold reader Decrypt / runs',
        'median ms off -> on',
      ],
      rows,
      [
        `KMS: $${(KMS_PRICES.request * 1e4).toFixed(2)} per 10,000 requests + $${KMS_PRICES.keyMonth}/month for the key. In one process a run costs one GenerateDataKey (in start()) and one key-item write; ` +
          'every later request is a cache hit. Each other process (Lambda container, operator) that touches the run pays one GetItem + one Decrypt per cache lifetime (15 min). Times are emulator times.',
      ],
    ),
  );
}

// Standalone: node bench/kms.mjs (needs dist/: npm run build).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ROOT = fileURLToPath(new URL('..', import.meta.url));
  const DIST = path.join(ROOT, 'dist');
  const SRC_OUT = srcOutOf(DIST);
  const log = (...a) => console.error(...a);
  const { buildE2eApp } = await import(pathToFileURL(path.join(ROOT, 'test/e2e/build.mjs')).href);
  await buildE2eApp();
  const { startStack } = await import(pathToFileURL(path.join(DIST, 'emulator/stack.js')).href);
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  let results;
  try {
    results = await benchKms({
      stackEnv: stack.env,
      wellKnown: path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1'),
      dist: pathToFileURL(SRC_OUT).href,
      log,
    });
  } finally {
    await stack.stop();
  }
  printKmsTable(results);
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench/results/kms-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log('Results: bench/results/kms-latest.json');
  process.exit(0);
}
