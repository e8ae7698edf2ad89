/**
 * HMAC-SHA256 signatures on queue deliveries.
 *
 * Scheme `v1`: the consumer sends
 *   x-eve-timestamp: <unix seconds>
 *   x-eve-signature: v1=<hex HMAC-SHA256(secret, canonical)>
 * where canonical is the newline-joined list
 *   "v1", timestamp, x-vqs-queue-name, x-vqs-message-id, x-vqs-message-attempt, hex(SHA-256(body))
 * so the body, the three delivery headers and the time are all covered.
 *
 * The receiver rejects a request whose timestamp is more than the tolerance (300 s) away from its
 * own clock (stale or replayed later), and, within one process, a signature it has already accepted
 * (an exact replay inside the window). Comparison is constant-time.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-eve-signature';
export const TIMESTAMP_HEADER = 'x-eve-timestamp';
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface SignedParts {
  timestamp: number;
  queueName: string;
  messageId: string;
  attempt: string | number;
  body: string | Uint8Array;
}

function canonical(p: SignedParts): string {
  const digest = createHash('sha256').update(p.body).digest('hex');
  return ['v1', String(p.timestamp), p.queueName, p.messageId, String(p.attempt), digest].join('\n');
}

export function computeSignature(secret: string, parts: SignedParts): string {
  return `v1=${createHmac('sha256', secret).update(canonical(parts)).digest('hex')}`;
}

/** Headers to add to a delivery. */
export function signatureHeaders(secret: string, parts: Omit<SignedParts, 'timestamp'>, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return { [TIMESTAMP_HEADER]: String(timestamp), [SIGNATURE_HEADER]: computeSignature(secret, { ...parts, timestamp }) };
}

export type VerifyResult = { ok: true; signature: string; timestamp: number } | { ok: false; reason: string };

export function verifySignature(
  secret: string,
  headers: Headers,
  body: Uint8Array,
  now = Date.now(),
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
): VerifyResult {
  const sig = headers.get(SIGNATURE_HEADER);
  const ts = headers.get(TIMESTAMP_HEADER);
  if (!sig || !ts) return { ok: false, reason: 'unsigned request' };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'malformed timestamp' };
  const timestamp = Number(ts);
  if (Math.abs(now / 1000 - timestamp) > toleranceSeconds) return { ok: false, reason: 'stale timestamp' };
  const expected = computeSignature(secret, {
    timestamp,
    queueName: headers.get('x-vqs-queue-name') ?? '',
    messageId: headers.get('x-vqs-message-id') ?? '',
    attempt: headers.get('x-vqs-message-attempt') ?? '',
    body,
  });
  const a = Buffer.from(sig);
  const b = Buffer.from(expected);
  if (a.length !== b.length || !timingSafeEqual(a as Uint8Array, b as Uint8Array)) return { ok: false, reason: 'bad signature' };
  return { ok: true, signature: sig, timestamp };
}

/** Signatures accepted within the tolerance window, to refuse exact replays (per process). */
export class ReplayGuard {
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
