/**
 * The one composition of the delivery pipeline, used by both consumers: the in-process poller
 * (../index.ts, `start()`) and the Lambda SQS handler (../lambda.ts). Each builds its parts here, so
 * signing, routing, receipts and the circuit breaker are wired the same way in
 * both shapes; only how copies arrive (long poll vs event source mapping) differs.
 *
 * Invariants:
 * - Every delivery is signed: with the AWSCURRENT value of EVE_WORLD_AWS_SIGNING_SECRET_ARN
 *   (../secret-source.ts), else the first configured secret, else this process's random key, which
 *   only a flow route in this same process accepts (../signing.ts).
 * - A queue whose prefix has an in-process handler goes to it; every other one goes over HTTP to
 *   the configured flow URL, else the local `eve start` route (`defaultFlowUrl`).
 * - One breaker and one set of in-flight logical ids per consumer: a warm container or a process
 *   that saw the route fail stops burning receives, and two copies of one message never run at
 *   once in it.
 */
import { parseQueueName, type ValidQueueName } from '@workflow/world';
import { queueNameOf } from '../../aws/arn.js';
import { defaultFlowUrl } from '../../config/index.js';
import type { WorldContext } from '../../context.js';
import { FLOW_PATH } from '../../limits.js';
import { configureLogging, type Logger } from '../../log.js';
import type { SqsTransport } from '../../queue/transport.js';
import { enableMetrics } from '../../telemetry/metrics.js';
import { CircuitBreaker } from '../breaker.js';
import type { DeliveryDeps, FlowHandler } from './deps.js';
import { SqsReceipts } from '../receipts.js';
import { type SigningSecretSource, signingSecretSource } from '../secret-source.js';
import { processSigningKey } from '../signing.js';

export interface DeliveryCompositionOptions {
  logger: Logger;
  /**
   * The in-process flow route for a logical queue name, if any (registered handlers, or the
   * Lambda's compiled `flow` for every queue). Undefined: over HTTP.
   */
  inProcess(queueName: string): FlowHandler | undefined;
  /** Flow route URL for HTTP delivery. Default: `defaultFlowUrl(config)`. */
  flowUrl?: string;
  /** Circuit breaker cool-down (ms), doubling up to 60 s. */
  breakerCooldownMs?: number;
  /** The Secrets Manager source to sign with (shared with a flow route). Default: from the config. */
  secretSource?: SigningSecretSource;
}

export interface DeliveryComposition {
  readonly receipts: SqsReceipts;
  readonly breaker: CircuitBreaker;
  /** Where HTTP deliveries go. */
  readonly flowUrl: string;
  /** The pipeline's dependencies, less what each copy brings (signal, visibility). */
  readonly deps: Omit<DeliveryDeps, 'signal' | 'visibilitySeconds'>;
}

/** The queue prefix of a logical queue name (`__wkf_workflow_` …), undefined if it has none. */
export function queuePrefixOf(queueName: string): string | undefined {
  try {
    return parseQueueName(queueName as ValidQueueName).prefix;
  } catch {
    return undefined;
  }
}

export function composeDelivery(
  ctx: WorldContext,
  transport: SqsTransport,
  options: DeliveryCompositionOptions,
): DeliveryComposition {
  const { config } = ctx;
  // The process's log format and level, and its EMF metrics (docs/observability.md).
  configureLogging(config);
  if (config.metrics) enableMetrics({ dimensions: { Queue: queueNameOf(config.queue) } });
  const flowUrl = options.flowUrl ?? defaultFlowUrl(config);
  const receipts = new SqsReceipts(transport);
  const breaker = new CircuitBreaker(options.logger, 'the flow route', { cooldownMs: options.breakerCooldownMs });
  const http: FlowHandler = (req) => fetch(req);
  const source = options.secretSource ?? signingSecretSource(config, ctx.clients);
  return {
    receipts,
    breaker,
    flowUrl,
    deps: {
      config,
      transport,
      receipts,
      route: (queueName) => {
        const local = options.inProcess(queueName);
        return local ? { handler: local, url: `http://localhost${FLOW_PATH}` } : { handler: http, url: flowUrl };
      },
      signingSecret: source ? () => source.signing() : (config.signingSecrets[0] ?? processSigningKey()),
      logger: options.logger,
      breaker,
      inFlight: new Set<string>(),
    },
  };
}
