/**
 * `@portfolio/eve-world-aws`: a Workflow DevKit World on DynamoDB + SQS + S3.
 *
 * `createWorld()` is the only public door. Under eve (and `wf --backend`) it is called with no
 * arguments, so everything comes from the environment (see src/config.ts and the README table);
 * tests and embedders may pass an explicit config and clients instead.
 *
 * The World is composed flat, as the runtime expects: `Storage` (runs/steps/events/hooks, the
 * event log on one DynamoDB table), `Queue` (one standard SQS queue + DLQ, durable idempotency,
 * long waits) and `Streamer` (chunk items with polling and an in-process fast path).
 *
 * Why `start()` does not re-enqueue every active run (as world-local does): SQS is durable, so a
 * restart loses no delivery, and a Lambda cold start that scanned every active run would cost a
 * table scan per container. Runs stranded by something outside the World (a deleted message, a
 * purged queue) are found and resumed by `eve-world-aws redrive --stranded`.
 */
import { SPEC_VERSION_CURRENT, type World } from '@workflow/world';
import type { AwsClients } from './aws/clients.js';
import { destroyClients } from './aws/clients.js';
import { getConfig, type WorldConfig } from './config.js';
import { createContext, type WorldContext } from './context.js';
import { createQueue } from './queue/index.js';
import { createStorage, storageCapabilities } from './storage/index.js';
import { createStreamer } from './streams/index.js';

export { ConfigError, ENV_DOCS, loadConfig, type WorldConfig } from './config.js';

type FlowHandler = (req: Request) => Promise<Response>;

export interface AwsWorld extends World {
  /**
   * Hand deliveries for queue names starting with `prefix` to `handler` in this process (the flow
   * route's `POST`), instead of POSTing them to the flow URL. Same shape as world-local's.
   */
  registerHandler(prefix: string, handler: FlowHandler): void;
  start(): Promise<void>;
  close(): Promise<void>;
  /** The context the World was built from (config, clients, payload store). */
  readonly context: WorldContext;
}

export interface CreateWorldOptions {
  /** Explicit config; defaults to the environment (validated once per process). */
  config?: WorldConfig;
  /** Explicit clients (e.g. with fault-injection middleware); the World then does not destroy them. */
  clients?: AwsClients;
}

export function createWorld(options: CreateWorldOptions = {}): AwsWorld {
  const config = options.config ?? getConfig();
  const ownsClients = options.clients === undefined;
  const context = createContext(config, options.clients);
  const storage = createStorage(context);
  const queue = createQueue(context);
  const streamer = createStreamer(context);
  let closed: Promise<void> | undefined;

  return {
    specVersion: SPEC_VERSION_CURRENT,
    capabilities: { ...storageCapabilities },
    context,
    // Storage
    runs: storage.runs,
    steps: storage.steps,
    events: storage.events,
    hooks: storage.hooks,
    // Queue
    getDeploymentId: () => queue.getDeploymentId(),
    queue: (name, payload, opts) => queue.queue(name, payload, opts),
    createQueueHandler: (prefix, handler) => queue.createQueueHandler(prefix, handler),
    registerHandler: (prefix, handler) => queue.registerHandler(prefix, handler),
    // Streams
    streams: streamer.streams,
    streamFlushIntervalMs: streamer.streamFlushIntervalMs,
    async start() {
      await queue.start();
    },
    close() {
      closed ??= (async () => {
        await queue.close();
        await streamer.close?.();
        if (ownsClients) destroyClients(context.clients);
      })();
      return closed;
    },
  } as AwsWorld;
}

export default createWorld;
