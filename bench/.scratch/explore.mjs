import '../lib/polyfills.mjs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startStack } from '../../dist/emulator/stack.js';
import { reconcile } from '../../dist/resources.js';
import { loadConfig } from '../../dist/config.js';
import { createClients } from '../../dist/aws/clients.js';
import { createWorld } from '../../dist/index.js';
import { createRecorder, instrumentClients, instrumentWorld } from '../lib/meter.mjs';
const wk = path.resolve('test/e2e/app/.well-known/workflow/v1');
const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
let world;
try {
  const config = loadConfig({ ...stack.env, EVE_WORLD_AWS_PREFIX: 'bench-x', EVE_WORLD_AWS_CONCURRENCY: '16' });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const rec = createRecorder();
  instrumentClients(clients, rec);
  world = createWorld({ config, clients });
  const wr = instrumentWorld(world, rec);
  const manifest = JSON.parse(readFileSync(path.join(wk, 'manifest.json'), 'utf8'));
  const wfs = manifest.workflows['workflows/checklist.ts'];
  const flow = await import(path.join(wk, 'flow.mjs'));
  world.registerHandler('__wkf_workflow_', flow.POST);
  await world.start();
  const { setWorld } = await import('workflow/runtime');
  const { start } = await import('workflow/api');
  setWorld(world);
  const name = process.argv[2] ?? 'manySteps';
  const args = JSON.parse(process.argv[3] ?? '[10]');
  for (let i = 0; i < 2; i++) {
    const m = rec.mark(); const wm = wr.mark();
    const t = performance.now();
    const run = await start(wfs[name], args);
    const type = await wr.finished(run.runId);
    console.log('run', i, type, (performance.now() - t).toFixed(0), 'ms');
    if (i === 1) {
      await new Promise((r) => setTimeout(r, 300));
      const merged = [...rec.since(m).map((c) => ({ t: c.start, s: `  aws ${c.service}.${c.command}${c.ok ? '' : ' !' + c.error} ${c.received !== undefined ? 'recv=' + c.received : ''} ${c.capacity ? 'cu=' + c.capacity.total : ''} ${(c.end - c.start).toFixed(1)}ms` })), ...wr.since(wm).map((c) => ({ t: c.start - 0.001, s: `W ${c.name}` }))].sort((a, b) => a.t - b.t);
      for (const x of merged) console.log(x.t.toFixed(1), x.s);
    }
  }
} finally { await world?.close(); await stack.stop(); }
