import '../lib/polyfills.mjs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startStack } from '../../dist/emulator/stack.js';
import { reconcile } from '../../dist/resources.js';
import { loadConfig } from '../../dist/config.js';
import { createClients } from '../../dist/aws/clients.js';
import { createWorld } from '../../dist/index.js';
const wk = path.resolve('test/e2e/app/.well-known/workflow/v1');
const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
let world;
try {
  const config = loadConfig({ ...stack.env, EVE_WORLD_AWS_PREFIX: 'bench-x', EVE_WORLD_AWS_CONCURRENCY: '16' });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  world = createWorld({ config, clients });
  const oc = world.events.create; world.events.create = async (r, d, p) => { const o = await oc(r, d, p); console.log('create', d.eventType, JSON.stringify(p), '->', Object.keys(o).join(','), 'events', o.events?.length, 'cursor', o.cursor); return o; };
  const ol = world.events.list; world.events.list = async (p) => { const o = await ol(p); console.log('list', JSON.stringify(p), '->', o.data.length, o.cursor, o.hasMore); return o; };
  const manifest = JSON.parse(readFileSync(path.join(wk, 'manifest.json'), 'utf8'));
  const wfs = manifest.workflows['workflows/checklist.ts'];
  const flow = await import(path.join(wk, 'flow.mjs'));
  world.registerHandler('__wkf_workflow_', flow.POST);
  await world.start();
  const { setWorld } = await import('workflow/runtime');
  const { start } = await import('workflow/api');
  setWorld(world);
  const run = await start(wfs[process.argv[2] ?? 'manySteps'], JSON.parse(process.argv[3] ?? '[3]'));
  await new Promise((r) => setTimeout(r, Number(process.argv[4] ?? 2000)));
} finally { await world?.close(); await stack.stop(); }
