/**
 * The consumer of the World, composed from its two sides:
 * - ./route/ receives: the flow-route handler (`createQueueHandler`: signature, replay store, step
 *   lease keeper), behind the World's write gate (./route/format-guard.ts);
 * - ./delivery/ sends to it: the one delivery pipeline (./delivery/pipeline.ts), composed once
 *   (./delivery/compose.ts) for the in-process SQS consumer that `start()` runs on plain Node
 *   hosts, the Lambda SQS handler (./delivery/sqs-event-handler.ts) and the host that consumes its
 *   own queue (./delivery/pass-through.ts, taken by the flow route); in-process handlers
 *   (`registerHandler`) and early delivery (./delivery/early/);
 * - ./shared/ holds what both sides use: signing, the secret source, error text.
 *
 * Where a delivery goes: a handler registered for the queue name's prefix (in process), else
 * `config.flowUrl`, else the local `eve start` flow route (`http://127.0.0.1:$PORT/...`).
 */
import type { Queue, QueuePrefix } from '@workflow/world';
import { canConnect } from '../aws/net.js';
import { startBackstop } from '../backstop/index.js';
import { CONSUMER_OPTIONS, clampToRange, type WorldConfig } from '../config/index.js';
import type { StepLease } from '../context/delivery-scope.js';
import type { WorldContext } from '../context/world-context.js';
import { lambdaDeploymentId } from '../deployment/id.js';
import type { SqsTransport } from '../queue/transport.js';
import { ackTurn, extendStepLeases, releaseStepLeases, stepLeaseTtlMs, storageContext } from '../storage/index.js';
import { consoleLogger, type Logger } from '../telemetry/log.js';
import { flushEvery, flushMetrics } from '../telemetry/metrics.js';
import type { DeploymentFilter } from './delivery/affinity.js';
import { composeDelivery, queuePrefixOf } from './delivery/compose.js';
import { createEarlyOffer, type EarlyOffer, earlyOn } from './delivery/early/offer.js';
import { createPassThroughRoute, isPassThrough } from './delivery/pass-through.js';
import type { DeliveryOutcome, FlowHandler, InboundMessage } from './delivery/pipeline.js';
import { SqsPoller } from './delivery/poller.js';
import type { SqsReceipts } from './delivery/receipts.js';
import { guardedRoute } from './route/format-guard.js';
import { DynamoNonceStore } from './route/nonces.js';
import { createQueueHandler, type HandlerOptions } from './route/queue-handler.js';
import { type SigningSecretSource, signingSecretSource } from './shared/secret-source.js';

/** How often the in-process consumer writes its metrics (EVE_WORLD_AWS_METRICS=1). */
const METRICS_FLUSH_MS = 60_000;

/**
 * The consumer's options. Each one's default and meaning are its row of CONSUMER_OPTIONS
 * (src/config/consumer.ts), printed in docs/configuration.md, "Consumer options".
 */
export interface CreateConsumerOptions {
  consumer?: 'poll' | 'none';
  logger?: Logger;
  waitTimeSeconds?: number;
  drainTimeoutMs?: number;
  breakerCooldownMs?: number;
  /** Observes every delivery outcome of the in-process consumer. */
  onDeliveryOutcome?: (outcome: DeliveryOutcome, msg: InboundMessage) => void;
  /** Early delivery (./delivery/early/offer.ts decides). */
  earlyDelivery?: boolean;
  /** This consumer's and its flow route's clock (epoch ms). Default `Date.now`; tests skew it. */
  now?: () => number;
}

export interface Consumer extends Pick<Queue, 'createQueueHandler'> {
  /** Deliver messages of `prefix` queues to `handler` in process instead of over HTTP. */
  registerHandler(prefix: QueuePrefix | string, handler: FlowHandler): void;
  /** Starts the in-process consumer (unless `consumer: 'none'`). Idempotent. */
  start(): Promise<void>;
  /** Stops receiving (releasing what the last poll returned) and drains deliveries. Idempotent. */
  close(): Promise<void>;
  /** Offered every message the World's queue is about to send (./delivery/early/offer.ts decides). */
  readonly earlyOffer: EarlyOffer;
  readonly receipts: SqsReceipts;
}

/** Whether a World with these options delivers early at all (./delivery/early/offer.ts). */
export function earlyDeliveryEnabled(config: WorldConfig, options: CreateConsumerOptions = {}): boolean {
  return earlyOn(options.earlyDelivery ?? CONSUMER_OPTIONS.earlyDelivery.default, consumerMode(config, options));
}

function consumerMode(config: WorldConfig, options: CreateConsumerOptions): 'poll' | 'none' {
  return options.consumer ?? (config.inLambda ? 'none' : 'poll');
}

/** What the World's flow route runs behind (src/index.ts); without it, the bare route (tests). */
export interface FlowRouteGate {
  /** The World's write gate (src/preflight/write-gate.ts), passed before a delivery reaches core. */
  gate: () => Promise<void>;
  /** The function whose versions a pass-through record may be pinned to (./delivery/pass-through.ts). */
  versionsOf: () => string | undefined;
}

export function createConsumer(
  ctx: WorldContext,
  transport: SqsTransport,
  options: CreateConsumerOptions = {},
  /** Deployment affinity of the in-process consumer (./delivery/affinity.ts); undefined: every message is dispatched. */
  affinity?: DeploymentFilter,
  world?: FlowRouteGate,
): Consumer {
  const { config } = ctx;
  const logger = options.logger ?? consoleLogger;
  const handlers = new Map<string, FlowHandler>();
  const mode = consumerMode(config, options);
  // EVE_WORLD_AWS_SIGNING_SECRET_ARN: one read (and cache) for both directions of this World.
  const secretSource = signingSecretSource(config, ctx.clients);
  const delivery = composeDelivery(ctx, transport, {
    logger,
    secretSource,
    inProcess: (queueName) => {
      const prefix = queuePrefixOf(queueName);
      return prefix === undefined ? undefined : handlers.get(prefix);
    },
    breakerCooldownMs: options.breakerCooldownMs ?? CONSUMER_OPTIONS.breakerCooldownMs.default,
  });
  let poller: SqsPoller | undefined;
  let stopMetrics: (() => void) | undefined;
  let stopBackstop: (() => void) | undefined;
  let closed = false;
  // EMF metrics (enabled by composeDelivery): the poller writes them every minute; inside Lambda
  // (the host's flow route) a process may freeze once it responds, so each request writes its own.
  const flushPerRequest = config.metrics && mode === 'none';

  let flowReachable = false;
  let waitingSince: number | undefined;
  const ready = async (): Promise<boolean> => {
    // In-process handlers need no network; over HTTP, wait for the flow route to listen so that
    // early receives (before `eve start` serves) do not burn receive counts.
    if (handlers.size > 0 || flowReachable) return true;
    const url = delivery.flowUrl;
    flowReachable = await canConnect(url);
    if (flowReachable) {
      if (waitingSince !== undefined)
        logger.info(`[eve-world-aws] flow route ${url} is reachable; consuming the queue`);
      waitingSince = undefined;
    } else if (waitingSince === undefined) {
      waitingSince = Date.now();
      logger.warn(
        `[eve-world-aws] waiting for the flow route at ${url} before consuming the queue ` +
          '(set EVE_WORLD_AWS_FLOW_URL or PORT, or register an in-process handler)',
      );
    }
    return flowReachable;
  };
  const routeOptions = { ...flowRouteOptions(ctx, logger, secretSource), ...(options.now ? { now: options.now } : {}) };

  return {
    receipts: delivery.receipts,
    createQueueHandler: (prefix, handler) => {
      const bare = createQueueHandler(prefix, handler, routeOptions);
      const route: typeof bare = !flushPerRequest
        ? bare
        : async (req) => {
            try {
              return await bare(req);
            } finally {
              flushMetrics();
            }
          };
      if (!world) return route;
      const checked = guardedRoute(route, world.gate, logger);
      // In Lambda, an SQS batch the Web Adapter passed through: this host consumes its own queue,
      // each record delivered to `checked` in process (./delivery/pass-through.ts).
      let passThrough: typeof checked | undefined;
      return async (req) => {
        if (!isPassThrough(req, config.inLambda)) return checked(req);
        passThrough ??= createPassThroughRoute(ctx, { flow: checked, logger, versionsOf: world.versionsOf });
        return passThrough(req);
      };
    },
    registerHandler(prefix, handler) {
      handlers.set(prefix, handler);
    },
    earlyOffer: createEarlyOffer({
      enabled: earlyDeliveryEnabled(config, options),
      hasHandler: (queueName) => {
        const prefix = queuePrefixOf(queueName);
        return prefix !== undefined && handlers.has(prefix);
      },
      poller: () => poller,
    }),
    async start() {
      if (closed || mode === 'none' || poller) return;
      const waitTimeSeconds = clampToRange(CONSUMER_OPTIONS.waitTimeSeconds, options.waitTimeSeconds);
      poller = new SqsPoller({
        ...delivery.deps,
        affinity,
        concurrency: config.consumerConcurrency,
        waitTimeSeconds,
        // Never longer than the queue's own visibility: a short queue visibility stays short.
        visibilitySeconds: Math.min(config.consumerVisibilitySeconds, config.visibilityTimeoutSeconds),
        drainTimeoutMs: options.drainTimeoutMs ?? CONSUMER_OPTIONS.drainTimeoutMs.default,
        ...(options.now ? { now: options.now } : {}),
        ready,
        onOutcome: (outcome, msg) => {
          if (outcome.action === 'keep' && outcome.reason === 'transport') flowReachable = false;
          options.onDeliveryOutcome?.(outcome, msg);
        },
      });
      poller.start();
      // The liveness backstop's checks run where the poller runs (src/backstop/).
      stopBackstop = startBackstop(ctx, { logger });
      if (config.metrics) stopMetrics = flushEvery(METRICS_FLUSH_MS);
    },
    async close() {
      closed = true;
      await poller?.close();
      stopBackstop?.();
      stopBackstop = undefined;
      stopMetrics?.();
      stopMetrics = undefined;
    },
  };
}

/**
 * What the flow route (`createQueueHandler`) checks and keeps alive: the configured secrets (or the
 * Secrets Manager source), the replay store, and the step lease, whose TTL is half the visibility a
 * consumer hides a copy for (the poller's, never longer than the queue's), so a crashed delivery's
 * leases have expired before its copy is shown again.
 */
function flowRouteOptions(
  ctx: WorldContext,
  logger: Logger,
  secretSource: SigningSecretSource | undefined,
): HandlerOptions {
  const { config } = ctx;
  const leaseTable = { ddb: ctx.clients.ddb, table: config.tableName };
  return {
    signingSecrets: config.signingSecrets,
    secretSource,
    allowUnsigned: config.allowUnsigned,
    trustForwardedHost: config.trustForwardedHost,
    lambdaSelf: lambdaDeploymentId(config.lambdaFunction),
    nonces: new DynamoNonceStore(ctx),
    logError: (m, fields) => logger.error(m, fields),
    onTurnDone: (runId, slot, queueName) => {
      ackTurn(storageContext(ctx), runId, slot, queueName).catch((err) =>
        logger.warn(`[eve-world-aws] backstop: could not acknowledge the turn of run ${runId}: ${String(err)}`),
      );
    },
    stepLease: {
      ttlMs: stepLeaseTtlMs(Math.min(config.consumerVisibilitySeconds, config.visibilityTimeoutSeconds)),
      extend: (l: StepLease) => extendStepLeases(leaseTable, l),
      release: (l: StepLease) => releaseStepLeases(leaseTable, l),
    },
  };
}
