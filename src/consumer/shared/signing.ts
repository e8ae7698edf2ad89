/**
 * HMAC-SHA256 signatures on queue deliveries.
 *
 * Scheme `v2`: the consumer sends x-eve-timestamp: <unix seconds> x-eve-nonce: <32 random hex
 * digits> x-eve-signature: v2=<hex HMAC-SHA256(secret, canonical)> where canonical is the
 * newline-joined list "v2", timestamp, x-vqs-queue-name, x-vqs-message-id, x-vqs-message-attempt,
 * hex(SHA-256(body)), nonce (when sent), "dest <host><path>", then "tail <x-eve-log-tail>" when the
 * delivery carries one, then "trace <traceparent>" when it carries one (the W3C header of the
 * delivery span, which the flow route parents core's work to: src/telemetry/tracing.ts), then
 * "message <x-eve-message-id>" when it carries one (the id `queue()` returned, on a delivery
 * dispatched under another id: src/queue/delivery-id.ts) so the body, the three delivery headers
 * (their wire values, src/queue/header-values.ts), the time, the destination and the trace parent
 * are all covered, and every signing is unique (two legitimate copies of one SQS message sent in
 * the same second are not "replays"). Removing the nonce, tail, trace or message header from a
 * request signed with it breaks the signature (no downgrade); `v1` (no destination) is refused.
 *
 * The destination is the host (with a non-default port, lower case) and path of the URL the sender
 * POSTed to; for a delivery by Lambda Invoke to one published version of the host
 * (../delivery/invoke.ts) it is `lambda:<function>:<version>` and the path, which the host accepts
 * only when it is that function's that version (its own AWS_LAMBDA_FUNCTION_NAME and _VERSION). The
 * receiver accepts the destination built from the `Host` header or the host of the request URL
 * (each with the request's path), and from the first `x-forwarded-host` only when the operator
 * opted in (`trustForwardedHost`, EVE_WORLD_AWS_TRUST_FORWARDED_HOST=1), since a client can send
 * that header with any value. Behind a Lambda Function URL and the Web Adapter the app sees the
 * Function URL host in `Host`, which is the host the worker sent to. What the binding holds against
 * is stated in docs/security.md: a delivery captured in one environment is refused by another that
 * shares the secret when the other is reached under its own host name (a Function URL, a load
 * balancer or CDN routing by host); a server reached directly accepts any `Host` its client sends.
 *
 * The receiver refuses, before it reads the body ({@link checkSignatureHeaders}), a request with no
 * signature or timestamp, or a timestamp more than the tolerance (300 s) away from its own clock
 * (stale or replayed later); after reading, a signature that does not match, and one that was
 * already accepted (an exact replay inside the window): by any instance when a durable {@link
 * NonceStore} is given (a DynamoDB conditional put, src/consumer/route/nonces.ts), else within this
 * process ({@link ReplayGuard}). Comparison is constant-time.
 *
 * Rotation: the receiver accepts a signature made with any of its secrets; senders sign with the
 * first. Without a configured secret, the consumer signs with {@link processSigningKey}, a random
 * key that never leaves this process, so the flow route accepts exactly the deliveries of a
 * consumer in the same process (in-process loopback development) and refuses everything else.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { TRACEPARENT_HEADER } from '../../telemetry/tracing.js';

export const SIGNATURE_HEADER = 'x-eve-signature';
export const TIMESTAMP_HEADER = 'x-eve-timestamp';
const NONCE_HEADER = 'x-eve-nonce';
export const LOG_TAIL_HEADER = 'x-eve-log-tail';
/** The id `queue()` returned, on a delivery dispatched under another id (an early delivery's own). */
export const MESSAGE_ID_HEADER = 'x-eve-message-id';
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface SignedParts {
  timestamp: number;
  queueName: string;
  messageId: string;
  attempt: string | number;
  body: string | Uint8Array;
  /** The URL the delivery is POSTed to (only its host and path are signed). */
  destination: string;
  nonce?: string;
  /** The `x-eve-log-tail` header's value, when the delivery carries one. */
  logTail?: string;
  /** The W3C `traceparent` header's value (the delivery span), when the delivery carries one. */
  traceparent?: string;
  /** The `x-eve-message-id` header's value, when the delivery carries one. */
  queuedId?: string;
}

/**
 * `<host><path>` of a URL, host in lower case: the signed destination. A `lambda:<fn>:<ver><path>`
 * URL (a delivery by Invoke) is its own destination.
 */
export function destinationOf(url: string | URL): string {
  const u = typeof url === 'string' ? new URL(url) : url;
  if (u.protocol === 'lambda:') return `lambda:${u.pathname}`;
  return `${u.host.toLowerCase()}${u.pathname}`;
}

function canonical(p: Omit<SignedParts, 'destination'>, destination: string): string {
  const digest = createHash('sha256').update(p.body).digest('hex');
  const lines = ['v2', String(p.timestamp), p.queueName, p.messageId, String(p.attempt), digest];
  if (p.nonce !== undefined) lines.push(p.nonce);
  lines.push(`dest ${destination}`);
  if (p.logTail !== undefined) lines.push(`tail ${p.logTail}`);
  if (p.traceparent !== undefined) lines.push(`trace ${p.traceparent}`);
  if (p.queuedId !== undefined) lines.push(`message ${p.queuedId}`);
  return lines.join('\n');
}

export function computeSignature(secret: string, parts: SignedParts): string {
  return hmac(secret, parts, destinationOf(parts.destination));
}

function hmac(secret: string, parts: Omit<SignedParts, 'destination'>, destination: string): string {
  return `v2=${createHmac('sha256', secret).update(canonical(parts, destination)).digest('hex')}`;
}

export function signatureHeaders(
  secret: string,
  parts: Omit<SignedParts, 'timestamp'>,
  now = Date.now(),
): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  const nonce = parts.nonce ?? randomBytes(16).toString('hex');
  return {
    [TIMESTAMP_HEADER]: String(timestamp),
    [NONCE_HEADER]: nonce,
    [SIGNATURE_HEADER]: computeSignature(secret, { ...parts, nonce, timestamp }),
  };
}

/** Why a request's signature was refused: a closed set, read as data (and logged as is). */
export type SignatureRefusal =
  | 'unsigned request'
  | 'malformed timestamp'
  | 'stale timestamp'
  | 'malformed signature (not v2)'
  | 'bad signature';

export type VerifyResult = { ok: true; signature: string; timestamp: number } | { ok: false; reason: SignatureRefusal };

/**
 * This process's random signing key (32 bytes, hex), created on first use. Kept on `globalThis` so
 * two copies of this module in one process (ESM and CJS, or bundled twice) agree on it.
 */
export function processSigningKey(): string {
  const slot = Symbol.for('eve-world-aws.processSigningKey');
  const g = globalThis as unknown as Record<symbol, string | undefined>;
  g[slot] ??= randomBytes(32).toString('hex');
  return g[slot];
}

/**
 * What can be checked before the body is read: a signature and a timestamp are present, and the
 * timestamp is within the tolerance of this clock.
 */
export function checkSignatureHeaders(
  headers: Headers,
  now = Date.now(),
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
): VerifyResult {
  const sig = headers.get(SIGNATURE_HEADER);
  const ts = headers.get(TIMESTAMP_HEADER);
  if (!sig || !ts) return { ok: false, reason: 'unsigned request' };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'malformed timestamp' };
  const timestamp = Number(ts);
  if (Math.abs(now / 1000 - timestamp) > toleranceSeconds) return { ok: false, reason: 'stale timestamp' };
  if (!/^v2=[0-9a-f]{64}$/.test(sig)) return { ok: false, reason: 'malformed signature (not v2)' };
  return { ok: true, signature: sig, timestamp };
}

/**
 * The destinations a request may have been signed for: its path under the `Host` header and the
 * URL's host, and under the first `x-forwarded-host` only with `trustForwardedHost` (see above).
 */
export function requestDestinations(
  url: string,
  headers: Headers,
  trustForwardedHost = false,
  lambdaSelf?: string,
): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const forwarded = trustForwardedHost ? headers.get('x-forwarded-host')?.split(',')[0]?.trim() : undefined;
  const hosts = [forwarded, headers.get('host')?.trim(), u.host];
  const out = new Set<string>();
  for (const h of hosts) if (h) out.add(`${h.toLowerCase()}${u.pathname}`);
  // In a published Lambda version: the destination of a delivery by Invoke to this very version.
  if (lambdaSelf) out.add(`${lambdaSelf}${u.pathname}`);
  return [...out];
}

export function verifySignature(
  secret: string | readonly string[],
  req: { url: string; headers: Headers },
  body: Uint8Array,
  now = Date.now(),
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
  trustForwardedHost = false,
  lambdaSelf?: string,
): VerifyResult {
  const { headers } = req;
  const pre = checkSignatureHeaders(headers, now, toleranceSeconds);
  if (!pre.ok) return pre;
  const base = {
    ...signedHeaderParts(headers, body),
    timestamp: pre.timestamp,
    nonce: headers.get(NONCE_HEADER) ?? undefined,
  };
  const a = Buffer.from(pre.signature);
  // Every secret and destination is tried (no early exit), so timing does not tell which matched.
  let match = false;
  for (const destination of requestDestinations(req.url, headers, trustForwardedHost, lambdaSelf)) {
    for (const s of typeof secret === 'string' ? [secret] : secret) {
      const b = Buffer.from(hmac(s, base, destination));
      if (a.length === b.length && timingSafeEqual(a as Uint8Array, b as Uint8Array)) match = true;
    }
  }
  if (!match) return { ok: false, reason: 'bad signature' };
  return pre;
}

/**
 * The headers of `headers` signed again for another destination (a delivery whose Invoke target
 * is gone, sent on over the flow URL instead): same queue, message, attempt, body, log tail, trace
 * parent and message id; a new timestamp and nonce.
 */
export function resignedHeaders(
  secret: string,
  headers: Headers,
  body: Uint8Array,
  destination: string,
  now = Date.now(),
): Headers {
  const out = new Headers(headers);
  const signed = signatureHeaders(secret, { ...signedHeaderParts(headers, body), destination }, now);
  for (const [k, v] of Object.entries(signed)) out.set(k, v);
  return out;
}

/** What a delivery's headers and body contribute to its signature (all but the timestamp, nonce and destination). */
function signedHeaderParts(headers: Headers, body: Uint8Array): Omit<SignedParts, 'timestamp' | 'destination'> {
  return {
    queueName: headers.get('x-vqs-queue-name') ?? '',
    messageId: headers.get('x-vqs-message-id') ?? '',
    attempt: headers.get('x-vqs-message-attempt') ?? '',
    body,
    logTail: headers.get(LOG_TAIL_HEADER) ?? undefined,
    traceparent: headers.get(TRACEPARENT_HEADER) ?? undefined,
    queuedId: headers.get(MESSAGE_ID_HEADER) ?? undefined,
  };
}

/** Where accepted signatures are remembered until they expire, to refuse replays. */
export interface NonceStore {
  /**
   * Records `signature` (signed at `timestamp`, unix seconds); resolves false when it was already
   * recorded by an earlier request. Rejects when the store cannot answer.
   */
  claim(signature: string, timestamp: number): Promise<boolean>;
}

/** Signatures accepted within the tolerance window, to refuse exact replays (per process). */
export class ReplayGuard implements NonceStore {
  private seen = new Map<string, number>();

  constructor(
    private readonly windowSeconds = SIGNATURE_TOLERANCE_SECONDS,
    private readonly maxEntries = 100_000,
  ) {}

  /** Records `signature`; false when it was already seen and has not expired. */
  accept(signature: string, timestamp: number, now = Date.now()): boolean {
    const expiresAt = (timestamp + this.windowSeconds) * 1000;
    const prev = this.seen.get(signature);
    if (prev !== undefined && prev > now) return false;
    if (this.seen.size >= this.maxEntries) this.prune(now);
    this.seen.set(signature, expiresAt);
    return true;
  }

  async claim(signature: string, timestamp: number): Promise<boolean> {
    return this.accept(signature, timestamp);
  }

  private prune(now: number): void {
    for (const [k, exp] of this.seen) if (exp <= now) this.seen.delete(k);
    // Still full of live entries: drop the oldest half (insertion order) rather than grow.
    if (this.seen.size >= this.maxEntries) {
      let n = Math.floor(this.seen.size / 2);
      for (const k of this.seen.keys()) {
        if (n-- <= 0) break;
        this.seen.delete(k);
      }
    }
  }
}
