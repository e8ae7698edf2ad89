/**
 * A dead letter as `eve-world-aws redrive` reads and re-sends it: the run it belongs to (from its
 * payload, inline, in an envelope or in S3), and the copy sent back to the queue. The copy carries
 * the World's `eve.*` attributes unchanged but the log tail (which vouches only for a first
 * delivery) and the failure count (`eve.failures`, src/consumer/delivery/failures.ts: a redriven
 * message gets the queue's whole allowance of failures again, as SQS's receive count starts over),
 * and an S3-offloaded body that could expire under it (dead letters are up to 14 days old, the
 * bucket keeps `queue/` for 30) is first copied to a fresh key that the copy points to
 * (src/queue/body-lifetime.ts).
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { PayloadStore } from '../../context/payload-store.js';
import { bodyNeededUntil, ensureBodyLifetime } from '../../queue/body-lifetime.js';
import {
  decodePayload,
  encodeEnvelope,
  envelopeFromMessage,
  MSG_ATTR,
  s3PlaceholderBody,
} from '../../queue/encoding.js';

const stringAttrs = (m: Message): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]));

/** Run id of a World message: from the payload body (inline, envelope or S3), else undefined. */
export async function runIdOfMessage(
  m: Message,
  payloads?: Pick<PayloadStore, 'getBytes'>,
): Promise<{ runId?: string; queueName?: string; messageId?: string }> {
  const env = envelopeFromMessage(m.Body ?? '', stringAttrs(m));
  if (typeof env === 'string') return {};
  let text = env.body;
  if (text === undefined && env.s3Key !== undefined && payloads) {
    try {
      text = Buffer.from(await payloads.getBytes(env.s3Key)).toString('utf8');
    } catch {
      text = undefined; // a missing body object does not stop the redrive; the run is just unknown
    }
  }
  let runId: string | undefined;
  if (text !== undefined) {
    try {
      const p = decodePayload(text) as { runId?: unknown };
      if (typeof p?.runId === 'string') runId = p.runId;
    } catch {
      // not a World payload
    }
  }
  return { runId, queueName: env.queueName, messageId: env.messageId };
}

/**
 * The World's own attributes, unchanged. Anything else on a dead letter (e.g. the diagnostics
 * EventBridge Scheduler adds to what it dead-letters) describes the failure, not the message.
 */
export function copiedAttributes(m: Message): Record<string, MessageAttributeValue> | undefined {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
    // Not the log tail nor the failure count (see the header).
    if (!k.startsWith('eve.') || k === MSG_ATTR.logTail || k === MSG_ATTR.failures) continue;
    out[k] = {
      DataType: v.DataType,
      ...(v.StringValue !== undefined ? { StringValue: v.StringValue } : {}),
      ...(v.BinaryValue !== undefined ? { BinaryValue: v.BinaryValue } : {}),
    };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Body and attributes of the redriven copy: the dead letter's, with an offloaded body re-homed
 * when its key would not outlive the new copy. If the body cannot be read (already expired), the
 * copy is sent unchanged: the redrive never stops on it, and the consumer reports the body.
 */
export async function redrivenCopy(
  m: Message,
  payloads: Pick<PayloadStore, 'getBytes' | 'putBlob'> | undefined,
  now: number,
): Promise<{ body: string; attributes: Record<string, MessageAttributeValue> | undefined }> {
  const body = m.Body ?? '';
  const attributes = copiedAttributes(m);
  let env = envelopeFromMessage(body, stringAttrs(m));
  if (typeof env === 'string') return { body, attributes };
  // A Scheduler envelope holds its tail, failure count and other attributes in the body: drop them.
  const tailInBody =
    !attributes?.[MSG_ATTR.queue] &&
    (env.logTail !== undefined || env.failures !== undefined || env.foreign !== undefined);
  if (tailInBody) env = { ...env, logTail: undefined, failures: undefined, foreign: undefined };
  const unmoved = { body: tailInBody ? encodeEnvelope(env) : body, attributes };
  if (env.s3Key === undefined || !payloads) return unmoved;
  const moved = await ensureBodyLifetime(payloads, env, bodyNeededUntil({ kind: 'now' }, now), now).catch(() => env);
  if (moved.s3Key === env.s3Key || moved.s3Key === undefined) return unmoved;
  if (attributes?.[MSG_ATTR.s3]) {
    attributes[MSG_ATTR.s3] = { DataType: 'String', StringValue: moved.s3Key };
    return { body: s3PlaceholderBody(moved.s3Key), attributes };
  }
  // A Scheduler envelope (no attributes): the pointer lives in the body.
  return { body: encodeEnvelope(moved), attributes };
}
