/**
 * The worker's SQS-event Lambda handler (exported by `@portfolio/eve-world-aws/lambda`,
 * src/lambda/index.ts): forwards each record to the flow route and returns `batchItemFailures`
 * (partial batch response) for the records to retry.
 *
 * Usage (event source mapping with `FunctionResponseTypes: ["ReportBatchItemFailures"]`):
 * ```ts
 * // over HTTP to the deployed flow route (EVE_WORLD_AWS_FLOW_URL, signed with
 * // EVE_WORLD_AWS_SIGNING_SECRET, which is required unless the URL is loopback or
 * // EVE_WORLD_AWS_ALLOW_UNSIGNED=1; checked on the first event, before any connection):
 * export { handler } from '@portfolio/eve-world-aws/lambda';
 * // or in process, calling the compiled flow route directly:
 * import { createSqsHandler } from '@portfolio/eve-world-aws/lambda';
 * import { POST } from './.well-known/workflow/v1/flow.mjs';
 * export const handler = createSqsHandler({ flow: POST });
 * ```
 * The parts (signing, routing, receipts, breaker) are composed by ./compose.ts, as for the poller,
 * and each record's fate is the pipeline's (./pipeline.ts; outages and the DLQ: ./settle.ts,
 * ./failures.ts). A record acked or replaced by a copy SQS accepted is reported a success, so
 * Lambda deletes it; every other one (its visibility changed for a `{timeoutSeconds}`, a failure or
 * an outage kept, one unfinished at the deadline) a failure, so Lambda leaves it.
 *
 * Visibility: the event source mapping receives with the queue's own VisibilityTimeout (it must
 * be >= the function timeout); the heartbeat reads that value from the queue (GetQueueAttributes,
 * once per container) rather than trusting the config. Nothing is acked that did not succeed.
 */
import { assertDeliveriesSafe, loadConfig, unsignedWarning, variableWarningsOnce } from '../../config/index.js';
import { FLOW_PATH } from '../../config/limits.js';
import { createContext, type WorldContext } from '../../context/world-context.js';
import { preflight } from '../../preflight/resources.js';
import { createTransport, type SqsTransport } from '../../queue/transport.js';
import { consoleLogger, type Logger } from '../../telemetry/log.js';
import { flushMetrics } from '../../telemetry/metrics.js';
import { forEachLimited } from '../../util/concurrency.js';
import { composeDelivery, type DeliveryComposition } from './compose.js';
import { type DeliveryOutcome, deliverMessage, type FlowHandler, type InboundMessage } from './pipeline.js';

/** The parts of the Lambda SQS event this handler reads (structurally compatible with @types/aws-lambda). */
export interface SQSRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: { ApproximateReceiveCount?: string; [k: string]: string | undefined };
  messageAttributes: Record<
    string,
    { stringValue?: string; binaryValue?: string; dataType: string; [k: string]: unknown }
  >;
  eventSourceARN?: string;
  [k: string]: unknown;
}

export interface SQSEvent {
  Records: SQSRecord[];
}

export interface SQSBatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}

export interface LambdaContextLike {
  getRemainingTimeInMillis?: () => number;
}

export interface SqsHandlerOptions {
  /** In-process flow route (the compiled `flow.mjs` `POST`). When absent, deliveries go over HTTP. */
  flow?: FlowHandler;
  /** Flow route URL for HTTP delivery. Default: `config.flowUrl` (EVE_WORLD_AWS_FLOW_URL). */
  flowUrl?: string;
  /** World context (config, clients). Default: built from `process.env` on the first event. */
  context?: WorldContext;
  /** Records delivered at once. Default: `config.consumerConcurrency`. */
  concurrency?: number;
  /** Stop waiting for deliveries this long before the Lambda deadline (ms). Default 2000. */
  deadlineMarginMs?: number;
  logger?: Logger;
  /** Observes every record outcome. */
  onOutcome?: (outcome: DeliveryOutcome, msg: InboundMessage) => void;
  /**
   * The function whose published versions a record may be pinned to, delivered there by Invoke
   * (./compose.ts). Default: EVE_WORLD_AWS_HOST_FUNCTION.
   */
  versionsOf?: () => string | undefined;
}

export function inboundFromRecord(r: SQSRecord): InboundMessage {
  const attributes: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(r.messageAttributes ?? {})) attributes[k] = v?.stringValue;
  return {
    sqsMessageId: r.messageId,
    receiptHandle: r.receiptHandle,
    body: r.body ?? '',
    attributes,
    receiveCount: Number(r.attributes?.ApproximateReceiveCount ?? '1') || 1,
    sentAt: Number(r.attributes?.SentTimestamp) || undefined,
  };
}

export function createSqsHandler(
  opts: SqsHandlerOptions = {},
): (event: SQSEvent, context?: LambdaContextLike) => Promise<SQSBatchResponse> {
  const logger = opts.logger ?? consoleLogger;
  let state: { ctx: WorldContext; transport: SqsTransport; delivery: DeliveryComposition } | undefined;

  // Built on the first event, so importing the module never throws on a bad environment.
  const init = () => {
    if (state) return state;
    const config = opts.context?.config ?? loadConfig();
    const flowUrl = opts.flowUrl ?? config.flowUrl;
    if (!opts.flow && !flowUrl) {
      throw new Error(
        'eve-world-aws Lambda consumer: set EVE_WORLD_AWS_FLOW_URL to the flow route URL ' +
          `(https://<host>${FLOW_PATH}), or pass { flow } to createSqsHandler for in-process delivery`,
      );
    }
    // Closed by default: no cleartext or unsigned delivery over a network, before any client.
    if (!opts.flow) assertDeliveriesSafe(config, flowUrl as string);
    const unsigned = unsignedWarning(config);
    if (unsigned) logger.warn(unsigned);
    for (const warning of variableWarningsOnce(config)) logger.warn(warning);
    const ctx = opts.context ?? createContext(config);
    const transport = createTransport(ctx);
    state = {
      ctx,
      transport,
      // Per container: a warm container that saw the route fail stops burning receives.
      delivery: composeDelivery(ctx, transport, {
        logger,
        inProcess: () => opts.flow,
        flowUrl,
        ...(opts.versionsOf ? { versionsOf: opts.versionsOf } : {}),
      }),
    };
    return state;
  };

  return async (event, context) => {
    const { ctx, transport, delivery } = init();
    const { config } = ctx;
    // Before this container's first send or write: the table, queue and bucket exist (once per
    // process). A misnamed one fails the invocation, naming it; Lambda keeps the batch and retries.
    await preflight(ctx, transport);
    // The visibility the event source mapping's copies really have (the queue's attribute).
    const visibilitySeconds = await delivery.receipts.visibilityInForce().catch(() => config.visibilityTimeoutSeconds);
    const records = event.Records ?? [];
    const abort = new AbortController();
    const remaining = context?.getRemainingTimeInMillis?.();
    const deadline =
      remaining !== undefined
        ? setTimeout(() => abort.abort(), Math.max(0, remaining - (opts.deadlineMarginMs ?? 2000)))
        : undefined;

    // Only records whose outcome is known and positive are reported as successes; anything still
    // running at the deadline (or never started) is a failure, so Lambda never deletes it.
    const succeeded = new Set<string>();
    const deliver = async (record: SQSRecord) => {
      const msg = inboundFromRecord(record);
      let outcome: DeliveryOutcome;
      try {
        outcome = await deliverMessage(msg, {
          ...delivery.deps,
          signal: abort.signal,
          visibilitySeconds,
          gateOnBreaker: true,
        });
      } catch (err) {
        logger.warn(
          `[eve-world-aws] delivery of SQS message ${record.messageId} failed, it will be retried: ${String(err)}`,
        );
        outcome = { action: 'keep', reason: 'failed', detail: String(err) };
        delivery.breaker.neutral(); // a probe that threw before reaching the route frees the slot
      }
      if (outcome.action === 'delete' && !abort.signal.aborted) succeeded.add(record.messageId);
      opts.onOutcome?.(outcome, msg);
    };
    const concurrency = Math.max(1, Math.min(opts.concurrency ?? config.consumerConcurrency, records.length || 1));
    const aborted = new Promise<void>((resolve) =>
      abort.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    try {
      await Promise.race([
        forEachLimited(records, concurrency, deliver, { stop: () => abort.signal.aborted }),
        aborted,
      ]);
    } finally {
      if (deadline) clearTimeout(deadline);
      // EMF (on by default in Lambda): this invocation's deliveries, before Lambda freezes us.
      flushMetrics();
    }
    if (abort.signal.aborted)
      logger.warn('[eve-world-aws] Lambda deadline reached; unfinished records are reported as failures');
    const failures = records.filter((r) => !succeeded.has(r.messageId)).map((r) => r.messageId);
    return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}

/** Ready-made handler: config from the environment, delivery over HTTP to EVE_WORLD_AWS_FLOW_URL. */
export const handler = createSqsHandler();
