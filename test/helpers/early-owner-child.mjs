// The owner of early deliveries, as a process a test can pause (SIGSTOP) and kill (SIGKILL) at a
// point of the early-delivery protocol it detects deterministically (test/e2e/early-pause-kill.test.ts).
// A World (dist/, configured from the environment) whose consumer polls with its receives blind
// (SQS middleware answers every ReceiveMessage with no message), so the only deliveries it makes
// are early ones (E), and every SQS copy M goes to another consumer. It starts one `countedSteps`
// run, then holds at the point `mode` names, prints a line for it, and waits.
//
// argv: <World entry URL (dist/src/index.js)> <flow.mjs path> <tally file> <mode> <run prefix> <dir for go files>
// Lines on stdout (one each):
//   `ready`                      once consuming
//   `sent <M id> <runId>`        the SendMessage of an early delivery's copy M returned
//   `point <name> <runId>`       held at the mode's point (below)
//   `done <id> <status> <attempt> <runId>` a delivery's flow route answered (all early but in
//                                `deferred`, where the answer's body follows)
//   `body <key>`                 a step body began: it then blocks the whole event loop (as a
//                                stopped process would) until the file <dir>/go-<key> exists
// Modes (the point, and what E does meanwhile):
//   `pause-entry`  E holds at the flow route's door (before core sees it) until <dir>/go-entry
//                  exists; point `entry` once M was sent too.
//   `pause-body`   E runs; its first step body prints `body` and blocks (see above).
//   `kill-before-send`  the SendMessage of M never leaves (point `before-send`), E holds at its
//                  first write.
//   `kill-after-send`   M was sent, E holds at its first write (point `after-send`).
//   `kill-after-e`      E finished (point `after-e`); nothing else is written after it.
//   `deferred`     receives are not blind: the process consumes its own copies too; every
//                  delivery's `done` line carries its attempt and its answer's body. E's first
//                  `step_started` is throttled once (as after the SDK's retries), so core off its
//                  turbo path (WORKFLOW_TURBO=0) answers E with `{ timeoutSeconds }`.
// Every step body appends `<key>\t<pid>` to the tally file before anything else (a SIGKILL loses
// nothing it counted).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [distUrl, flowPath, tallyFile, mode, prefix, goDir] = process.argv.slice(2);
if (!distUrl || !flowPath || !tallyFile || !mode || !prefix || !goDir) {
  console.error('usage: early-owner-child.mjs <dist URL> <flow.mjs> <tally file> <mode> <prefix> <go dir>');
  process.exit(2);
}
const say = (line) => process.stdout.write(`${line}\n`);
const never = () => new Promise(() => {});
const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms));
const waitFile = async (name) => {
  while (!existsSync(path.join(goDir, name))) await sleepMs(50);
};
/** Blocks the event loop (no timer, no heartbeat, no I/O runs) until the file exists. */
const blockUntilFile = (name) => {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (!existsSync(path.join(goDir, name))) Atomics.wait(cell, 0, 0, 20);
};

let bodies = 0;
class FileTally extends Map {
  set(key, value) {
    appendFileSync(tallyFile, `${key}\t${process.pid}\n`);
    if (mode === 'pause-body' && bodies++ === 0) {
      say(`body ${key}`);
      blockUntilFile(`go-${key.replaceAll(':', '_')}`);
    }
    return super.set(key, value);
  }
}
globalThis.__e2eStepTally = new FileTally();

const { installPromiseWithResolvers } = await import(new URL('./util/polyfills.js', distUrl).href);
installPromiseWithResolvers();
const { createWorld, loadConfig } = await import(distUrl);
const { createClients } = await import(new URL('./aws/clients.js', distUrl).href);
const { currentDelivery } = await import(new URL('./context/delivery-scope.js', distUrl).href);
const { setWorld } = await import('workflow/runtime');
const { start } = await import('workflow/api');
const flow = await import(pathToFileURL(flowPath).href);
const manifest = JSON.parse(readFileSync(path.join(path.dirname(flowPath), 'manifest.json'), 'utf8'));
const workflows = manifest.workflows['workflows/checklist.ts'];

const config = loadConfig(process.env);
const clients = createClients(config);
let runId = '?';
let mSent = false;
let throttled = false;
/** A write outside any delivery returned: start()'s run_created. */
let runCreated = false;
let eDone = false;
const pointOnce = new Set();
const point = (name) => {
  if (pointOnce.has(name)) return;
  pointOnce.add(name);
  say(`point ${name} ${runId}`);
};

clients.sqs.middlewareStack.add(
  (next, context) => async (args) => {
    const name = context.commandName;
    if (name === 'ReceiveMessageCommand' && mode !== 'deferred') {
      await sleepMs(200);
      return { output: { Messages: [], $metadata: {} }, response: {} };
    }
    if (name !== 'SendMessageCommand') return next(args);
    const input = args.input;
    const attrs = input.MessageAttributes ?? {};
    const offset = Number(attrs['eve.attemptOffset']?.StringValue ?? 0);
    const isCopyOfEarly = offset >= 1 && !(input.MessageBody ?? '').includes('"stepId"') && !mSent;
    if (!isCopyOfEarly) return next(args);
    runId = /wrun_[0-9A-Za-z]+/.exec(input.MessageBody ?? '')?.[0] ?? runId;
    if (mode === 'kill-before-send') {
      // The point where a run exists and has no message: its run_created (written beside the
      // send, outside any delivery) landed.
      while (!runCreated) await sleepMs(20);
      point('before-send');
      return never();
    }
    const out = await next(args);
    mSent = true;
    say(`sent ${attrs['eve.id']?.StringValue ?? '?'} ${runId}`);
    if (mode === 'kill-after-send') point('after-send');
    return out;
  },
  { step: 'initialize', name: 'earlyOwnerHooks' },
);
clients.ddb.middlewareStack.add(
  (next, context) => async (args) => {
    const name = context.commandName;
    const write = name === 'TransactWriteItemsCommand' || name === 'PutItemCommand' || name === 'UpdateItemCommand';
    if (mode === 'deferred' && !throttled && name === 'TransactWriteItemsCommand' && currentDelivery() !== undefined) {
      if (JSON.stringify(args.input).includes('step_started')) {
        // DynamoDB throttling that outlasted the SDK's retries (this layer is above them).
        throttled = true;
        say('throttled step_started');
        const err = new Error('Rate of requests exceeds the allowed throughput.');
        err.name = 'ThrottlingException';
        err.$metadata = { httpStatusCode: 400 };
        throw err;
      }
    }
    if (write && currentDelivery() !== undefined) {
      // E's writes: held where the mode says.
      if (mode === 'kill-before-send' || mode === 'kill-after-send') return never();
      if (mode === 'kill-after-e' && eDone) return never();
    }
    const out = await next(args);
    if (name === 'TransactWriteItemsCommand' && currentDelivery() === undefined) runCreated = true;
    return out;
  },
  { step: 'initialize', name: 'earlyOwnerHoldWrites' },
);

// EVE_TEST_OWNER_TUNING: tuning options (JSON), e.g. the backstop's B, which the DUE item that
// run_created writes here takes.
const world = createWorld({ config, clients, tuning: JSON.parse(process.env.EVE_TEST_OWNER_TUNING ?? '{}') });
world.registerHandler('__wkf_workflow_', async (req) => {
  // E goes on once M was sent (so the lines come in protocol order), except where M never is.
  if (mode !== 'kill-before-send') while (!mSent) await sleepMs(20);
  if (mode === 'pause-entry') {
    point('entry');
    await waitFile('go-entry');
  }
  const reqRun = /wrun_[0-9A-Za-z]+/.exec(await req.clone().text())?.[0] ?? '?';
  const res = await flow.POST(req);
  const answer = mode === 'deferred' ? ` ${(await res.clone().text()).replaceAll('\n', ' ').slice(0, 200)}` : '';
  say(
    `done ${req.headers.get('x-vqs-message-id') ?? '?'} ${res.status} ${req.headers.get('x-vqs-message-attempt')} ${reqRun}${answer}`,
  );
  if (mode === 'kill-after-e' && !eDone) {
    eDone = true;
    // Settled after the verdict reaches the consumer: the point is printed once E returned.
    setTimeout(() => point('after-e'), 0);
  }
  return res;
});
setWorld(world);
await world.start();
say('ready');

process.on('SIGTERM', async () => {
  await world.close().catch(() => {});
  process.exit(0);
});

const run = await start(workflows.countedSteps, [prefix, 3]);
say(`started ${run.runId}`);
