// A World process of one build (test/helpers/builds.ts) for the rolling-upgrade test: the build's
// createWorld (configured from the environment), its in-process consumer and the e2e flow route,
// like `eve start`, and runs started on request. Prints "ready" once consuming.
//
// argv: <World entry URL (dist/src/index.js)> <flow.mjs path> <manifest.json path> <tally file> [createWorld options JSON]
// stdin, one line each: `start <tag> <workflow export name> <JSON args>`; answers on stdout with
// `started <tag> <runId>` or `failed <tag> <JSON message>`.
// Every step-body execution of `countedAdd` (and `gatedStep`) appends `<key>\t<pid>` to the tally
// file at once, so a SIGKILLed process loses nothing it counted. With E2E_HOLD_GATED=1 every
// `gatedStep` body waits forever (until the process is killed), as a long step would.
// Before `ready` it prints `lease <value>`: WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS once the build's
// createWorld ran (`-` when unset: core's own default, 860 s).
import { appendFileSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [distUrl, flowPath, manifestPath, tallyFile, optionsJson] = process.argv.slice(2);
if (!distUrl || !flowPath || !manifestPath || !tallyFile) {
  console.error(
    'usage: upgrade-child.mjs <World entry URL (dist/src/index.js)> <flow.mjs path> <manifest.json path> <tally file>',
  );
  process.exit(2);
}

class FileTally extends Map {
  set(key, value) {
    appendFileSync(tallyFile, `${key}\t${process.pid}\n`);
    return super.set(key, value);
  }
}
globalThis.__e2eStepTally = new FileTally();
if (process.env.E2E_HOLD_GATED === '1') globalThis.__e2eGates = { get: () => new Promise(() => {}) };

// The polyfill lives in util/ since src/ holds only index.ts; the previous release has it at the top.
const { installPromiseWithResolvers } = await import(new URL('./util/polyfills.js', distUrl).href).catch(
  () => import(new URL('./polyfills.js', distUrl).href),
);
installPromiseWithResolvers();
const { createWorld } = await import(distUrl);
const { setWorld } = await import('workflow/runtime');
const { start } = await import('workflow/api');
const flow = await import(pathToFileURL(flowPath).href);
const workflows = JSON.parse(readFileSync(manifestPath, 'utf8')).workflows['workflows/checklist.ts'];

const world = createWorld(JSON.parse(optionsJson ?? '{}'));
world.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
setWorld(world);
await world.start();
process.stdout.write(`lease ${process.env.WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS ?? '-'}\nready\n`);

createInterface({ input: process.stdin }).on('line', async (line) => {
  const m = /^start (\S+) (\S+) (.*)$/.exec(line);
  if (!m) return;
  const [, tag, name, args] = m;
  try {
    const run = await start(workflows[name], JSON.parse(args));
    process.stdout.write(`started ${tag} ${run.runId}\n`);
  } catch (err) {
    process.stdout.write(`failed ${tag} ${JSON.stringify(String(err))}\n`);
  }
});

process.on('SIGTERM', async () => {
  await world.close().catch(() => {});
  process.exit(0);
});
