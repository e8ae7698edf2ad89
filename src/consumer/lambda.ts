/**
 * `@portfolio/eve-world-aws/lambda`: SQS-event Lambda handler that forwards each record to the
 * flow route and returns `batchItemFailures` (partial batch response) for the records to retry.
 *
 * Usage (event source mapping with `FunctionResponseTypes: ["ReportBatchItemFailures"]`):
 * ```ts
 * // over HTTP to the deployed flow route (EVE_WORLD_AWS_FLOW_URL, signed with
 * // EVE_WORLD_AWS_SIGNING_SECRET):
 * export { handler } from '@portfolio/eve-world-aws/lambda';
 * // or in process, calling the compiled flow route directly:
 * import { createSqsHandler } from '@portfolio/eve-world-aws/lambda';
 * import { POST } from './.well-known/workflow/v1/flow.mjs';
 * export const handler = createSqsHandler({ flow: POST });
 * ```
 * Record fate: ack, or a replacement sent (next long-wait hop, long `timeoutSeconds`) -> success,
 * so Lambda deletes it. `{timeoutSeconds}` within 12 h -> visibility changed, reported as a failure
 * so Lambda leaves it. Handler error, 4xx/5xx, unreachable route, malformed message -> failure
 * (retried through the visibility timeout, then the DLQ). Nothing is acked that did not succeed.
 */
import { loadConfig, type WorldConfig } from '../config.js';
import { createContext, type WorldContext } from '../context.js';
import { type DeliveryLeasePort, deliveryLeasePort } from '../queue/delivery-lease.js';
import { consoleLogger, DEFAULT_FLOW_PATH, deliverMessage, type DeliveryOutcome, type Dispatch, type InboundMessage, type Logger } from '../queue/delivery.js';
import { schedulerPort } from '../queue/delays.js';
import { SqsTransport } from '../queue/transport.js';

/** The parts of the Lambda SQS event this handler reads (structurally compatible with @types/aws-lambda). */
export interface SQSRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: { ApproximateReceiveCount?: string; [k: string]: string | undefined };
  messageAttributes: Record<string, { stringValue?: string; binaryValue?: string; dataType: string; [k: string]: unknown }>;
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
  flow?: Dispatch;
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
}

/** Normalise a Lambda record. */
export function inboundFromRecord(r: SQSRecord): InboundMessage {
  const attributes: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(r.messageAttributes ?? {})) attributes[k] = v?.stringValue;
  return {
    sqsMessageId: r.messageId,
    receiptHandle: r.receiptHandle,
    body: r.body ?? '',
    attributes,
    receiveCount: Number(r.attributes?.ApproximateReceiveCount ?? '1') || 1,
  };
}

export function createSqsHandler(opts: SqsHandlerOptions = {}): (event: SQSEvent, context?: LambdaContextLike) => Promise<SQSBatchResponse> {
  const logger = opts.logger ?? consoleLogger;
  let state:
    | { ctx: WorldContext; config: WorldConfig; transport: SqsTransport; dispatch: Dispatch; url: string; inFlight: Set<string>; lease: DeliveryLeasePort }
    | undefined;

  // Built on the first event, so importing the module never throws on a bad environment.
  const init = () => {
    if (state) return state;
    const ctx = opts.context ?? createContext(loadConfig(process.env));
    const config = ctx.config;
    const flowUrl = opts.flowUrl ?? config.flowUrl;
    if (!opts.flow && !flowUrl) {
      throw new Error(
        'eve-world-aws Lambda consumer: set EVE_WORLD_AWS_FLOW_URL to the flow route URL ' +
          `(https://<host>${DEFAULT_FLOW_PATH}), or pass { flow } to createSqsHandler for in-process delivery`,
      );
    }
    state = {
      ctx,
      config,
      inFlight: new Set<string>(),
      // One delivery at a time per logical message across containers (queue/delivery-lease.ts).
      lease: deliveryLeasePort(ctx, { ttlMs: Math.min(config.visibilityTimeoutSeconds / 2, 60) * 1000, logger }),
      // Long re-sends (`timeoutSeconds` over 12 h) use the Scheduler when one is configured.
      transport: new SqsTransport(ctx, config.schedulerRoleArn ? schedulerPort(ctx.clients) : undefined),
      dispatch: opts.flow ?? ((req) => fetch(req)),
      url: opts.flow ? `http://localhost${DEFAULT_FLOW_PATH}` : (flowUrl as string),
    };
    return state;
  };

  return async (event, context) => {
    const s = init();
    const records = event.Records ?? [];
    const abort = new AbortController();
    const remaining = context?.getRemainingTimeInMillis?.();
    const deadline =
      remaining !== undefined ? setTimeout(() => abort.abort(), Math.max(0, remaining - (opts.deadlineMarginMs ?? 2000))) : undefined;

    // Only records whose outcome is known and positive are reported as successes; anything still
    // running at the deadline (or never started) is a failure, so Lambda never deletes it.
    const succeeded = new Set<string>();
    let next = 0;
    const worker = async () => {
      while (next < records.length && !abort.signal.aborted) {
        const record = records[next++];
        const msg = inboundFromRecord(record);
        let outcome: DeliveryOutcome;
        try {
          outcome = await deliverMessage(msg, {
            config: s.config,
            transport: s.transport,
            dispatchFor: () => ({ dispatch: s.dispatch, url: s.url }),
            signingSecret: s.config.signingSecret,
            logger,
            signal: abort.signal,
            inFlight: s.inFlight,
            lease: s.lease,
          });
        } catch (err) {
          logger.warn(`[eve-world-aws] delivery of SQS message ${record.messageId} failed, it will be retried: ${String(err)}`);
          outcome = { action: 'keep', reason: 'failed', detail: String(err) };
        }
        if (outcome.action === 'delete' && !abort.signal.aborted) succeeded.add(record.messageId);
        opts.onOutcome?.(outcome, msg);
      }
    };
    const concurrency = Math.max(1, Math.min(opts.concurrency ?? s.config.consumerConcurrency, records.length || 1));
    const aborted = new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve(), { once: true }));
    try {
      await Promise.race([Promise.all(Array.from({ length: concurrency }, worker)), aborted]);
    } finally {
      if (deadline) clearTimeout(deadline);
    }
    if (abort.signal.aborted) logger.warn('[eve-world-aws] Lambda deadline reached; unfinished records are reported as failures');
    const failures = records.filter((r) => !succeeded.has(r.messageId)).map((r) => r.messageId);
    return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}

/** Ready-made handler: config from the environment, delivery over HTTP to EVE_WORLD_AWS_FLOW_URL. */
export const handler = createSqsHandler();
