/**
 * The numbers and paths that both the World at run time and provisioning (`init`, the CDK
 * construct, the emulator) rely on, each defined here once. Base layer: imports nothing.
 *
 * AWS service limits:
 * - SQS: one send delays a message by at most {@link SQS_MAX_DELAY_SECONDS}; a copy stays hidden
 *   for at most {@link SQS_MAX_VISIBILITY_SECONDS}; a message is kept at most 14 days
 *   ({@link MESSAGE_RETENTION_SECONDS}) and is at most 1 MiB ({@link MAX_MESSAGE_SIZE}).
 *
 * Choices of this package that provisioning must set up and the runtime counts on:
 * - Both queues keep messages the maximum 14 days, so long-wait hops and DLQ triage have room
 *   (src/queue/body-lifetime.ts sizes a body's lifetime by it).
 * - Offloaded queue bodies live under {@link QUEUE_BODY_PREFIX}, which the bucket's lifecycle
 *   rule expires after {@link PAYLOAD_EXPIRY_DAYS}; bodies that must outlive that window live
 *   under {@link HELD_BODY_PREFIX} (no lifecycle rule; the sweep deletes them). Run payloads
 *   (`runs/`) never expire by lifecycle: the event log points at them for as long as the run exists.
 * - A finished run's objects are tagged {@link RETENTION_TAG} when EVE_WORLD_AWS_RETENTION_DAYS is
 *   set; the bucket's lifecycle rule on that tag expires them.
 * - The flow route the consumer POSTs deliveries to is served at {@link FLOW_PATH}.
 */

/** SQS: the longest `DelaySeconds` of one send (15 minutes). */
export const SQS_MAX_DELAY_SECONDS = 900;
/** SQS: the longest visibility timeout of a received copy (12 hours). */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;
/** SQS: the longest message retention (14 days), what both queues are created with. */
export const MESSAGE_RETENTION_SECONDS = 1_209_600;
/** SQS: the largest message body (1 MiB), what both queues are created with. */
export const MAX_MESSAGE_SIZE = 1_048_576;

/** Key prefix of offloaded queue bodies under the bucket's lifecycle rule. */
export const QUEUE_BODY_PREFIX = 'queue/';
/** Key prefix of queue bodies that must outlive the lifecycle window (no lifecycle rule). */
export const HELD_BODY_PREFIX = 'queue-held/';
/** The prefixes the bucket's lifecycle rule expires after {@link PAYLOAD_EXPIRY_DAYS}. */
export const PAYLOAD_PREFIXES = [QUEUE_BODY_PREFIX] as const;
export const PAYLOAD_EXPIRY_DAYS = 30;
/** The object tag storage puts on a finished run's objects under EVE_WORLD_AWS_RETENTION_DAYS. */
export const RETENTION_TAG = 'eve-world-aws-expired';

/** The path of the flow route (Workflow DevKit's well-known route) deliveries are POSTed to. */
export const FLOW_PATH = '/.well-known/workflow/v1/flow';
