import '../lib/polyfills.mjs';
import path from 'node:path';
import { startStack } from '../../dist/emulator/stack.js';
import { benchOurs, benchLocal } from '../workflows.mjs';
const wellKnown = path.resolve('test/e2e/app/.well-known/workflow/v1');
const dist = path.resolve('dist');
const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
try {
  const t = Date.now();
  const ours = await benchOurs({ stackEnv: stack.env, wellKnown, dist, log: console.error });
  console.error('ours took', Date.now() - t);
  const t2 = Date.now();
  const local = await benchLocal({ wellKnown, log: console.error });
  console.error('local took', Date.now() - t2);
  const strip = (o) => JSON.stringify(o, (k, v) => (k === 'wallMs' ? undefined : v), 1);
  console.log(strip({ ours, local }));
} finally { await stack.stop(); }
