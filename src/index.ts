/**
 * `@portfolio/eve-world-aws`: a Workflow DevKit World on DynamoDB + SQS + S3.
 *
 * `createWorld()` is the only public door. Under eve (and `wf --backend`) it is called with no arguments, so everything
 * comes from the environment (src/config/, docs/configuration.md); tests and embedders may pass an explicit config,
 * tuning options and clients instead. The World exposes the contract and its own operations, never its parts: tools
 * build what they need from the same factories (createContext, createTransport) with the same config.
 *
 * Composition, flat as the runtime expects, one hop to each part:
 * - storage   src/storage/   runs/steps/events/hooks: the event log on one DynamoDB table
 * - queue     src/queue/     send side: queue(), queueBatch(), idempotency, long delays
 * - consumer  src/consumer/  receive side: createQueueHandler, registerHandler, the poller start()s
 * - streams   src/streams    block items, one write per group, with polling and an in-process fast path
 * - preflight src/preflight/write-gate.ts  before the first write or send (events.create, queue(), a run key) and
 *                               at start(): the resources exist, the table's format admits this build, the fleet is joined
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
import {
  applyCoreDefaults,
  assertDeliveriesSafe,
  defaultFlowUrl,
  getConfig,
  unsignedWarning,
  variableWarningsOnce,
  type WorldConfig,
  type WorldTuning,
  withTuning,
} from './config/index.js';
import { createDeploymentFilter } from './consumer/delivery/affinity.js';
import type { FlowHandler } from './consumer/delivery/pipeline.js';
import { type CreateConsumerOptions, createConsumer } from './consumer/index.js';
import { createContext } from './context/world-context.js';
import { createMembership, refuseRetiredStarts } from './deployment/membership.js';
import { isDeploymentUnavailableError } from './deployment/unavailable-error.js';
import { RunKeys } from './encryption/run-keys.js';
import { explainEnvironmentErrors } from './preflight/aws-environment.js';
import { createWriteGate } from './preflight/write-gate.js';
import { createQueue } from './queue/index.js';
import { createTransport } from './queue/transport.js';
import { createStorage, storageCapabilities } from './storage/index.js';
import { createStreamer } from './streams/index.js';
import { type OrphanSweepOptions, type SweepReport, sweepOrphans } from './sweep/index.js';
import { consoleLogger } from './telemetry/log.js';

export type { AwsClients } from './aws/clients.js';
export { ConfigError, ENV_DOCS, loadConfig, TUNING_DOCS, type WorldConfig, type WorldTuning } from './config/index.js';
export type { DeliveryOutcome, FlowHandler, InboundMessage } from './consumer/delivery/pipeline.js';
export { DeploymentRetiredError } from './deployment/retired-error.js';
export { DeploymentUnavailableError, isDeploymentUnavailableError } from './deployment/unavailable-error.js';
export { AwsEnvironmentError, type AwsEnvironmentProblem } from './preflight/aws-environment.js';
export { TableFormatError } from './preflight/format-check.js';
export { type MissingResource, MissingResourceError } from './preflight/resources.js';
export { FormatError } from './schema/formats.js';
export {
  type HeldBodySweep,
  ORPHAN_GRACE_MS,
  type OrphanSweepOptions,
  type OrphanSweepReport,
  type SweepReport,
  sweepOrphans,
} from './sweep/index.js';
export type { Logger } from './telemetry/log.js';

export interface AwsWorld extends World {
  /**
   * Hand deliveries for queue names starting with `prefix` to `handler` in this process (the flow
   * route's `POST`), instead of POSTing them to the flow URL. Same shape as world-local's.
   */
  registerHandler(prefix: string, handler: FlowHandler): void;
  start(): Promise<void>;
  close(): Promise<void>;
  /** {@link sweepOrphans} on this World's resources. */
  sweepOrphans(options?: OrphanSweepOptions): Promise<SweepReport>;
}

export interface CreateWorldOptions {
  /** Explicit config; defaults to the environment (validated once per process). */
  config?: WorldConfig;
  /**
   * Options no deployment needs to set (poll intervals, thresholds, timeouts; src/config/tuning.ts
   * `TUNING`, docs/configuration.md), applied over `config` and validated like it.
   */
  tuning?: Partial<WorldTuning>;
  /** Explicit clients (e.g. with fault-injection middleware); the World then does not destroy them. */
  clients?: AwsClients;
  /** Tuning of the in-process consumer (tests, embedders). */
  consumer?: CreateConsumerOptions;
  /**
   * The per-run key source (src/encryption/run-keys.ts) to use instead of the World's own, e.g.
   * one with other cache bounds, or one whose `stats()` a test or benchmark reads. Default: built
   * from the World's context when EVE_WORLD_AWS_KMS_KEY_ID is set.
   */
  runKeys?: RunKeys;
  /**
   * false: S3 pointers in run/step/event payloads come back as the pointers themselves instead of
   * being downloaded, so an operator's preview never reads S3. Stream chunks are unaffected.
   */
  resolvePayloads?: boolean;
  /**
   * This World is a client of the app's deployments, not one of them (the CLI): it never
   * registers a deployment, counts heartbeats or consumes. On a table with deployment affinity its
   * new runs go to `deployment` (an id, or a function that chooses one when the first run is
   * started), else to the newest deployment with a live consumer (src/deployment/membership.ts).
   */
  client?: { deployment?: string | (() => Promise<string>) };
}

export function createWorld(options: CreateWorldOptions = {}): AwsWorld {
  const config = withTuning(options.config ?? getConfig(), options.tuning);
  applyCoreDefaults();
  // Closed by default, before any client: cleartext and unsigned deliveries only to this machine.
  assertDeliveriesSafe(config, defaultFlowUrl(config));
  const logger = options.consumer?.logger ?? consoleLogger;
  // A variable set but not read is a setting the operator thinks holds: named once per process.
  for (const warning of variableWarningsOnce(config)) logger.warn(warning);
  const ownsClients = options.clients === undefined;
  const context = createContext(config, options.clients, { resolvePayloads: options.resolvePayloads });
  const storage = createStorage(context);
  // This process's part in the fleet of the table: whether runs stay on their deployment is the
  // table's decision, read before the first write (src/deployment/membership.ts).
  const membership = createMembership(context, {
    role: options.client ? 'client' : 'deployment',
    target: options.client?.deployment,
    logger,
    hasRuns: async () => (await storage.runs.list({ resolveData: 'none', pagination: { limit: 1 } })).data.length > 0,
  });
  // The send side first, then the gate every write and send awaits (src/preflight/write-gate.ts),
  // the consumer on both, then the queue, which offers its sends to the consumer for early delivery
  // (src/consumer/delivery/early/offer.ts decides).
  const transport = createTransport(context);
  const beforeFirstWrite = createWriteGate(context, transport, membership);
  const consumer = createConsumer(context, transport, options.consumer, createDeploymentFilter(context, membership), {
    gate: beforeFirstWrite,
    versionsOf: () => (membership.affinity ? config.lambdaFunction?.name : undefined),
  });
  const queue = createQueue(context, {
    transport,
    identity: membership,
    logger,
    logTail: storage.logTail,
    beforeSend: () => beforeFirstWrite(),
    early: consumer.earlyOffer,
  });
  const streamer = createStreamer(context, { runEnd: storage.runEnd, logger });
  // Without a KMS key the World has no getEncryptionKeyForRun at all, so core stores plaintext
  // exactly as before; with one, core encrypts every payload under a per-run data key.
  const runKeys = options.runKeys ?? (config.kmsKeyId ? new RunKeys(context, config.kmsKeyId) : undefined);
  let closed: Promise<void> | undefined;
  const events = {
    ...storage.events,
    create: refuseRetiredStarts(membership, beforeFirstWrite, (...args: Parameters<typeof storage.events.create>) =>
      storage.events.create(...args),
    ),
  };

  return {
    specVersion: SPEC_VERSION_CURRENT,
    // deploymentAffinity: core's deployment guard (a run only runs on the deployment it is pinned
    // to), read by core at each delivery: the table's decision, known once this World has joined.
    capabilities: {
      ...storageCapabilities,
      get deploymentAffinity() {
        return membership.affinity ? true : undefined;
      },
    },
    // A new run's key is written before its run_created (core asks for it first).
    ...(runKeys
      ? {
          getEncryptionKeyForRun: async (runOrId: WorkflowRun | string) => {
            await beforeFirstWrite();
            return runKeys.forRun(runOrId);
          },
        }
      : {}),
    // Storage
    // A process's first call may be a read (a script's resumeHook): no region, no credentials or
    // no answer is named with the fix there too (src/preflight/aws-environment.ts).
    runs: explainEnvironmentErrors(config, storage.runs),
    steps: explainEnvironmentErrors(config, storage.steps),
    events: explainEnvironmentErrors(config, events),
    hooks: explainEnvironmentErrors(config, storage.hooks),
    // Queue: send side. core's start() asks for the id first: the table is read before it answers.
    getDeploymentId: async () => {
      await beforeFirstWrite();
      return queue.getDeploymentId();
    },
    // Called unbound by core: a `this`-free arrow (src/deployment/unavailable-error.ts).
    isDeploymentUnavailableError,
    // core's `start(..., { deploymentId: 'latest' })`: the newest deployment of this shape with a
    // live consumer (this one without affinity).
    resolveLatestDeploymentId: async () => {
      await beforeFirstWrite();
      return membership.latest();
    },
    queue: queue.queue,
    queueBatch: queue.queueBatch,
    // Queue: receive side. The flow route runs behind the gate (src/consumer/route/format-guard.ts)
    // and takes the host's pass-through batches (src/consumer/delivery/pass-through.ts).
    createQueueHandler: consumer.createQueueHandler,
    registerHandler: consumer.registerHandler,
    // Streams
    streams: streamer.streams,
    streamFlushIntervalMs: streamer.streamFlushIntervalMs,
    sweepOrphans: (o?: OrphanSweepOptions) => sweepOrphans(context, o),
    async start() {
      // Loud on every start: the unsigned opt-out is for private networks, never to go unnoticed.
      const unsigned = unsignedWarning(config);
      if (unsigned) logger.warn(unsigned);
      await beforeFirstWrite();
      await consumer.start();
      // Its heartbeat: counted on the deployment's item with affinity, else a re-read of the
      // table's format (src/deployment/membership.ts).
      if (!closed) membership.startHeartbeat();
    },
    close() {
      closed ??= (async () => {
        membership.stop();
        await consumer.close();
        await streamer.close();
        runKeys?.clear();
        if (ownsClients) destroyClients(context.clients);
      })();
      return closed;
    },
  } satisfies AwsWorld;
}

export default createWorld;
