// Starts one run of workflows/hello.ts on eve-world-aws from plain Node and waits for it.
//
//   npx wf build                                   # compiles workflows/ into .well-known/workflow/v1/
//   npx eve-world-aws emulate --env-out .emulate/env   # another terminal: the local AWS stack
//   node --env-file=.emulate/env run.mjs Ada
//
// Against AWS, leave out the emulator and set AWS_REGION and EVE_WORLD_AWS_* instead (the
// resources: `npx eve-world-aws init`).
import { readFileSync } from 'node:fs';
import { createWorld } from '@portfolio/eve-world-aws';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';

const v1 = new URL('./.well-known/workflow/v1/', import.meta.url);
// What `wf build` wrote: the flow route (runs workflows and steps) and the manifest that names them.
const flow = await import(new URL('flow.mjs', v1).href);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', v1), 'utf8'));

// Config from the environment (AWS_REGION, AWS_ENDPOINT_URL_*, EVE_WORLD_AWS_*).
const world = createWorld();
// Every SQS delivery this process receives is handed to the flow route, in-process.
world.registerHandler('__wkf_workflow_', flow.POST);
await world.start();
setWorld(world);

try {
  const run = await start(manifest.workflows['workflows/hello.ts'].hello, [process.argv[2] ?? 'world']);
  console.log(`started ${run.runId}`);
  const reader = run.getReadable().getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    process.stdout.write(`stream: ${typeof r.value === 'string' ? r.value : new TextDecoder().decode(r.value)}`);
  }
  console.log('result:', JSON.stringify(await run.returnValue));
  console.log(`inspect it: npx eve-world-aws tail ${run.runId}`);
} finally {
  await world.close();
}
