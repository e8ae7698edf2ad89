/**
 * The World for read-mostly operator commands (tail, runs, redrive): built from the environment
 * like `createWorld()` under eve, but never `start()`ed, so no consumer competes with the real ones
 * for queue messages, and as a client (`createWorld({ client })`): on a table with deployment
 * affinity it registers no deployment of its own. Beside it, the same config's own context
 * (clients, payload store) for what a command does outside the World contract (moving DLQ messages,
 * listing objects): built with the runtime's factories, never taken out of the World. Callers close
 * it when done.
 *
 * {@link withWorld} is the one seam every such command goes through: a missing table, queue or
 * bucket (or, for the commands that read it, DLQ) exits 2, a configuration error (docs/cli.md,
 * "Exit codes": the name or the region is wrong, or `init` never ran), whether the preflight finds
 * it or a later answer (a resource deleted meanwhile) does.
 */
import { WorkflowRunNotFoundError } from '@workflow/errors';
import { type AwsClients, createClients, destroyClients } from '../../aws/clients.js';
import { errorName } from '../../aws/sdk-errors.js';
import { loadConfig, type WorldConfig } from '../../config/index.js';
import { createContext, type WorldContext } from '../../context/world-context.js';
import { type AwsWorld, createWorld } from '../../index.js';
import { AwsEnvironmentError } from '../../preflight/aws-environment.js';
import { checkTableFormat, TableFormatError } from '../../preflight/format-check.js';
import { MissingResourceError, type PreflightResource, preflight } from '../../preflight/resources.js';
import { createTransport } from '../../queue/transport.js';
import { CliError, EXIT_FAILURE, EXIT_USAGE } from './output.js';

export interface CliWorld {
  world: AwsWorld;
  config: WorldConfig;
  clients: AwsClients;
  /** Config, clients and a payload store (always resolving) for work outside the World contract. */
  context: WorldContext;
  close(): Promise<void>;
}

export interface OpenWorldOptions {
  env?: NodeJS.ProcessEnv;
  /** Clients to use instead of building them from config (tests inject middleware this way). */
  clients?: AwsClients;
  /** `createWorld`'s `resolvePayloads` (src/index.ts): false keeps a preview from reading S3. */
  resolvePayloads?: boolean;
  /** The command reads the dead-letter queue: the preflight checks it too. */
  deadLetterQueue?: boolean;
  /**
   * Where this CLI World's new runs go on a table with deployment affinity (`start --deployment`):
   * an id or a chooser. The CLI is never a deployment of its own (src/deployment/membership.ts).
   */
  deployment?: string | (() => Promise<string>);
}

export function openWorld(options: OpenWorldOptions = {}): CliWorld {
  const config = loadConfig(options.env ?? process.env);
  const ownsClients = options.clients === undefined;
  const clients = options.clients ?? createClients(config);
  // A client of the app's deployments: it registers none, never heartbeats, never consumes.
  const world = createWorld({
    config,
    clients,
    resolvePayloads: options.resolvePayloads,
    client: { deployment: options.deployment },
  });
  const context = createContext(config, clients);
  let closed: Promise<void> | undefined;
  return {
    world,
    config,
    clients,
    context,
    close() {
      closed ??= (async () => {
        await world.close();
        if (ownsClients) destroyClients(clients);
      })();
      return closed;
    },
  };
}

/**
 * Run `fn` with a World once its resources are known to exist and the table's format is one this
 * build may touch (src/preflight/format-check.ts), and always close it; maps a missing resource, a
 * table format this build may not touch, unreachable endpoints and missing credentials to one line
 * (exit 2 for a missing resource or region, else 1).
 */
export async function withWorld<T>(options: OpenWorldOptions, fn: (w: CliWorld) => Promise<T>): Promise<T> {
  const w = openWorld(options);
  try {
    await preflight(w.context, createTransport(w.context), { deadLetterQueue: options.deadLetterQueue });
    await checkTableFormat(w.clients.ddb, w.config.tableName);
    return await fn(w);
  } catch (err) {
    if (err instanceof TableFormatError) throw new CliError(err.message);
    const resource = resourceOf(err);
    const missing =
      err instanceof MissingResourceError ? err : resource && (await MissingResourceError.of(w.context, resource, err));
    if (missing) throw new CliError(missing.message, EXIT_USAGE);
    throw explainAwsError(err, w.config);
  } finally {
    await w.close();
  }
}

/**
 * Which resource a "does not exist" answer is about, by the service's error name (DynamoDB's
 * ResourceNotFoundException is about the table: the World reads no other DynamoDB resource).
 */
function resourceOf(err: unknown): PreflightResource | undefined {
  const name = errorName(err);
  if (name === 'ResourceNotFoundException') return 'table';
  if (name === 'NoSuchBucket') return 'bucket';
  if (/QueueDoesNotExist|NonExistentQueue/.test(name)) return 'queue';
  return undefined;
}

/** `runs.get` with a CLI error for an unknown id (exit 1, naming the table that was searched). */
export async function getRunOrFail(w: CliWorld, runId: string) {
  try {
    return await w.world.runs.get(runId, { resolveData: 'none' });
  } catch (err) {
    if (WorkflowRunNotFoundError.is(err) || (err as { name?: string })?.name === 'WorkflowRunNotFoundError')
      throw new CliError(
        `run ${runId} not found in table ${w.config.tableName} (check the id and EVE_WORLD_AWS_PREFIX / EVE_WORLD_AWS_TABLE)`,
      );
    // An id the World rejects outright (e.g. bad characters) is also "no such run" for the user.
    const e = err as { status?: number; field?: string; message?: string };
    if (e?.status === 400 && e.field === 'runId') throw new CliError(`run ${runId} not found: ${e.message}`);
    throw err;
  }
}

/**
 * Turn the AWS errors a user can fix (nothing listening, no region, no credentials) into one line:
 * the World's own error for them (src/preflight/aws-environment.ts), so the CLI and the library say
 * the same. A missing region is configuration (exit 2).
 */
export function explainAwsError(err: unknown, config: WorldConfig): unknown {
  const env = err instanceof AwsEnvironmentError ? err : AwsEnvironmentError.of(config, [{ error: err }]);
  if (!env) return err;
  return new CliError(env.message, env.problem === 'region' ? EXIT_USAGE : EXIT_FAILURE);
}
