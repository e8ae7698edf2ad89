// One measured process of bench/telemetry.mjs: real workflows on eve-world-aws (dist/) with the
// in-process poller, in one telemetry mode, and its own CPU time per delivery.
//   off      no OpenTelemetry SDK registered, EVE_WORLD_AWS_METRICS=0
//   metrics  no SDK, EMF metrics on (documents counted, not printed)
//   traced   an SDK registered (every span kept in memory, then dropped) and metrics on
// Usage: node telemetry-child.mjs <mode> <dist-url> <well-known-dir> <runs>; env: the stack's.
// Prints one JSON line: { mode, runs, deliveries, cpuMs, wallMs, spans, emfLines }.
import './polyfills.mjs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { importOwn } from './dist.mjs';
import { sized } from './quick.mjs';

const [mode, dist, wellKnown, runsArg] = process.argv.slice(2);
const runs = Number(runsArg);

let exporter;
if (mode === 'traced') {
  const { context, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import(
    '@opentelemetry/sdk-trace-base'
  );
  exporter = new InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
}

const { createWorld } = await importOwn(dist, 'index.js');
const { loadConfig } = await importOwn(dist, 'config/index.js');
const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
const { reconcile } = await importOwn(dist, 'provision/index.js');
const { enableMetrics } = await importOwn(dist, 'telemetry/metrics.js');
const api = await import('workflow/api');
const runtime = await import('workflow/runtime');
const manifest = JSON.parse((await import('node:fs')).readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
const workflows = manifest.workflows['workflows/checklist.ts'];
const flow = await import(pathToFileURL(path.join(wellKnown, 'flow.mjs')).href);

const config = loadConfig({ ...process.env, EVE_WORLD_AWS_METRICS: mode === 'off' ? '0' : '1' });
const clients = createClients(config);
await reconcile(clients, config, 'apply');
let deliveries = 0;
const world = createWorld({ config, clients, consumer: { onDeliveryOutcome: () => deliveries++ } });
let emfLines = 0;
if (mode !== 'off') enableMetrics({ dimensions: { Queue: config.queue }, write: () => emfLines++ });
world.registerHandler('__wkf_workflow_', flow.POST);
runtime.setWorld(world);
await world.start();

const once = async () => (await api.start(workflows.manySteps, [4])).returnValue;
for (let i = 0; i < sized(2, 1); i++) await once(); // warm-up: connections, first-delivery paths
deliveries = 0;
exporter?.reset();
let spans = 0;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < runs; i++) {
  await Promise.all([once(), once()]);
  spans += exporter?.getFinishedSpans().length ?? 0;
  exporter?.reset();
}
const cpu = process.cpuUsage(cpu0);
const wallMs = performance.now() - t0;
await world.close();
runtime.setWorld(undefined);
destroyClients(clients);
console.log(
  JSON.stringify({ mode, runs: runs * 2, deliveries, cpuMs: (cpu.user + cpu.system) / 1000, wallMs, spans, emfLines }),
);
process.exit(0);
