/**
 * `@portfolio/eve-world-aws`: a Workflow DevKit World on DynamoDB + SQS + S3.
 *
 * `createWorld()` is the only public door. Under eve (and `wf --backend`) it is called with no
 * arguments, so everything comes from the environment (see src/config.ts and the README table);
 * tests and embedders may pass an explicit config and clients instead.
 *
 * Composition, flat as the runtime expects, one hop to each part:
 * - storage   src/storage/   runs/steps/events/hooks: the event log on one DynamoDB table
 * - queue     src/queue/     send side: queue(), queueBatch(), idempotency, long delays
 * - consumer  src/consumer/  receive side: createQueueHandler, registerHandler, the poller start()s
 * - streams   src/streams    block items, one write per group, with polling and an in-process fast path
 * The object literal is checked against `AwsWorld` with `satisfies`, so a member that is missing
 * or has the wrong shape is a compile error (no cast).
 *
 * Why `start()` does not re-enqueue every active run (as world-local does): SQS is durable, so a
 * restart loses no delivery, and a Lambda cold start that scanned every active run would cost a
 * table scan per container. Runs stranded by something outside the World (a deleted message, a
 * purged queue) are found and resumed by `eve-world-aws redrive --stranded`.
 */
import { SPEC_VERSION_CURRENT, type WorkflowRun, type World } from '@workflow/world';
import { type AwsClients, destroyClients } from './aws/clients.js';
import { assertDeliveriesSigned, getConfig, type WorldConfig } from './config.js';
import { type CreateConsumerOptions, createConsumer, defaultFlowUrl } from './consumer/index.js';
import type { FlowHandler } from './consumer/pipeline.js';
import { createContext, type WorldContext } from './context.js';
import { RunKeys, type RunKeysOptions } from './encryption/run-keys.js';
import { createQueue } from './queue/index.js';
import { createStorage, storageCapabilities } from './storage/index.js';
import { createStreamer } from './streams/index.js';
import { type OrphanSweepOptions, type SweepReport, sweepOrphans } from './sweep/index.js';

export type { AwsClients } from './aws/clients.js';
export { ConfigError, ENV_DOCS, loadConfig, type WorldConfig } from './config.js';
export type { DeliveryOutcome, FlowHandler, InboundMessage } from './consumer/pipeline.js';
export type { WorldContext } from './context.js';
export type { Logger } from './log.js';
export {
  type HeldBodySweep,
  ORPHAN_GRACE_MS,
  type OrphanSweepOptions,
  type OrphanSweepReport,
  type SweepReport,
  sweepOrphans,
} from './sweep/index.js';

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
  /** Per-run KMS data keys, when EVE_WORLD_AWS_KMS_KEY_ID is set (src/encryption/run-keys.ts). */
  readonly runKeys?: RunKeys;
  /** {@link sweepOrphans} on this World's resources. */
  sweepOrphans(options?: OrphanSweepOptions): Promise<SweepReport>;
}

export interface CreateWorldOptions {
  /** Explicit config; defaults to the environment (validated once per process). */
  config?: WorldConfig;
  /** Explicit clients (e.g. with fault-injection middleware); the World then does not destroy them. */
  clients?: AwsClients;
  /** Tuning of the in-process consumer (tests, embedders). */
  consumer?: CreateConsumerOptions;
  /** Bounds of the in-process cache of unwrapped run keys (used only with a KMS key). */
  runKeys?: RunKeysOptions;
}

/**
 * Core's turbo mode (default on) forces an optimistic inline start on a run's first delivery: the
 * first step's body runs BEFORE its `step_started` commits (@workflow/core step-executor.js,
 * `optimisticStart`). Two copies of that delivery (SQS at-least-once) would both run it, and no
 * fence on `step_started` (src/storage/write/step-lease.ts) can stop a body that precedes it. Core defers
 * to an explicit `WORKFLOW_OPTIMISTIC_INLINE_START=0` (turbo stays on otherwise), so the World sets
 * that when the operator has set nothing: every body then starts after its `step_started` (cost:
 * the first step's body waits for that one write instead of overlapping it). An explicit `1`
 * keeps optimistic starts, and with them possible duplicate bodies of a run's first step.
 */
function awaitStepStarts(env: NodeJS.ProcessEnv = process.env): void {
  if (env.WORKFLOW_OPTIMISTIC_INLINE_START === undefined || env.WORKFLOW_OPTIMISTIC_INLINE_START === '')
    env.WORKFLOW_OPTIMISTIC_INLINE_START = '0';
}

export function createWorld(options: CreateWorldOptions = {}): AwsWorld {
  const config = options.config ?? getConfig();
  awaitStepStarts();
  // Closed by default, before any client exists: unsigned deliveries only to this machine.
  assertDeliveriesSigned(config, defaultFlowUrl(config.flowUrl));
  const ownsClients = options.clients === undefined;
  const context = createContext(config, options.clients);
  const storage = createStorage(context);
  const queue = createQueue(context, { logger: options.consumer?.logger, logTail: storage.logTail });
  const consumer = createConsumer(context, queue.transport, options.consumer);
  const streamer = createStreamer(context);
  // Without a KMS key the World has no getEncryptionKeyForRun at all, so core stores plaintext
  // exactly as before; with one, core encrypts every payload under a per-run data key.
  const runKeys = config.kmsKeyId ? new RunKeys(context, config.kmsKeyId, options.runKeys) : undefined;
  let closed: Promise<void> | undefined;

  const world = {
    specVersion: SPEC_VERSION_CURRENT,
    capabilities: { ...storageCapabilities },
    context,
    runKeys,
    ...(runKeys ? { getEncryptionKeyForRun: (runOrId: WorkflowRun | string) => runKeys.forRun(runOrId) } : {}),
    // Storage
    runs: storage.runs,
    steps: storage.steps,
    events: storage.events,
    hooks: storage.hooks,
    // Queue: send side
    getDeploymentId: queue.getDeploymentId,
    queue: queue.queue,
    queueBatch: queue.queueBatch,
    // Queue: receive side
    createQueueHandler: consumer.createQueueHandler,
    registerHandler: consumer.registerHandler,
    // Streams
    streams: streamer.streams,
    streamFlushIntervalMs: streamer.streamFlushIntervalMs,
    sweepOrphans: (o?: OrphanSweepOptions) => sweepOrphans(context, o),
    async start() {
      await consumer.start();
    },
    close() {
      closed ??= (async () => {
        await consumer.close();
        await streamer.close();
        runKeys?.clear();
        if (ownsClients) destroyClients(context.clients);
      })();
      return closed;
    },
  } satisfies AwsWorld;
  return world;
}

export default createWorld;
