/**
 * `eve-world-aws emulate`: a local AWS stack in the foreground.
 *
 * Embedded (default, no Docker): DynamoDB Local (java child) + fauxqs (SQS + S3, in this process)
 * via src/emulator/stack.ts. `--docker`: docker-compose.yml (DynamoDB Local, ElasticMQ, MinIO).
 * Either way it creates the resources like `init`, prints the env a shell needs, and on
 * SIGINT/SIGTERM/SIGHUP stops everything it started and exits 0.
 *
 * Child-process safety: the stack registers a synchronous process-exit hook that SIGKILLs the
 * java child, so even the "second Ctrl-C" path (immediate exit) and a signal during start-up
 * leave no JVM behind.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { loadConfig } from '../config.js';
import {
  assertPortFree,
  DEFAULT_AWS_PORT,
  DEFAULT_DYNAMODB_PORT,
  EmulatorError,
  freePort,
  type Stack,
  startStack,
} from '../emulator/stack.js';
import { hasProblems, type ResourceReport } from '../resources.js';
import { renderReports, runReconcile } from './init.js';
import { CliError, EXIT_FAILURE, EXIT_USAGE, exportLines, printJson, progress } from './output.js';

export const DEFAULT_DOCKER_S3_PORT = 4567;
/** Docker Compose project name: fixed, so `down` always finds what `up` started. */
export const COMPOSE_PROJECT = 'eve-world-aws';
/** MinIO needs real-looking credentials (secret >= 8 chars); the other emulators accept any. */
const DOCKER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'eveworldlocal', AWS_SECRET_ACCESS_KEY: 'eveworldlocal' };

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
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('must be a port number 0-65535 (0 = any free port).');
  return Number(v);
}

/** The repository / package root (this file is at <root>/{src,dist}/cli/emulate.*). */
function packageRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
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
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('EVE_WORLD_AWS_') && k !== 'EVE_WORLD_AWS_JAVA' && v !== undefined && v !== '') out[k] = v;
  }
  return out;
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
    if (this.requested) {
      process.exit(0);
    }
    this.requested = true;
    if (process.stderr.isTTY) process.stderr.write(`\n${sig}: stopping the emulators...\n`);
    if (this.wake) this.wake();
    else if (this.duringStartup) process.exit(0); // nothing to stop gracefully yet; exit hook cleans up
  };
  duringStartup = true;

  install(): void {
    for (const s of this.signals) process.on(s, this.onSignal);
  }

  uninstall(): void {
    for (const s of this.signals) process.off(s, this.onSignal);
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
  endpoints: { dynamodb: string; sqs: string; s3: string; kms?: string };
  env: Record<string, string>;
  resources: ResourceReport[] | null;
  storage: string;
  dynamodbPid?: number;
}

async function initResources(env: Record<string, string>, enabled: boolean): Promise<ResourceReport[] | null> {
  if (!enabled) return null;
  const config = loadConfig({ ...process.env, ...env });
  // createClients reads credentials from process.env when they are set there.
  const reports = await runReconcile(config, 'apply');
  if (hasProblems(reports)) {
    process.stderr.write(renderReports(reports, 'apply'));
    throw new CliError('The emulator holds resources that do not match what eve-world-aws needs (see the fix above).', EXIT_FAILURE);
  }
  return reports;
}

function announce(ready: Ready, opts: EmulateOptions): void {
  const lines = exportLines(ready.env);
  if (opts.envFile) {
    const file = path.resolve(opts.envFile);
    mkdirSync(path.dirname(file), { recursive: true });
    // `export K=V` works for `source FILE` and for `node --env-file=FILE`.
    writeFileSync(file, `# written by eve-world-aws emulate (pid ${process.pid})\n${lines.join('\n')}\n`);
  }
  if (opts.json) {
    printJson({ ready: true, ...ready, envFile: opts.envFile ? path.resolve(opts.envFile) : null, pid: process.pid });
    return;
  }
  const out: string[] = [];
  if (ready.resources) out.push(`# resources: ${ready.resources.map((r) => `${r.kind} ${r.name} (${r.state})`).join(', ')}`);
  else out.push('# resources: not created (--no-init); run `eve-world-aws init` with the lines below');
  out.push(...lines);
  out.push(
    `# eve-world-aws emulate ready (${ready.mode}): DynamoDB ${ready.endpoints.dynamodb}, SQS ${ready.endpoints.sqs}, ` +
      `S3 ${ready.endpoints.s3}; ${ready.storage}. Paste the export lines into another shell. Ctrl-C stops it.`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

async function runEmbedded(opts: EmulateOptions, shutdown: Shutdown): Promise<void> {
  const spin = progress('Starting DynamoDB Local and fauxqs...');
  let stack: Stack;
  try {
    stack = await startStack({
      dynamodbPort: opts.dynamodbPort,
      awsPort: opts.port,
      dataDir: opts.dataDir,
      portFlags: { dynamodb: '--dynamodb-port', aws: '--port' },
      javaCommand: javaCommand(),
    });
  } finally {
    spin.done();
  }
  shutdown.duringStartup = false;
  try {
    if (shutdown.requested) return;
    // A JVM that dies on its own is a failure; one that dies because Ctrl-C reached the whole
    // process group is not, so give our own signal handler a moment to run first.
    const crashed = stack.dynamodbExited.then(async (code) => {
      await new Promise((r) => setTimeout(r, 300));
      if (!shutdown.requested) throw new EmulatorError(`DynamoDB Local exited unexpectedly (exit code ${code}).`);
    });
    crashed.catch(() => {}); // observed below; avoid an unhandled rejection before that
    const env = { ...stack.env, ...worldVars(process.env) };
    const resources = await Promise.race([initResources(env, opts.init), crashed.then(() => null)]);
    if (shutdown.requested) return;
    announce(
      {
        mode: 'embedded',
        endpoints: { dynamodb: stack.dynamodbEndpoint, sqs: stack.sqsEndpoint, s3: stack.s3Endpoint, kms: stack.kmsEndpoint },
        env,
        resources,
        storage: opts.dataDir
          ? `DynamoDB data in ${path.resolve(opts.dataDir)}, queues and bucket in memory (re-created at start)`
          : 'everything in memory',
        dynamodbPid: stack.dynamodbPid,
      },
      opts,
    );
    await Promise.race([shutdown.waitForStop(), crashed]);
  } finally {
    await stack.stop();
  }
}

// ---------- --docker ----------

const NO_ENGINE_HINT = 'Start Docker, or run `eve-world-aws emulate` without --docker for the embedded stack (it needs only Java 17).';

/** Fails with a clear message unless a Docker engine answers. */
export function checkDocker(env: NodeJS.ProcessEnv = process.env): void {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 15_000, env });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new EmulatorError(`No Docker engine answered: the \`docker\` command is not installed. ${NO_ENGINE_HINT}`);
  }
  if (r.error || r.status !== 0) {
    const why = (r.stderr || r.error?.message || '').trim().split('\n').pop() ?? '';
    throw new EmulatorError(`No Docker engine answered (\`docker info\` failed${why ? `: ${why}` : ''}). ${NO_ENGINE_HINT}`);
  }
}

/** `docker compose` (plugin) or the older standalone `docker-compose`. */
function composeCommand(): string[] {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0) return ['docker-compose'];
  throw new EmulatorError(`Docker is running but Docker Compose is not installed (neither \`docker compose\` nor \`docker-compose\`). ${NO_ENGINE_HINT}`);
}

function runCompose(cmd: string[], args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    // Compose's own progress goes to our stderr; stdout stays for the env lines.
    const child = spawn(cmd[0], [...cmd.slice(1), ...args], { stdio: ['ignore', 2, 2], env });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

async function runDocker(opts: EmulateOptions, shutdown: Shutdown): Promise<void> {
  if (opts.dataDir) throw new CliError('--data-dir is not supported with --docker: the Docker stack keeps its data in memory.', EXIT_USAGE);
  checkDocker();
  const compose = composeCommand();
  const file = path.join(packageRoot(), 'docker-compose.yml');
  const dynamodbPort = opts.dynamodbPort || (await freePort());
  const sqsPort = opts.port || (await freePort());
  const s3Port = opts.s3Port || (opts.s3Port === undefined && opts.port ? opts.port + 1 : await freePort());
  await assertPortFree(dynamodbPort, 'DynamoDB Local', '--dynamodb-port');
  await assertPortFree(sqsPort, 'SQS (ElasticMQ)', '--port');
  await assertPortFree(s3Port, 'S3 (MinIO)', '--s3-port');
  const composeEnv = {
    ...process.env,
    EVE_EMULATE_DYNAMODB_PORT: String(dynamodbPort),
    EVE_EMULATE_SQS_PORT: String(sqsPort),
    EVE_EMULATE_S3_PORT: String(s3Port),
    EVE_EMULATE_S3_USER: DOCKER_CREDENTIALS.AWS_ACCESS_KEY_ID,
    EVE_EMULATE_S3_PASSWORD: DOCKER_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
  };
  const base = ['-f', file, '-p', COMPOSE_PROJECT];
  const down = () => runCompose(compose, [...base, 'down', '--volumes', '--remove-orphans'], composeEnv).catch(() => 1);
  shutdown.duringStartup = false; // from here on, stopping means `compose down`
  try {
    if ((await runCompose(compose, [...base, 'up', '--detach', '--wait'], composeEnv)) !== 0) {
      throw new EmulatorError('`docker compose up` failed (see its output above).');
    }
    if (shutdown.requested) return;
    const endpoints = {
      dynamodb: `http://127.0.0.1:${dynamodbPort}`,
      sqs: `http://127.0.0.1:${sqsPort}`,
      s3: `http://127.0.0.1:${s3Port}`,
    };
    const env = {
      AWS_REGION: 'us-east-1',
      ...DOCKER_CREDENTIALS,
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      AWS_ENDPOINT_URL_SQS: endpoints.sqs,
      AWS_ENDPOINT_URL_S3: endpoints.s3,
      ...worldVars(process.env),
    };
    // MinIO checks signatures, so the in-process clients must sign with the same credentials.
    Object.assign(process.env, DOCKER_CREDENTIALS);
    const resources = await initResources(env, opts.init);
    if (shutdown.requested) return;
    announce({ mode: 'docker', endpoints, env, resources, storage: 'everything in memory' }, opts);
    await shutdown.waitForStop();
  } finally {
    await down();
  }
}

export async function runEmulate(opts: EmulateOptions): Promise<void> {
  opts.envFile ??= opts.envOut;
  // Validate the env-derived names before starting anything (ConfigError -> exit 2).
  loadConfig(process.env);
  const shutdown = new Shutdown();
  shutdown.install();
  try {
    if (opts.docker) await runDocker(opts, shutdown);
    else await runEmbedded(opts, shutdown);
  } finally {
    shutdown.uninstall();
  }
}

export function emulateCommand(): Command {
  return new Command('emulate')
    .description('Run a local AWS stack in the foreground (embedded: DynamoDB Local + fauxqs, no Docker) and create the resources')
    .option('--port <n>', 'SQS + S3 port (fauxqs); with --docker the ElasticMQ SQS port', parsePort, DEFAULT_AWS_PORT)
    .option('--dynamodb-port <n>', 'DynamoDB Local port', parsePort, DEFAULT_DYNAMODB_PORT)
    .option('--s3-port <n>', `with --docker: MinIO S3 port (default: --port + 1 = ${DEFAULT_DOCKER_S3_PORT})`, parsePort)
    .option('--data-dir <dir>', 'keep DynamoDB data in DIR across restarts (default: in memory)')
    .option('--no-init', 'do not create the table, queues and bucket')
    .option('--env-file <path>', 'also write the export lines to PATH (usable with `source` and `node --env-file`)')
    // Node 20's launcher scans the whole command line for `--env-file` and exits 9 when that file
    // does not exist yet, before this program runs; `--env-out` is the same flag without the clash.
    .option('--env-out <path>', 'same as --env-file (use it on Node 20, which rejects --env-file PATH when PATH does not exist yet)')
    .option('--docker', 'run docker-compose.yml (DynamoDB Local, ElasticMQ, MinIO) instead of the embedded stack')
    .option('--json', 'print one JSON object (endpoints, env, resources) instead of export lines')
    .addHelpText(
      'after',
      `
Everything listens on 127.0.0.1. The embedded stack needs Java 17 (DynamoDB Local); fauxqs keeps
queues and the bucket in memory only, so they are re-created at every start (--data-dir persists
DynamoDB only). EVE_WORLD_AWS_JAVA overrides the java binary (default: $JAVA_HOME/bin/java, java).

Resource names come from EVE_WORLD_AWS_PREFIX etc., as for the World; the EVE_WORLD_AWS_* variables
you set are repeated in the export lines. Ctrl-C (SIGINT) or SIGTERM stops every child and exits 0.

Examples:
  eve-world-aws emulate                      # DynamoDB :8000, SQS + S3 :4566
  eve-world-aws emulate --env-file .emulate/env --data-dir .emulate/dynamodb
  eve-world-aws emulate --docker             # DynamoDB :8000, SQS :4566, S3 :4567`,
    )
    .action(async (opts: EmulateOptions) => {
      await runEmulate(opts);
    });
}
