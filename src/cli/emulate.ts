/**
 * `eve-world-aws emulate`: a local AWS stack in the foreground.
 *
 * Embedded (default, no Docker): DynamoDB Local (java child) + fauxqs (SQS + S3, in this process)
 * via emulator/stack.ts; both are optional peer dependencies (see ./peers.ts), checked first. The
 * stack adds KMS, Secrets Manager and EventBridge Scheduler endpoints of our own (in this process,
 * no dependency), whose `AWS_ENDPOINT_URL_*` lines are printed with the others. `--docker`:
 * docker-compose.yml (DynamoDB Local, ElasticMQ, MinIO) via emulator/docker.ts. Either way it
 * creates the resources like `init`, prints the env a shell needs, and on SIGINT/SIGTERM/SIGHUP, or
 * when its parent process goes away, stops everything it started, removes the `--env-file` it
 * wrote, and exits 0.
 *
 * Child-process safety: the stack's synchronous process-exit hook SIGKILLs the java child, so even
 * the "second Ctrl-C" path (immediate exit) and a signal during start-up leave no JVM behind.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { composeStack, DEFAULT_DOCKER_S3_PORT, DOCKER_CREDENTIALS, dockerCompose } from '../../emulator/docker.js';
import {
  assertPortFree,
  DEFAULT_AWS_PORT,
  DEFAULT_DYNAMODB_PORT,
  EmulatorError,
  freePort,
  startStack,
} from '../../emulator/stack.js';
import { sleep } from '../aws/sleep.js';
import { loadConfig } from '../config/index.js';
import { hasProblems, type ResourceReport } from '../provision/index.js';
import { renderReports, runReconcile } from './init.js';
import { EMULATOR_PEERS, requirePeers } from './peers.js';
import { exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, EXIT_USAGE, exportLines, printJson, withProgress } from './shared/output.js';

export interface EmulateOptions {
  port: number;
  dynamodbPort: number;
  s3Port?: number;
  dataDir?: string;
  init: boolean;
  envFile?: string;
  envOut?: string;
  docker?: boolean;
  json?: boolean;
}

function parsePort(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535)
    throw new InvalidArgumentError('must be a port number 0-65535 (0 = any free port).');
  return Number(v);
}

/** `EVE_WORLD_AWS_JAVA` (tests, unusual installs), then `$JAVA_HOME/bin/java`, then `java` on PATH. */
export function javaCommand(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EVE_WORLD_AWS_JAVA) return env.EVE_WORLD_AWS_JAVA;
  if (env.JAVA_HOME) {
    const j = path.join(env.JAVA_HOME, 'bin', 'java');
    if (existsSync(j)) return j;
  }
  return 'java';
}

/** EVE_WORLD_AWS_* names the user set, so the other shell uses the same resources. */
function worldVars(env: NodeJS.ProcessEnv): Record<string, string> {
  const set = Object.entries(env).filter(([k, v]) => k.startsWith('EVE_WORLD_AWS_') && k !== 'EVE_WORLD_AWS_JAVA' && v);
  return Object.fromEntries(set) as Record<string, string>;
}

/**
 * Signal handling for a foreground server. The first signal asks for a graceful stop; a second
 * one exits at once (the stack's exit hook still kills the java child).
 */
class Shutdown {
  requested = false;
  private wake: (() => void) | undefined;
  private readonly signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  private readonly onSignal = (sig: NodeJS.Signals) => {
    if (this.requested) process.exit(0);
    this.requested = true;
    if (process.stderr.isTTY) process.stderr.write(`\n${sig}: stopping the emulators...\n`);
    if (this.wake) this.wake();
    else if (this.duringStartup) process.exit(0); // nothing to stop gracefully yet; exit hook cleans up
  };
  duringStartup = true;

  private orphanWatch: NodeJS.Timeout | undefined;

  install(): void {
    for (const s of this.signals) process.on(s, this.onSignal);
    // Launchers that wrap the command in a shell (`npx` -> `sh -c` -> node) pass a SIGTERM to the
    // shell, which dies without passing it on. Orphaned, we would keep the emulators running
    // forever; so a parent that goes away counts as a stop request, like SIGHUP.
    const parent = process.ppid;
    this.orphanWatch = setInterval(() => {
      if (process.ppid !== parent && !this.requested) this.onSignal('SIGHUP');
    }, 500);
    this.orphanWatch.unref();
  }

  uninstall(): void {
    for (const s of this.signals) process.off(s, this.onSignal);
    clearInterval(this.orphanWatch);
  }

  /** Resolves when a stop is requested. */
  waitForStop(): Promise<void> {
    if (this.requested) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }
}

interface Ready {
  mode: 'embedded' | 'docker';
  endpoints: { dynamodb: string; sqs: string; s3: string; kms?: string; secretsManager?: string; scheduler?: string };
  env: Record<string, string>;
  resources: ResourceReport[] | null;
  storage: string;
  dynamodbPid?: number;
}

async function initResources(env: Record<string, string>, enabled: boolean): Promise<ResourceReport[] | null> {
  if (!enabled) return null;
  // createClients reads credentials from process.env when they are set there.
  const reports = await runReconcile(loadConfig({ ...process.env, ...env }), 'apply');
  if (hasProblems(reports)) {
    process.stderr.write(renderReports(reports, 'apply'));
    throw new CliError('The emulator holds resources that do not match what eve-world-aws needs (see the fix above).');
  }
  return reports;
}

/**
 * The `--env-file` this process wrote, which lives only as long as the emulator: its ports mean
 * nothing once it stops, so on stop (however it stops: a signal, a second Ctrl-C's immediate exit,
 * a crash) the file is removed, and a user who sources it gets "no such file", not stale endpoints.
 * Removed only while it holds what this process wrote: another emulate may have written its own.
 */
class EnvFile {
  private written: { file: string; text: string } | undefined;
  private readonly onExit = () => this.remove();

  write(file: string, lines: string[]): void {
    mkdirSync(path.dirname(file), { recursive: true });
    // `export K=V` works for `source FILE` and for `node --env-file=FILE`.
    const text = `# written by eve-world-aws emulate (pid ${process.pid}); removed when it stops\n${lines.join('\n')}\n`;
    writeFileSync(file, text);
    this.written = { file, text };
    process.once('exit', this.onExit);
  }

  remove(): void {
    const w = this.written;
    if (!w) return;
    this.written = undefined;
    process.off('exit', this.onExit);
    try {
      if (readFileSync(w.file, 'utf8') === w.text) rmSync(w.file, { force: true });
    } catch {
      // already gone, or unreadable: nothing of ours to remove
    }
  }
}

function announce(ready: Ready, opts: EmulateOptions, envFile: EnvFile): void {
  const lines = exportLines(ready.env);
  if (opts.envFile) envFile.write(path.resolve(opts.envFile), lines);
  if (opts.json) {
    printJson({ ready: true, ...ready, envFile: opts.envFile ? path.resolve(opts.envFile) : null, pid: process.pid });
    return;
  }
  const out: string[] = [];
  if (ready.resources)
    out.push(`# resources: ${ready.resources.map((r) => `${r.kind} ${r.name} (${r.state})`).join(', ')}`);
  else out.push('# resources: not created (--no-init); run `eve-world-aws init` with the lines below');
  out.push(...lines);
  const { dynamodb, sqs, s3, kms, secretsManager, scheduler } = ready.endpoints;
  const ours = [
    kms ? `KMS ${kms}` : '',
    secretsManager ? `Secrets Manager ${secretsManager}` : '',
    scheduler ? `Scheduler ${scheduler}` : '',
  ].filter(Boolean);
  out.push(
    `# eve-world-aws emulate ready (${ready.mode}): DynamoDB ${dynamodb}, SQS ${sqs}, S3 ${s3}` +
      `${ours.map((e) => `, ${e}`).join('')}; ${ready.storage}. Paste the export lines into another shell. Ctrl-C stops it.`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

async function runEmbedded(opts: EmulateOptions, shutdown: Shutdown, envFile: EnvFile): Promise<void> {
  const stack = await withProgress('Starting DynamoDB Local and fauxqs...', () =>
    startStack({
      dynamodbPort: opts.dynamodbPort,
      awsPort: opts.port,
      dataDir: opts.dataDir,
      portFlags: { dynamodb: '--dynamodb-port', aws: '--port' },
      javaCommand: javaCommand(),
    }),
  );
  shutdown.duringStartup = false;
  try {
    if (shutdown.requested) return;
    // A JVM that dies on its own is a failure; one that dies because Ctrl-C reached the whole
    // process group is not, so give our own signal handler a moment to run first.
    const crashed = stack.dynamodbExited.then(async (code) => {
      await sleep(300);
      if (!shutdown.requested) throw new EmulatorError(`DynamoDB Local exited unexpectedly (exit code ${code}).`);
    });
    crashed.catch(() => {}); // observed below; avoid an unhandled rejection before that
    const env = { ...stack.env, ...worldVars(process.env) };
    const resources = await Promise.race([initResources(env, opts.init), crashed.then(() => null)]);
    if (shutdown.requested) return;
    announce(
      {
        mode: 'embedded',
        endpoints: {
          dynamodb: stack.dynamodbEndpoint,
          sqs: stack.sqsEndpoint,
          s3: stack.s3Endpoint,
          kms: stack.kmsEndpoint,
          secretsManager: stack.secretsManagerEndpoint,
          scheduler: stack.schedulerEndpoint,
        },
        env,
        resources,
        storage: opts.dataDir
          ? `DynamoDB data in ${path.resolve(opts.dataDir)}, queues and bucket in memory (re-created at start)`
          : 'everything in memory',
        dynamodbPid: stack.dynamodbPid,
      },
      opts,
      envFile,
    );
    await Promise.race([shutdown.waitForStop(), crashed]);
  } finally {
    envFile.remove();
    await stack.stop();
  }
}

// ---------- --docker ----------

async function runDocker(opts: EmulateOptions, shutdown: Shutdown, envFile: EnvFile): Promise<void> {
  if (opts.dataDir)
    throw new CliError(
      '--data-dir is not supported with --docker: the Docker stack keeps its data in memory.',
      EXIT_USAGE,
    );
  // Docker first: without an engine the ports do not matter.
  const compose = dockerCompose();
  const dynamodbPort = opts.dynamodbPort || (await freePort());
  const sqsPort = opts.port || (await freePort());
  const s3Port = opts.s3Port || (opts.s3Port === undefined && opts.port ? opts.port + 1 : await freePort());
  await assertPortFree(dynamodbPort, 'DynamoDB Local', '--dynamodb-port');
  await assertPortFree(sqsPort, 'SQS (ElasticMQ)', '--port');
  await assertPortFree(s3Port, 'S3 (MinIO)', '--s3-port');
  const stack = composeStack({ dynamodb: dynamodbPort, sqs: sqsPort, s3: s3Port }, compose);
  shutdown.duringStartup = false; // from here on, stopping means `compose down`
  try {
    const { endpoints, env: stackEnv } = await stack.up();
    if (shutdown.requested) return;
    const env = { ...stackEnv, ...worldVars(process.env) };
    // MinIO checks signatures, so the in-process clients must sign with the same credentials.
    // The CLI's one write to process.env (docs/cli.md, `emulate --docker`, says why; a World's
    // only one is applyCoreDefaults; test/unit/config.test.ts allows these two by file).
    Object.assign(process.env, DOCKER_CREDENTIALS);
    const resources = await initResources(env, opts.init);
    if (shutdown.requested) return;
    announce({ mode: 'docker', endpoints, env, resources, storage: 'everything in memory' }, opts, envFile);
    await shutdown.waitForStop();
  } finally {
    envFile.remove();
    await stack.down();
  }
}

async function runEmulate(opts: EmulateOptions): Promise<void> {
  if (opts.envFile !== undefined && opts.envOut === undefined)
    process.stderr.write('note: --env-file is now --env-out (the same option; Node 20 rejects --env-file)\n');
  opts.envFile = opts.envOut ?? opts.envFile;
  if (!opts.docker) requirePeers('emulate', EMULATOR_PEERS);
  // Validate the env-derived names before starting anything (ConfigError -> exit 2).
  loadConfig(process.env);
  const shutdown = new Shutdown();
  const envFile = new EnvFile();
  shutdown.install();
  try {
    if (opts.docker) await runDocker(opts, shutdown, envFile);
    else await runEmbedded(opts, shutdown, envFile);
  } finally {
    envFile.remove();
    shutdown.uninstall();
  }
}

const EMULATE_HELP: HelpSpec = {
  notes: [
    'Everything listens on 127.0.0.1. The embedded stack needs Java 17 (DynamoDB Local; EVE_WORLD_AWS_JAVA overrides the java binary); fauxqs keeps queues and the bucket in memory, so they are re-created at every start (--data-dir keeps DynamoDB and the KMS keys). It also serves KMS, Secrets Manager, EventBridge Scheduler and Lambda Invoke endpoints (free ports, in memory).',
    'Resource names come from EVE_WORLD_AWS_PREFIX etc., as for the World; the EVE_WORLD_AWS_* variables you set are repeated in the export lines. Ctrl-C (SIGINT) or SIGTERM stops every child, removes the --env-out file (its ports are gone) and exits 0.',
  ],
  examples: [
    ['eve-world-aws emulate', 'DynamoDB :8000, SQS + S3 :4566'],
    ['eve-world-aws emulate --env-out .emulate/env --data-dir .emulate/dynamodb'],
    ['source .emulate/env', 'in another shell'],
    ['eve-world-aws emulate --docker', 'DynamoDB :8000, SQS :4566, S3 :4567'],
  ],
  exitCodes: exitCodes(
    'stopped by Ctrl-C or SIGTERM',
    'the stack failed to start (a port in use, no Java, no Docker engine)',
  ),
};

export function emulateCommand(): Command {
  return (
    withHelp(new Command('emulate'), EMULATE_HELP)
      .description(
        'Run a local AWS stack in the foreground (embedded: DynamoDB Local + fauxqs, no Docker) and create the resources',
      )
      .option('--port <n>', 'SQS + S3 port (fauxqs); with --docker the ElasticMQ SQS port', parsePort, DEFAULT_AWS_PORT)
      .option('--dynamodb-port <n>', 'DynamoDB Local port', parsePort, DEFAULT_DYNAMODB_PORT)
      .option(
        '--s3-port <n>',
        `with --docker: MinIO S3 port (default: --port + 1 = ${DEFAULT_DOCKER_S3_PORT})`,
        parsePort,
      )
      .option('--data-dir <dir>', 'keep DynamoDB data in DIR across restarts (default: in memory)')
      .option('--no-init', 'do not create the table, queues and bucket')
      .option(
        '--env-out <path>',
        'also write the export lines to PATH (for `source PATH` or `node --env-file=PATH`); removed when emulate stops',
      )
      // 0.1.0's name for --env-out, kept working but not shown: Node 20's launcher scans the whole
      // command line for `--env-file` and exits 9 when that file does not exist yet, before this
      // program runs, so one name that works everywhere is the one to teach.
      .addOption(new Option('--env-file <path>').hideHelp())
      .option('--docker', 'run docker-compose.yml (DynamoDB Local, ElasticMQ, MinIO) instead of the embedded stack')
      .option('--json', 'print one JSON object (endpoints, env, resources) instead of export lines')
      .action(runEmulate)
  );
}
