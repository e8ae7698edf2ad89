// One published version of the host in the Lambda shape, for test/e2e/affinity-lambda.test.ts:
// this checkout's createWorld in Lambda mode (AWS_LAMBDA_FUNCTION_NAME/_VERSION in the
// environment: no poller, the id `lambda:<function>:<version>`) and the app's compiled flow route
// behind a plain HTTP server, standing for the Nitro server the Lambda Web Adapter forwards to.
// Prints "ready <deploymentId> <port>" once listening.
//
// argv: <World entry URL (dist/src/index.js)> <app dir> <workflow file>
// stdin, one line each: `start <tag> <export name> <JSON args>` -> `started <tag> <runId>`;
// `resume <tag> <token> <JSON payload>` -> `resumed <tag> <runId>`; either may answer
// `failed <tag> <JSON message>`.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [distUrl, appDir, workflowFile] = process.argv.slice(2);
if (!distUrl || !appDir || !workflowFile) {
  console.error('usage: lambda-host-child.mjs <World entry URL (dist/src/index.js)> <app dir> <workflow file>');
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

const world = createWorld();
setWorld(world);
await world.start();

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  try {
    const response = await flow.POST(
      new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }),
    );
    const out = {};
    response.headers.forEach((v, k) => {
      out[k] = v;
    });
    res.writeHead(response.status, out);
    res.end(Buffer.from(await response.arrayBuffer()));
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String(err));
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
process.stdout.write(`ready ${await world.getDeploymentId()} ${server.address().port}\n`);

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
  server.close();
  await world.close().catch(() => {});
  process.exit(0);
});
