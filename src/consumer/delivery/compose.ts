/**
 * The one composition of the delivery pipeline, used by both consumers: the in-process poller
 * (../index.ts, `start()`) and the Lambda SQS handler (./sqs-event-handler.ts). Each builds its
 * parts here, so signing, routing, receipts and the circuit breaker are wired the same way in both
 * shapes; only how copies arrive (long poll vs event source mapping) differs.
 *
 * Invariants:
 * - Every delivery is signed: with the AWSCURRENT value of EVE_WORLD_AWS_SIGNING_SECRET_ARN
 *   (../shared/secret-source.ts), else the first configured secret, else this process's random key,
 *   which only a flow route in this same process accepts (../shared/signing.ts).
 * - A message whose deployment is a published version of the host function (`versionsOf`:
 *   EVE_WORLD_AWS_HOST_FUNCTION on the worker, the host's own function when it consumes its queue
 *   itself, src/consumer/delivery/pass-through.ts) goes to that version by Lambda Invoke
 *   (./invoke.ts), unless that version is this process; else a queue whose prefix has an in-process
 *   handler goes to it; every other one goes over HTTP to the configured flow URL, else the local
 *   `eve start` route (`defaultFlowUrl`).
 * - One breaker and one set of in-flight logical ids per consumer: a warm container or a process
 *   that saw the route fail stops burning receives, and never runs two copies of a message at once.
 */
import { parseQueueName, type ValidQueueName } from '@workflow/world';
import { queueNameOf } from '../../aws/arn.js';
import { defaultFlowUrl } from '../../config/index.js';
import { FLOW_PATH } from '../../config/limits.js';
import type { WorldContext } from '../../context/world-context.js';
import { lambdaDeploymentId } from '../../deployment/id.js';
import { markRetired } from '../../deployment/registry.js';
import type { SqsTransport } from '../../queue/transport.js';
import { configureLogging, type Logger } from '../../telemetry/log.js';
import { enableMetrics } from '../../telemetry/metrics.js';
import { type SigningSecretSource, signingSecretSource } from '../shared/secret-source.js';
import { processSigningKey, resignedHeaders } from '../shared/signing.js';
import { CircuitBreaker } from './breaker.js';
import type { DeliveryDeps, FlowHandler } from './deps.js';
import { invokeFlow, type LambdaVersion, lambdaFlowUrl, parseLambdaDeployment } from './invoke.js';
import { SqsReceipts } from './receipts.js';

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
  /**
   * The function whose published versions a message may be pinned to (deployment affinity in the
   * Lambda shape), asked per message: such a message goes to its version by Invoke, unless that
   * version is this process (AWS_LAMBDA_FUNCTION_NAME and _VERSION). Default:
   * EVE_WORLD_AWS_HOST_FUNCTION (the worker's host); undefined: no message goes by Invoke.
   */
  versionsOf?: () => string | undefined;
}

export interface DeliveryComposition {
  readonly receipts: SqsReceipts;
  readonly breaker: CircuitBreaker;
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
  const signingSecret = source ? () => source.signing() : (config.signingSecrets[0] ?? processSigningKey());
  // One Invoke handler per host version a message names (./invoke.ts); this process's own is local.
  const versionsOf = options.versionsOf ?? (() => config.hostFunction);
  const self = lambdaDeploymentId(config.lambdaFunction);
  const versions = new Map<string, { handler: FlowHandler; url: string }>();
  const versionRoute = (deploymentId: string | undefined) => {
    const fn = versionsOf();
    const target = fn ? parseLambdaDeployment(deploymentId) : undefined;
    if (!target || target.functionName !== fn || deploymentId === self) return undefined;
    let route = versions.get(deploymentId as string);
    if (!route) {
      route = {
        url: lambdaFlowUrl(target),
        handler: invokeFlow({
          target,
          lambda: ctx.clients.lambda,
          onGone: (headers, body) => retireAndSendLive(deploymentId as string, target, headers, body),
        }),
      };
      versions.set(deploymentId as string, route);
    }
    return route;
  };
  /** A version Lambda no longer has: its deployment is retired, and the delivery goes to the live URL. */
  const retireAndSendLive = async (id: string, target: LambdaVersion, headers: Headers, body: Uint8Array) => {
    try {
      await markRetired(
        ctx,
        id,
        `Lambda version ${target.version} of ${target.functionName} no longer exists (Invoke: ResourceNotFoundException)`,
      );
    } catch (err) {
      return new Response(`cannot mark deployment ${id} retired: ${String(err)}`, { status: 503 });
    }
    options.logger.warn(
      `[eve-world-aws] deployment ${id} no longer exists in Lambda: marked retired; its runs fail with DEPLOYMENT_MISMATCH`,
    );
    const secret = typeof signingSecret === 'function' ? await signingSecret() : signingSecret;
    const signed = resignedHeaders(secret, headers, body, flowUrl);
    return http(new Request(flowUrl, { method: 'POST', headers: signed, body: new Uint8Array(body) }));
  };
  return {
    receipts,
    breaker,
    flowUrl,
    deps: {
      config,
      transport,
      receipts,
      route: (queueName, deploymentId) => {
        const version = versionRoute(deploymentId);
        if (version) return version;
        const local = options.inProcess(queueName);
        if (local) return { handler: local, url: `http://localhost${FLOW_PATH}` };
        return { handler: http, url: flowUrl };
      },
      signingSecret,
      logger: options.logger,
      breaker,
      inFlight: new Set<string>(),
    },
  };
}
