/**
 * `@portfolio/eve-world-aws/lambda`: the package's Lambda handlers, in one entry, so the one
 * pre-bundled asset (`dist/lambda-worker/index.mjs`, src/cdk/bundle-worker.ts) serves both
 * functions the CDK construct deploys:
 * - `handler` (handler `index.handler`): the worker, fed by the SQS event source mapping; it
 *   forwards each record to the flow route and reports partial batch failures
 *   (src/consumer/delivery/sqs-event-handler.ts; `createSqsHandler` builds one with other options);
 * - `sweepHandler` (handler `index.sweepHandler`): the daily orphan sweep and the minute backstop
 *   tick, invoked by EventBridge rules (src/sweep/sweep-handler.ts; `createSweepHandler`).
 *
 * Composition only: what each handler does is stated where it is built.
 */
export {
  createSqsHandler,
  handler,
  inboundFromRecord,
  type LambdaContextLike,
  type SQSBatchResponse,
  type SQSEvent,
  type SQSRecord,
  type SqsHandlerOptions,
} from '../consumer/delivery/sqs-event-handler.js';
export {
  type BackstopSummary,
  createSweepHandler,
  type SweepEvent,
  type SweepHandlerOptions,
  type SweepLambdaContext,
  type SweepLambdaHandler,
  type SweepSummary,
  sweepHandler,
} from '../sweep/sweep-handler.js';
