/**
 * `eve-world-aws demo`: the whole product in one command on a fresh machine. It starts the embedded
 * emulator, creates the resources, compiles and runs a sample workflow (parallel steps, a sleep, a
 * hook it approves itself, a stream) on this World through real SQS deliveries, prints progress as
 * events land, then stops everything and exits.
 *
 * DynamoDB data is kept in `--data-dir` (default `.emulate/dynamodb`) so the run can be inspected
 * afterwards with `emulate --data-dir ...` and `tail <runId>`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { EntityConflictError } from '@workflow/errors';
import { Command } from 'commander';
import { startStack } from '../../emulator/stack.js';
import { createClients, destroyClients } from '../aws/clients.js';
import { sleep } from '../aws/sleep.js';
import { loadConfig } from '../config/index.js';
import { buildDemo } from '../demo/build.js';
import { createWorld } from '../index.js';
import { reconcile } from '../provision/index.js';
import { installPromiseWithResolvers } from '../util/polyfills.js';
import { DEMO_PEERS, requirePeers } from './peers.js';
import { exitCodes, type HelpSpec, USAGE_ERROR, withHelp } from './shared/help-text.js';
import { CliError, EXIT_FAILURE, EXIT_INTERRUPTED, palette, printJson } from './shared/output.js';

interface DemoOptions {
  dataDir: string;
  json?: boolean;
}

/** The run `start()` returns (workflow is an optional peer: a type only, loaded when the demo runs). */
type DemoRun = Awaited<ReturnType<typeof import('workflow/api')['start']>>;

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Ctrl-C during the demo: the first signal cancels the demo's run (a `run_cancelled` event, as
 * core's `run.cancel()` writes it) before the emulator stops, so the run kept in `--data-dir` is
 * `cancelled`, never left `running`; a second signal exits at once. DynamoDB Local runs in its own
 * process group (`ownProcessGroup`): the terminal's Ctrl-C cannot stop it before the cancel.
 */
class Interrupt {
  signal: NodeJS.Signals | undefined;
  private reject: (err: Error) => void = () => {};
  private readonly stopped = new Promise<never>((_, reject) => {
    this.reject = reject;
  });
  private readonly onSignal = (sig: NodeJS.Signals) => {
    if (this.signal) process.exit(EXIT_INTERRUPTED); // the stack's exit hook kills the JVM
    this.signal = sig;
    process.stderr.write(`\n${sig}: cancelling the demo run and stopping the emulator (again to quit at once)...\n`);
    this.reject(new CliError(`interrupted (${sig})`, EXIT_INTERRUPTED));
  };

  constructor() {
    this.stopped.catch(() => {}); // raced below; unobserved until then
    for (const s of SIGNALS) process.on(s, this.onSignal);
  }

  /** `p`, or a CliError (exit 130) as soon as a signal arrives. */
  race<T>(p: Promise<T>): Promise<T> {
    p.catch(() => {}); // abandoned when the signal wins
    return Promise.race([p, this.stopped]);
  }

  uninstall(): void {
    for (const s of SIGNALS) process.off(s, this.onSignal);
  }
}

async function runDemo(opts: DemoOptions, interrupt: Interrupt): Promise<number> {
  const c = palette();
  const log = (line: string) => {
    if (!opts.json) process.stdout.write(`${line}\n`);
  };
  const t0 = Date.now();
  const stamp = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s`;

  log(c.dim('starting DynamoDB Local + SQS/S3 emulator on 127.0.0.1 …'));
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, dataDir: opts.dataDir, ownProcessGroup: true });
  let world: ReturnType<typeof createWorld> | undefined;
  let started: Promise<DemoRun> | undefined;
  let finished = false;
  try {
    if (interrupt.signal) throw new CliError(`interrupted (${interrupt.signal})`, EXIT_INTERRUPTED);
    const config = loadConfig({
      ...process.env,
      ...stack.env,
      EVE_WORLD_AWS_PREFIX: process.env.EVE_WORLD_AWS_PREFIX ?? 'eve-world-demo',
    });
    const clients = createClients(config);
    await interrupt.race(reconcile(clients, config, 'apply'));
    log(`${c.dim(stamp())} resources ready: table ${config.tableName}, queue ${config.queue}, bucket ${config.bucket}`);

    // Next to the `workflow` package this command loads (see src/demo/build.ts), whatever the cwd.
    const built = await interrupt.race(buildDemo());
    log(
      `${c.dim(stamp())} ${built.built ? 'compiled' : 'reused'} the demo workflow (${path.relative(process.cwd(), built.flowPath)})`,
    );

    const flow = (await import(pathToFileURL(built.flowPath).href)) as { POST: (r: Request) => Promise<Response> };
    const meta = JSON.parse(readFileSync(built.manifestPath, 'utf8')).workflows['workflows/demo.ts'].forecastDemo;

    const { setWorld } = await import('workflow/runtime');
    const { start, resumeHook } = await import('workflow/api');
    world = createWorld({ config, clients });
    world.registerHandler('__wkf_workflow_', flow.POST);
    await world.start();
    setWorld(world);

    const token = `demo-approval-${Date.now()}`;
    started = start(meta, [['Lisbon', 'Oslo', 'Osaka'], token]);
    const run = await interrupt.race(started);
    log(`${c.dim(stamp())} started run ${c.bold(run.runId)}`);

    // Progress: print events as they are committed.
    let seen = 0;
    let approved = false;
    const poll = async () => {
      const page = await world!.events.list({
        runId: run.runId,
        pagination: { cursor: undefined },
        resolveData: 'none',
      });
      for (const e of page.data.slice(seen)) {
        const name = (e as { eventData?: { stepName?: string } }).eventData?.stepName;
        const line = `${c.dim(stamp())} ${String(seen + 1).padStart(3)} ${e.eventType}${name ? ` ${c.dim(name.split('//').pop() ?? name)}` : ''}`;
        log(line);
        seen++;
        if (e.eventType === 'hook_created' && !approved) {
          approved = true;
          await resumeHook(token, { approved: true, by: 'the demo' });
          log(`${c.dim(stamp())}     resumed hook ${token}`);
        }
      }
    };
    const reader = (async () => {
      const chunks: string[] = [];
      const r = run.getReadable<Uint8Array>().getReader();
      for (;;) {
        const { done, value } = await r.read();
        if (done) break;
        const text = typeof value === 'string' ? value : new TextDecoder().decode(value);
        chunks.push(text);
        for (const line of text.split('\n').filter(Boolean)) log(`${c.dim(stamp())}     ${c.cyan('stream')} ${line}`);
      }
      return chunks.join('');
    })();
    const result = run.returnValue.finally(() => {
      finished = true;
    });
    // Abandoned when a signal interrupts the demo (the cancelled run then rejects them).
    result.catch(() => {});
    reader.catch(() => {});
    while (!finished) {
      await interrupt.race(poll());
      await interrupt.race(sleep(150));
    }
    await poll();
    const value = await result;
    const streamText = await reader;
    const status = (await world.runs.get(run.runId, { resolveData: 'none' })).status;
    const tail = `EVE_WORLD_AWS_PREFIX=${config.prefix} npx eve-world-aws emulate --data-dir ${opts.dataDir}   # then, with the exports it prints: npx eve-world-aws tail ${run.runId}`;
    if (opts.json) {
      printJson({
        runId: run.runId,
        status,
        result: value,
        stream: streamText,
        events: seen,
        seconds: (Date.now() - t0) / 1000,
      });
    } else {
      log(`${c.dim(stamp())} ${c.green('run completed')}: ${JSON.stringify(value)}`);
      log('');
      log(`run id: ${run.runId}`);
      log(`inspect it later: ${tail}`);
    }
    destroyClients(clients);
    return status === 'completed' ? 0 : EXIT_FAILURE;
  } finally {
    if (interrupt.signal && started && !finished) await cancelDemoRun(started, interrupt.signal);
    await world?.close().catch(() => {});
    await stack.stop();
  }
}

/** Write the demo run's `run_cancelled` (once it exists); a failure is reported, never thrown. */
async function cancelDemoRun(started: Promise<DemoRun>, signal: NodeJS.Signals): Promise<void> {
  let runId = '(not started)';
  try {
    const run = await started;
    runId = run.runId;
    await run.cancel({ cancelReason: `eve-world-aws demo interrupted (${signal})` });
    process.stderr.write(`cancelled run ${runId}\n`);
  } catch (err) {
    // A run that never started needs nothing; one that ended meanwhile is refused with
    // EntityConflictError (it is not left running either); anything else is said.
    if (runId === '(not started)' || EntityConflictError.is(err)) return;
    process.stderr.write(`could not cancel run ${runId}: ${(err as Error).message}\n`);
  }
}

const DEMO_HELP: HelpSpec = {
  notes: [
    'Starts the embedded emulator on free ports (needs Java 17), creates the resources (prefix eve-world-demo), compiles the sample workflow, runs it with deliveries through SQS, prints each event and the stream as they arrive, then stops everything. DynamoDB data stays in --data-dir, so the run can be inspected afterwards with `emulate --data-dir .emulate/dynamodb` and `tail <runId>`. Ctrl-C cancels the run first.',
  ],
  examples: [['eve-world-aws demo', 'what `npm start` runs'], ['eve-world-aws demo --json | jq .runId']],
  exitCodes: exitCodes('the run completed', 'the run failed, or the emulator failed', USAGE_ERROR, {
    130: 'interrupted (Ctrl-C): the run was cancelled',
  }),
};

export function demoCommand(): Command {
  return withHelp(new Command('demo'), DEMO_HELP)
    .description(
      'Start the embedded emulator, run a sample workflow (steps, sleep, hook, stream) on this World, and exit.',
    )
    .option('--data-dir <dir>', 'keep DynamoDB data here, to inspect the run afterwards', '.emulate/dynamodb')
    .option('--json', 'print one JSON summary instead of progress lines')
    .action(async (opts: DemoOptions) => {
      requirePeers('demo', DEMO_PEERS);
      installPromiseWithResolvers();
      const interrupt = new Interrupt();
      const code = await runDemo(opts, interrupt).finally(() => interrupt.uninstall());
      if (code !== 0) throw new CliError('the demo run did not complete', code);
    });
}
