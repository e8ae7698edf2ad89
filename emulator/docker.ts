/**
 * The Docker variant of the local AWS emulator: docker-compose.yml (DynamoDB Local, ElasticMQ with
 * emulator/elasticmq.conf, MinIO) at the package root, run with `docker compose` (or the older
 * `docker-compose`). The embedded variant is ./stack.ts.
 *
 * Invariants:
 * - A missing engine or Compose fails before anything starts, with a message that points to the
 *   embedded stack.
 * - The Compose project name is fixed, so `down()` always removes what `up` started; `down()`
 *   never throws.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { packageRoot } from '../src/util/package-root.js';
import { EmulatorError } from './stack.js';

export const DEFAULT_DOCKER_S3_PORT = 4567;
/** Docker Compose project name: fixed, so `down` always finds what `up` started. */
const COMPOSE_PROJECT = 'eve-world-aws';
/** MinIO needs real-looking credentials (secret >= 8 chars); the other emulators accept any. */
export const DOCKER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'eveworldlocal', AWS_SECRET_ACCESS_KEY: 'eveworldlocal' };

const NO_ENGINE_HINT =
  'Start Docker, or run `eve-world-aws emulate` without --docker for the embedded stack (it needs only Java 17).';

/** docker-compose.yml at the package root. */
function composeFile(): string {
  return path.join(packageRoot(), 'docker-compose.yml');
}

/** Fails with a clear message unless a Docker engine answers. */
function checkDocker(env: NodeJS.ProcessEnv = process.env): void {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 15_000, env });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new EmulatorError(`No Docker engine answered: the \`docker\` command is not installed. ${NO_ENGINE_HINT}`);
  }
  if (r.error || r.status !== 0) {
    const why = (r.stderr || r.error?.message || '').trim().split('\n').pop() ?? '';
    throw new EmulatorError(
      `No Docker engine answered (\`docker info\` failed${why ? `: ${why}` : ''}). ${NO_ENGINE_HINT}`,
    );
  }
}

/** `docker compose` (plugin) or the older standalone `docker-compose`. */
function composeCommand(): string[] {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0) return ['docker-compose'];
  throw new EmulatorError(
    `Docker is running but Docker Compose is not installed (neither \`docker compose\` nor \`docker-compose\`). ${NO_ENGINE_HINT}`,
  );
}

function runCompose(cmd: string[], args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    // Compose's own progress goes to our stderr; stdout stays for the caller's output.
    const child = spawn(cmd[0], [...cmd.slice(1), ...args], { stdio: ['ignore', 2, 2], env });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

export interface ComposePorts {
  dynamodb: number;
  sqs: number;
  s3: number;
}

export interface ComposeStack {
  readonly endpoints: { dynamodb: string; sqs: string; s3: string };
  /** Environment a client process needs to reach this stack (region, credentials, endpoints). */
  readonly env: Record<string, string>;
}

/**
 * Checks that a Docker engine answers and Compose is installed; returns the Compose command.
 * Callers run it before anything else (port checks included), so a machine without Docker hears
 * about Docker, not about a busy port.
 */
export function dockerCompose(): string[] {
  checkDocker();
  return composeCommand();
}

/**
 * Returns `up` (starts the services and waits for their healthchecks) and `down` (removes them;
 * safe to call whether or not `up` ran or succeeded). `compose` is `dockerCompose()`'s answer.
 */
export function composeStack(
  ports: ComposePorts,
  compose: string[] = dockerCompose(),
): { up(): Promise<ComposeStack>; down(): Promise<void> } {
  const composeEnv = {
    ...process.env,
    EVE_EMULATE_DYNAMODB_PORT: String(ports.dynamodb),
    EVE_EMULATE_SQS_PORT: String(ports.sqs),
    EVE_EMULATE_S3_PORT: String(ports.s3),
    EVE_EMULATE_S3_USER: DOCKER_CREDENTIALS.AWS_ACCESS_KEY_ID,
    EVE_EMULATE_S3_PASSWORD: DOCKER_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
  };
  const base = ['-f', composeFile(), '-p', COMPOSE_PROJECT];
  return {
    async up() {
      if ((await runCompose(compose, [...base, 'up', '--detach', '--wait'], composeEnv)) !== 0) {
        throw new EmulatorError('`docker compose up` failed (see its output above).');
      }
      const endpoints = {
        dynamodb: `http://127.0.0.1:${ports.dynamodb}`,
        sqs: `http://127.0.0.1:${ports.sqs}`,
        s3: `http://127.0.0.1:${ports.s3}`,
      };
      return {
        endpoints,
        env: {
          AWS_REGION: 'us-east-1',
          ...DOCKER_CREDENTIALS,
          AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
          AWS_ENDPOINT_URL_SQS: endpoints.sqs,
          AWS_ENDPOINT_URL_S3: endpoints.s3,
        },
      };
    },
    async down() {
      await runCompose(compose, [...base, 'down', '--volumes', '--remove-orphans'], composeEnv).catch(() => 1);
    },
  };
}
