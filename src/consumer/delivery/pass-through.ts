/**
 * The host as its own SQS consumer (the CDK construct's `consumer: 'host'`, docs/deploy.md "Who
 * consumes the queue"): the event source mapping invokes the host with an SQS batch, the Lambda Web
 * Adapter POSTs that non-HTTP event to `AWS_LWA_PASS_THROUGH_PATH` (the construct points it at the
 * flow route), and the World's flow route hands it here (../index.ts). Each record goes through the
 * one delivery pipeline (./sqs-event-handler.ts, ./pipeline.ts) to the flow route in this process:
 * no worker function, no Invoke hop, one billed wait.
 *
 * Invariants:
 * - A request is a pass-through only inside Lambda (AWS_LAMBDA_FUNCTION_NAME set) and only when its
 *   `x-amzn-request-context` header is exactly `null`. The adapter sets that header on every
 *   request it forwards, replacing any value the client sent: a Function URL, API Gateway or ALB
 *   request's context (a JSON object), `null` only for an event that is none of these (the
 *   pass-through). So nothing sent to the Function URL is taken for a batch; it reaches the flow
 *   route as a delivery, which must be signed (../route/queue-handler.ts). Outside Lambda nothing
 *   in front of the route overwrites the header: there it is never a pass-through.
 * - Only an SQS batch whose every record names this World's queue (`eventSource` `aws:sqs`,
 *   `eventSourceARN` the configured queue) is taken; any other event runs nothing (400).
 * - A record runs only when it is a live receive of this queue: before anything runs, its receipt
 *   handle must be accepted by SQS (ChangeMessageVisibilityBatch to the queue's own visibility,
 *   which only restarts the window the event source mapping received it with). A receipt handle is
 *   issued only to the receiver, so this holds whatever stands in front of the route (an adapter
 *   that did not overwrite the header, a forged batch): a record SQS refuses runs nothing and is
 *   listed as failed; if SQS cannot be asked, nothing runs and every record is kept (500). Each
 *   record is then decoded and checked by the pipeline like any received copy.
 * - Every record is settled here, whatever the event source mapping makes of the answer. In
 *   `response_stream` mode (the host's, for its streaming Function URL) the adapter frames every
 *   answer for HTTP integration (a JSON prelude, 8 NUL bytes, the body): no partial batch response
 *   can be read from it, and Lambda takes an unreadable response as a failure of the whole batch.
 *   So records the pipeline settled as done (acked, or replaced by a fresh copy) are deleted here
 *   before answering; every other record already has its retry's visibility (the pipeline sets
 *   it). The answer still lists the kept records in `batchItemFailures` (status 200), so an event
 *   source that reads it (a buffered host) keeps exactly those; one that reads nothing keeps all,
 *   and the done ones are gone already. An answer never omits a record that is not done: a failure
 *   of the whole batch lists every record.
 * - The deadline is the invocation's (`deadline` of the adapter's `x-amzn-lambda-context`), less
 *   the handler's margin: a record still running then is released, never deleted.
 */
import { isQueueArnOf } from '../../aws/arn.js';
import type { WorldContext } from '../../context/world-context.js';
import { createTransport } from '../../queue/transport.js';
import type { Logger } from '../../telemetry/log.js';
import type { FlowHandler } from './pipeline.js';
import { SqsReceipts } from './receipts.js';
import { createSqsHandler, type SQSBatchResponse, type SQSRecord } from './sqs-event-handler.js';

/** Set by the Lambda Web Adapter on every request it forwards; `null` for a pass-through event. */
export const REQUEST_CONTEXT_HEADER = 'x-amzn-request-context';
/** Set by the Lambda Web Adapter: the invocation's context (`deadline`, epoch ms, among others). */
export const LAMBDA_CONTEXT_HEADER = 'x-amzn-lambda-context';

/** Whether `req` is an event the Lambda Web Adapter passed through (see the invariants above). */
export function isPassThrough(req: Request, inLambda: boolean): boolean {
  return inLambda && req.method === 'POST' && req.headers.get(REQUEST_CONTEXT_HEADER)?.trim() === 'null';
}

export interface PassThroughOptions {
  /** The flow route every record is delivered to, in this process. */
  flow: FlowHandler;
  logger: Logger;
  /** The function whose published versions a record may be pinned to (deployment affinity). */
  versionsOf?: () => string | undefined;
}

const json = (value: unknown, status = 200) => Response.json(value, { status });

/** The pass-through route: an SQS batch in, every record settled, a partial batch response out. */
export function createPassThroughRoute(
  ctx: WorldContext,
  opts: PassThroughOptions,
): (req: Request) => Promise<Response> {
  const { config } = ctx;
  const receipts = new SqsReceipts(createTransport(ctx));
  const handler = createSqsHandler({
    flow: opts.flow,
    context: ctx,
    logger: opts.logger,
    ...(opts.versionsOf ? { versionsOf: opts.versionsOf } : {}),
  });
  const refuse = (why: string, records: SQSRecord[] = []) => {
    opts.logger.error(`[eve-world-aws] pass-through event refused, nothing ran: ${why}`);
    return json({ error: `Not an SQS batch of this World's queue: ${why}`, ...failures(records) }, 400);
  };

  return async (req) => {
    let event: unknown;
    try {
      event = await req.json();
    } catch {
      return refuse('the body is not JSON');
    }
    const records = (event as { Records?: unknown } | null)?.Records;
    if (!Array.isArray(records) || records.length === 0) return refuse('no Records');
    for (const r of records as Array<Partial<SQSRecord> | null>) {
      if (
        typeof r?.messageId !== 'string' ||
        typeof r.receiptHandle !== 'string' ||
        typeof r.body !== 'string' ||
        r.eventSource !== 'aws:sqs' ||
        !isQueueArnOf(config.queue, typeof r.eventSourceARN === 'string' ? r.eventSourceARN : undefined)
      ) {
        return refuse(
          `a record is not a message of queue ${JSON.stringify(config.queue)} (source ${JSON.stringify(String(r?.eventSourceARN ?? r?.eventSource)).slice(0, 200)})`,
          records as SQSRecord[],
        );
      }
    }
    const received = records as SQSRecord[];
    // Proof of receipt (see the invariants): only records SQS knows as received run.
    let refused: Set<string>;
    try {
      const handles = received.map((r) => r.receiptHandle);
      refused = new Set(await receipts.changeVisibilityMany(handles, await receipts.visibilityInForce()));
    } catch (err) {
      opts.logger.error(
        `[eve-world-aws] pass-through batch not proven, nothing ran, every record is kept: ${String(err)}`,
      );
      return json(failures(received), 500);
    }
    const unproven = received.filter((r) => refused.has(r.receiptHandle));
    if (unproven.length === received.length)
      return refuse('no record is a live receive of this queue (SQS refused every receipt handle)', received);
    if (unproven.length > 0)
      opts.logger.error(
        `[eve-world-aws] pass-through: ${unproven.length} record(s) are no live receive of this queue (SQS refused their receipt handles), not run`,
      );
    const batch = received.filter((r) => !refused.has(r.receiptHandle));
    const deadline = deadlineOf(req.headers.get(LAMBDA_CONTEXT_HEADER));
    let answer: SQSBatchResponse;
    try {
      answer = await handler(
        { Records: batch },
        deadline === undefined ? undefined : { getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) },
      );
    } catch (err) {
      // Before any record ran (a missing resource, a bad environment): every record is kept.
      opts.logger.error(`[eve-world-aws] pass-through batch failed, every record is kept: ${String(err)}`);
      return json(failures(received), 500);
    }
    const kept = new Set(answer.batchItemFailures.map((f) => f.itemIdentifier));
    const done = batch.filter((r) => !kept.has(r.messageId));
    try {
      const notDeleted = await receipts.deleteMany(done.map((r) => r.receiptHandle));
      if (notDeleted.length > 0)
        opts.logger.warn(
          `[eve-world-aws] ${notDeleted.length} delivered message(s) could not be deleted; a later copy replays as a no-op`,
        );
    } catch (err) {
      opts.logger.warn(
        `[eve-world-aws] could not delete ${done.length} delivered message(s), a later copy replays as a no-op: ${String(err)}`,
      );
    }
    return json({ batchItemFailures: [...answer.batchItemFailures, ...failures(unproven).batchItemFailures] });
  };
}

/** `batchItemFailures` naming every record: the whole batch kept. */
function failures(records: readonly Partial<SQSRecord>[]): SQSBatchResponse {
  return {
    batchItemFailures: records
      .map((r) => r?.messageId)
      .filter((id): id is string => typeof id === 'string')
      .map((itemIdentifier) => ({ itemIdentifier })),
  };
}

/** The invocation deadline (epoch ms) from the adapter's Lambda context, when it carries one. */
function deadlineOf(header: string | null): number | undefined {
  if (!header) return undefined;
  try {
    const c = JSON.parse(header) as { deadline?: unknown; deadline_ms?: unknown } | null;
    const d = Number(c?.deadline ?? c?.deadline_ms);
    return Number.isFinite(d) && d > 0 ? d : undefined;
  } catch {
    return undefined;
  }
}
