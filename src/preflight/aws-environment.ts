/**
 * The three mistakes of a process's environment that keep every AWS call from being made at all,
 * each turned into ONE error that names what is wrong and the fix ({@link AwsEnvironmentError}):
 *
 * - `unreachable`: nothing answers at an endpoint (the emulator is stopped, a wrong port, no DNS
 *   name for a misspelt region, no route). The SDK retries a refused connection 8 times
 *   (src/aws/clients.ts) with jittered exponential backoff from 50 ms (6.35 s of backoff at most),
 *   and the preflight's three probes run in parallel, so this error arrives 3 to 5 s after the
 *   first call (measured: 3.5 to 5.4 s for `world.start()` in a fresh process, at a load average of
 *   6 on 2 cores); an endpoint that drops packets instead of refusing costs 8 connect timeouts (3 s
 *   each, `tuning.connectTimeoutMs`) plus the same backoff, about 30 s.
 * - `region`: no region anywhere (the environment was not loaded): the SDK's `Region is missing`.
 * - `credentials`: the SDK's provider chain found none (against AWS; an emulator's loopback
 *   endpoint always gets placeholder credentials).
 *
 * The preflight (src/preflight/resources.ts) raises it, so `world.start()` and a process's first
 * write or send (core's `start()` in a script that never calls `world.start()`) fail with it; the
 * CLI prints the same text (src/cli/shared/world.ts, `explainAwsError`) and `doctor` its parts, so
 * each fact lives here. Recognition of the SDK's errors stays in src/aws/sdk-errors.ts.
 *
 * Invariant: it is a plain Error, never a `WorkflowWorldError`: core treats a transport-coded world
 * error from `events.create` as retryable and would report a run as started that nothing was ever
 * written for; with this error core's `start()` throws it as it is.
 */
import { isCredentialsMissing, isRegionMissing, unreachableCode } from '../aws/sdk-errors.js';
import type { Endpoints, WorldConfig } from '../config/index.js';

export type AwsEnvironmentProblem = 'unreachable' | 'region' | 'credentials';

/** A service of the World, by its key in `config.endpoints`. */
export type AwsService = keyof Endpoints;

const SERVICE_NAMES: Record<AwsService, string> = {
  dynamodb: 'DynamoDB',
  sqs: 'SQS',
  s3: 'S3',
  scheduler: 'EventBridge Scheduler',
  kms: 'KMS',
  secretsManager: 'Secrets Manager',
  lambda: 'Lambda',
};

/** One failed call: the service it went to (when known) and what the SDK threw. */
export interface AwsFailure {
  readonly service?: AwsService;
  readonly error: unknown;
}

/** The fix when nothing answers at a configured (emulator) endpoint. */
export const EMULATOR_FIX =
  'Is the emulator running? Start it with `eve-world-aws emulate` and load the environment it prints ' +
  '(`--env-out .emulate/env`, then `node --env-file=.emulate/env ...`), or fix AWS_ENDPOINT_URL_*.';

export const REGION_FIX =
  'Set AWS_REGION (e.g. AWS_REGION=us-east-1) or a profile region (AWS_PROFILE), ' +
  'or load the environment `eve-world-aws emulate` prints.';

export const CREDENTIALS_FIX =
  'Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an IAM role is available; ' +
  'for the local emulator, load the environment `eve-world-aws emulate` prints (AWS_ENDPOINT_URL_*).';

/**
 * The environment keeps this process from reaching AWS: an endpoint does not answer, no region is
 * configured, or no credentials are found. `message` is what is wrong and the fix; `details` and
 * `fix` are the two halves (doctor prints them apart); `cause` is the SDK's error.
 */
export class AwsEnvironmentError extends Error {
  override name = 'AwsEnvironmentError';
  // Private, so an uncaught error prints the message once, not its two halves again.
  readonly #details: string;
  readonly #fix: string;
  constructor(
    readonly problem: AwsEnvironmentProblem,
    details: string,
    fix: string,
    options?: { cause?: unknown },
  ) {
    super(`eve-world-aws: ${details}. ${fix}`, options);
    this.#details = details;
    this.#fix = fix;
  }

  /** What is wrong, one clause (no trailing period). */
  get details(): string {
    return this.#details;
  }

  /** What to do, one or two sentences. */
  get fix(): string {
    return this.#fix;
  }

  /**
   * The error for these failed calls when one of them is such a mistake, else undefined. A
   * missing region wins over missing credentials, which win over an unreachable endpoint (every
   * endpoint that did not answer is named). `region` is the region asked, when known.
   */
  static of(config: WorldConfig, failures: readonly AwsFailure[], region?: string): AwsEnvironmentError | undefined {
    const named = failures.find((f) => f.error instanceof AwsEnvironmentError);
    if (named) return named.error as AwsEnvironmentError;
    const regionless = failures.find((f) => isRegionMissing(f.error));
    if (regionless) return new AwsEnvironmentError('region', 'no AWS region configured', REGION_FIX, cause(regionless));
    const anonymous = failures.find((f) => isCredentialsMissing(f.error));
    if (anonymous)
      return new AwsEnvironmentError(
        'credentials',
        `no AWS credentials found (${(anonymous.error as Error).message})`,
        CREDENTIALS_FIX,
        cause(anonymous),
      );
    const unreachable = failures.filter((f) => unreachableCode(f.error) !== undefined);
    return unreachable.length === 0 ? undefined : unreachableError(config, unreachable, region);
  }
}

const cause = (f: AwsFailure) => ({ cause: f.error });

/** `ECONNREFUSED after 8 attempts`: the socket code and how often the SDK tried. */
function howItFailed(err: unknown): string {
  const attempts = (err as { $metadata?: { attempts?: number } })?.$metadata?.attempts;
  return `${unreachableCode(err)}${attempts && attempts > 1 ? ` after ${attempts} attempts` : ''}`;
}

/** Where the socket error says it tried to connect (`127.0.0.1:4566`), when it says. */
function socketAddress(err: unknown): string | undefined {
  const e = err as { address?: unknown; port?: unknown; errors?: { address?: unknown; port?: unknown }[] } | undefined;
  const at = e?.address !== undefined ? e : e?.errors?.[0];
  return typeof at?.address === 'string' && typeof at.port === 'number' ? `${at.address}:${at.port}` : undefined;
}

const hostPort = (url: string): string => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
};

function unreachableError(
  config: WorldConfig,
  failures: readonly AwsFailure[],
  region: string | undefined,
): AwsEnvironmentError {
  const first = failures[0];
  // The configured endpoints that did not answer, each once with the services asked there (fauxqs
  // serves SQS and S3). A failure of unknown service (a storage read) is placed by the address its
  // socket tried, else it could be any configured endpoint.
  const configured = [...new Set(Object.values(config.endpoints).filter((u): u is string => !!u))];
  const byUrl = new Map<string, Set<string>>();
  const add = (url: string, service?: AwsService) => {
    const names = byUrl.get(url) ?? new Set<string>();
    if (service) names.add(SERVICE_NAMES[service]);
    byUrl.set(url, names);
  };
  for (const f of failures) {
    if (f.service) {
      const url = config.endpoints[f.service];
      if (url) add(url, f.service);
      continue;
    }
    const at = socketAddress(f.error);
    const urls = configured.filter((u) => hostPort(u) === at);
    for (const url of urls.length > 0 ? urls : configured) add(url);
  }
  if (byUrl.size > 0) {
    const where = [...byUrl].map(([url, names]) => (names.size > 0 ? `${url} (${[...names].join(', ')})` : url));
    return new AwsEnvironmentError(
      'unreachable',
      `cannot reach the AWS endpoint ${where.join(' and ')}: ${howItFailed(first.error)}`,
      EMULATOR_FIX,
      cause(first),
    );
  }
  // AWS's own endpoints.
  const inRegion = region ?? config.region ?? 'the default region';
  const names = [...new Set(failures.flatMap((f) => (f.service ? [SERVICE_NAMES[f.service]] : [])))].join(', ');
  if (unreachableCode(first.error) === 'ENOTFOUND')
    // No DNS name for the region's endpoint: far more often a misspelt region than a DNS outage.
    return new AwsEnvironmentError(
      'unreachable',
      `no ${names || 'AWS'} endpoint found for region ${inRegion} (${howItFailed(first.error)})`,
      `Check AWS_REGION (${inRegion}): is it a region name such as us-east-1? If it is, check the network's DNS.`,
      cause(first),
    );
  return new AwsEnvironmentError(
    'unreachable',
    `cannot reach AWS${names ? ` (${names})` : ''} in ${inRegion}: ${howItFailed(first.error)}`,
    'Check the network (a proxy, or a VPC without a NAT gateway or VPC endpoints) and AWS_REGION.',
    cause(first),
  );
}

/**
 * `api` (a namespace of the World's storage: runs, steps, events, hooks) with the same methods,
 * whose failures of the three kinds above are {@link AwsEnvironmentError}s: a process's first call
 * may be a read (a script's `resumeHook()` looks its token up, `getRun()`), which the preflight
 * never sees. Every other error passes as it is; core treats both alike (neither is a world error
 * it retries).
 */
export function explainEnvironmentErrors<T extends object>(config: WorldConfig, api: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(api)) {
    out[key] =
      typeof value === 'function'
        ? async (...args: unknown[]) => {
            try {
              return await value.apply(api, args);
            } catch (err) {
              throw AwsEnvironmentError.of(config, [{ error: err }]) ?? err;
            }
          }
        : value;
  }
  return out as T;
}
