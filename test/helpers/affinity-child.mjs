// A consumer process of one build of a workflow app, for the deployment-affinity test
// (test/e2e/affinity.test.ts): this checkout's createWorld (configured from the environment and the
// options JSON), its in-process consumer and the app's compiled flow route, like `eve start`.
// Prints "ready <deploymentId>" once consuming.
//
// argv: <World entry URL (dist/src/index.js)> <app dir> <workflow file> [createWorld options JSON]
// stdin, one line each: `start <tag> <export name> <JSON args>` -> `started <tag> <runId>`;
// `resume <tag> <token> <JSON payload>` -> `resumed <tag> <runId>`; either may answer
// `failed <tag> <JSON message>`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [distUrl, appDir, workflowFile, optionsJson] = process.argv.slice(2);
if (!distUrl || !appDir || !workflowFile) {
  console.error(
    'usage: affinity-child.mjs <World entry URL (dist/src/index.js)> <app dir> <workflow file> [options JSON]',
  );
  process.exit(2);
}
const wellKnown = path.join(appDir, '.well-known/workflow/v1');

const { installPromiseWithResolvers } = await import(new URL('./util/polyfills.js', distUrl).href);
installPromiseWithResolvers();
const { createWorld } = await import(distUrl);
const { setWorld } = await import('workflow/runtime');
const { start, resumeHook } = await import('workflow/api');
const flow = await import(pathToFileURL(path.join(wellKnown, 'flow.mjs')).href);
const workflows = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8')).workflows[workflowFile];

const world = createWorld(JSON.parse(optionsJson ?? '{}'));
world.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
setWorld(world);
await world.start();
process.stdout.write(`ready ${await world.getDeploymentId()}\n`);

createInterface({ input: process.stdin }).on('line', async (line) => {
  const m = /^(start|resume) (\S+) (\S+) (.*)$/.exec(line);
  if (!m) return;
  const [, verb, tag, name, json] = m;
  try {
    if (verb === 'start') {
      const run = await start(workflows[name], JSON.parse(json));
      process.stdout.write(`started ${tag} ${run.runId}\n`);
    } else {
      const hook = await resumeHook(name, JSON.parse(json));
      process.stdout.write(`resumed ${tag} ${hook.runId}\n`);
    }
  } catch (err) {
    process.stdout.write(`failed ${tag} ${JSON.stringify(String(err))}\n`);
  }
});

process.on('SIGTERM', async () => {
  await world.close().catch(() => {});
  process.exit(0);
});
