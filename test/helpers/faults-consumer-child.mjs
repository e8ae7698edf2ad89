// A consumer process for the fault suite: a World (dist/, configured from the environment) that
// consumes the queue and runs the e2e flow route in process, like `eve start` does. The suite
// starts several, duplicates deliveries between them, and SIGKILLs them.
//
// argv: <World entry URL (dist/src/index.js)> <flow.mjs path> <tally file> [tuning JSON]
// Tuning options are not variables, so they come as the last argument, passed to createWorld.
// Every step-body execution of `countedAdd` appends `<key>\t<pid>` to the tally file at once (a
// SIGKILLed process loses nothing it counted; the suite kills the process that is mid-body). Prints "ready" on stdout once consuming.
import { appendFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// EVE_TEST_CLOCK_SKEW_MS: this process's clock runs that far ahead (negative: behind) of the
// others', for everything it does (`Date.now()`, `new Date()`): signing and verifying its own
// deliveries, the timestamps of what it writes, the leases it reads.
const skew = Number(process.env.EVE_TEST_CLOCK_SKEW_MS ?? 0);
if (skew) {
  const RealDate = Date;
  const realNow = RealDate.now;
  globalThis.Date = class SkewedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + skew);
      else super(...args);
    }
    static now() {
      return realNow() + skew;
    }
  };
}

const [distUrl, flowPath, tallyFile, tuningJson] = process.argv.slice(2);
if (!distUrl || !flowPath || !tallyFile) {
  console.error(
    'usage: faults-consumer-child.mjs <World entry URL (dist/src/index.js)> <flow.mjs path> <tally file> [tuning JSON]',
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

// EVE_TEST_HANG_STEP_PREFIX: `gatedStep` bodies whose key starts with it never finish here (their
// gate never opens), so the test can SIGKILL this process inside the body (test/e2e/backstop-owner-killed.test.ts).
const hangPrefix = process.env.EVE_TEST_HANG_STEP_PREFIX;
if (hangPrefix) {
  globalThis.__e2eGates = {
    get: (key) => (String(key).startsWith(hangPrefix) ? new Promise(() => {}) : undefined),
  };
}

const { installPromiseWithResolvers } = await import(new URL('./util/polyfills.js', distUrl).href);
installPromiseWithResolvers();
const { createWorld } = await import(distUrl);
const { setWorld } = await import('workflow/runtime');
const flow = await import(pathToFileURL(flowPath).href);

const world = createWorld({ tuning: JSON.parse(tuningJson ?? '{}') });
// EVE_TEST_PRINT_DELIVERIES=1: prints `delivered <message id> <status> <runId> <stepId or ->`
// once each delivery's flow route answered (test/e2e/early-pause-kill.test.ts waits for its copy
// M's; test/e2e/step-lease-skew.test.ts for a step message of a run).
const printDeliveries = process.env.EVE_TEST_PRINT_DELIVERIES === '1';
world.registerHandler('__wkf_workflow_', async (req) => {
  const body = printDeliveries
    ? await req
        .clone()
        .json()
        .catch(() => ({}))
    : {};
  const res = await flow.POST(req);
  if (printDeliveries)
    process.stdout.write(
      `delivered ${req.headers.get('x-vqs-message-id') ?? '?'} ${res.status} ${body?.runId ?? '-'} ${body?.stepId ?? '-'}\n`,
    );
  return res;
});
setWorld(world);
await world.start();
process.stdout.write('ready\n');

process.on('SIGTERM', async () => {
  await world.close().catch(() => {});
  process.exit(0);
});
