/**
 * The flow request of one delivery: the body (inline, or read from S3 when offloaded), the signing
 * secret, the headers the World sets and the signature over them (../shared/signing.ts). The one
 * place a request to the flow route is built, for a received copy and for an early delivery alike.
 *
 * Invariants:
 * - A request that cannot be built is never sent. The message's own fault (its offloaded body gone,
 *   `isObjectFault`; a header value no encoding saves; a broken route) is poison; S3 or the
 *   signing-secret source failing is a dependency outage that provably never reached the route
 *   (`reached: false`), so the copy is parked and the receive is not a dispatch.
 * - A caller's `QueueOptions.headers` never pose as a header the World signs or reads itself
 *   (`x-eve-*`, `x-vqs-*` are dropped); the signature covers the values as sent on the wire.
 * - A delivery dispatched under another id than its message's (an early delivery, whose own id core
 *   must see: src/queue/delivery-id.ts) carries the message's, the id `queue()` returned, as
 *   `x-eve-message-id`, signed. Only those carry it, and they never leave this process (an early
 *   delivery goes to an in-process route), so a flow route of an older build never meets it.
 */
import { isObjectFault } from '../../aws/sdk-errors.js';
import { decodeLogTail } from '../../context/delivery-scope.js';
import type { Envelope } from '../../queue/encoding.js';
import { encodeHeaderValue } from '../../queue/header-values.js';
import { currentTraceparent, TRACEPARENT_HEADER } from '../../telemetry/tracing.js';
import { LOG_TAIL_HEADER, MESSAGE_ID_HEADER, processSigningKey, signatureHeaders } from '../shared/signing.js';
import type { DeliveryDeps, FlowHandler } from './deps.js';
import type { Verdict } from './verdict.js';

/** A request ready to send to the flow route at `url`. */
export type FlowRequest = { kind: 'request'; handler: FlowHandler; url: string; request: Request };

/** A flow request ready to send, or why this message cannot be sent at all. */
export type Built = FlowRequest | Extract<Verdict, { kind: 'poison' }> | Extract<Verdict, { kind: 'outage' }>;

export async function buildRequest(
  envelope: Envelope,
  attempt: number,
  deps: DeliveryDeps,
  now: () => number,
  /** The id core sees (`x-vqs-message-id`): the message's, or its early delivery's (src/queue/delivery-id.ts). */
  deliveryId: string = envelope.messageId,
): Promise<Built> {
  let body: string;
  try {
    body =
      envelope.s3Key === undefined
        ? (envelope.body ?? '')
        : Buffer.from(await deps.transport.ctx.payloads.getBytes(envelope.s3Key)).toString('utf8');
  } catch (err) {
    const detail = `cannot read offloaded body ${envelope.s3Key}: ${String(err)}`;
    // The object gone (its lifetime ended) is this message's fault; S3 failing is an outage.
    return isObjectFault(err) ? { kind: 'poison', reason: 'failed', detail } : dependencyOutage(detail);
  }
  let secret: string;
  try {
    secret =
      typeof deps.signingSecret === 'function'
        ? await deps.signingSecret()
        : (deps.signingSecret ?? processSigningKey());
  } catch (err) {
    // Secrets Manager unreachable or refusing: infrastructure, not this message; kept, not DLQ'd.
    return dependencyOutage(`cannot read the signing secret: ${String(err)}`);
  }
  try {
    // Names and ids travel encoded when they are not plain ASCII (src/queue/header-values.ts).
    const queueName = encodeHeaderValue(envelope.queueName);
    const messageId = encodeHeaderValue(deliveryId);
    const headers: Record<string, string> = {
      ...passThroughHeaders(envelope.headers),
      'content-type': 'application/json',
      'x-vqs-queue-name': queueName,
      'x-vqs-message-id': messageId,
      'x-vqs-message-attempt': String(attempt),
    };
    // Dispatched under another id than the message's (early delivery): the id `queue()` returned.
    const queuedId = deliveryId !== envelope.messageId ? encodeHeaderValue(envelope.messageId) : undefined;
    if (queuedId) headers[MESSAGE_ID_HEADER] = queuedId;
    const logTail = decodeLogTail(envelope.logTail) ? envelope.logTail : undefined;
    if (logTail) headers[LOG_TAIL_HEADER] = logTail;
    // The delivery span, so the flow route (in another process too) runs core under it.
    const traceparent = currentTraceparent();
    if (traceparent) headers[TRACEPARENT_HEADER] = traceparent;
    const { handler, url } = deps.route(envelope.queueName, envelope.deploymentId);
    const parts = {
      queueName,
      messageId,
      attempt,
      body,
      destination: url,
      ...(logTail ? { logTail } : {}),
      ...(traceparent ? { traceparent } : {}),
      ...(queuedId ? { queuedId } : {}),
    };
    Object.assign(headers, signatureHeaders(secret, parts, now()));
    const request = new Request(url, { method: 'POST', headers, body, signal: deps.signal });
    return { kind: 'request', handler, url, request };
  } catch (err) {
    return { kind: 'poison', reason: 'malformed', detail: `cannot build the flow request: ${String(err)}` };
  }
}

/** S3 or the secret source failing: an outage of neither the message nor the route, which it never reached. */
function dependencyOutage(detail: string): Built {
  return { kind: 'outage', reason: 'unavailable', ambiguous: false, reached: false, of: 'dependency', detail };
}

/**
 * `QueueOptions.headers` as sent to the flow route, without the names the World signs or reads
 * itself (`x-eve-*`, `x-vqs-*`): a caller's header can never pose as one the signature vouches for.
 */
function passThroughHeaders(h: Record<string, string> | undefined): Record<string, string> {
  if (!h) return {};
  return Object.fromEntries(
    Object.entries(h)
      .filter(([k]) => !/^x-(eve|vqs)-/i.test(k))
      .map(([k, v]) => [k, encodeHeaderValue(v)]),
  );
}
