/**
 * How long an offloaded queue body lives, tied to the copies that point at it (why a key must say
 * its lifetime: docs/design.md, "Queue body lifetime").
 *
 * Keys:
 * - `queue/<messageId>/<createdSec>`: under the bucket's `queue/` lifecycle rule, alive until
 *   created + PAYLOAD_EXPIRY_DAYS.
 * - `queue-held/<messageId>/<untilSec>`: no lifecycle rule; alive until `untilSec`, after which the
 *   sweep deletes it (src/sweep/held-bodies.ts). Used only when a copy must outlive the lifecycle
 *   window from now (a schedule more than ~2 weeks out).
 * - `queue/<messageId>` (no time in the key): age unknown, treated as expiring now.
 *
 * Invariant, enforced by {@link ensureBodyLifetime} in `SqsTransport.sendPlanned` (the one place
 * every copy is sent from: first sends, hops, `timeoutSeconds` re-sends, parked outage copies) and
 * by `eve-world-aws redrive` before each send: a copy is sent only pointing at a body guaranteed to
 * exist until the copy can no longer be received, i.e. its send time + SQS retention + 1 day of
 * margin, or for a schedule its time + the Scheduler's retry window + the same. When the current
 * key does not cover that, the body is copied to a fresh key first and the copy points there. Old
 * keys are never deleted here (other copies of the same message may still point at them); they
 * expire by lifecycle or are swept after `untilSec`.
 */
import {
  HELD_BODY_PREFIX,
  MESSAGE_RETENTION_SECONDS,
  PAYLOAD_EXPIRY_DAYS,
  QUEUE_BODY_PREFIX,
} from '../config/limits.js';
import type { PayloadStore } from '../context/payload-store.js';
import { type DelayPlan, SCHEDULE_RETRY_SECONDS } from './delays.js';
import type { Envelope } from './encoding.js';

const DAY_MS = 86_400_000;
const WINDOW_MS = PAYLOAD_EXPIRY_DAYS * DAY_MS;
/** Margin for clock skew between this host and S3, and S3's own rounding. */
const MARGIN_MS = DAY_MS;
/** The longest an SQS copy (or its dead letter) can be received after it was sent. */
const COPY_LIFETIME_MS = MESSAGE_RETENTION_SECONDS * 1000 + MARGIN_MS;

/** Until when (epoch ms) the body of a copy sent now with `plan` must exist. */
export function bodyNeededUntil(plan: DelayPlan, now: number): number {
  if (plan.kind === 'schedule') return plan.at.getTime() + SCHEDULE_RETRY_SECONDS * 1000 + COPY_LIFETIME_MS;
  return now + COPY_LIFETIME_MS;
}

/** Until when the object at `key` is guaranteed to exist (0: unknown, e.g. a key without a time). */
export function bodyAliveUntil(key: string): number {
  const prefix = [HELD_BODY_PREFIX, QUEUE_BODY_PREFIX].find((p) => key.startsWith(p));
  if (!prefix) return 0;
  const rest = key.slice(prefix.length);
  const slash = rest.lastIndexOf('/');
  const sec = slash > 0 ? Number(rest.slice(slash + 1)) : Number.NaN;
  if (!Number.isSafeInteger(sec) || sec <= 0) return 0;
  return prefix === HELD_BODY_PREFIX ? sec * 1000 : sec * 1000 + WINDOW_MS;
}

/** A fresh key for `messageId`'s body that lives until at least `neededUntil`. */
export function bodyKey(messageId: string, neededUntil: number, now: number): string {
  if (neededUntil <= now + WINDOW_MS) return `${QUEUE_BODY_PREFIX}${messageId}/${Math.floor(now / 1000)}`;
  return `${HELD_BODY_PREFIX}${messageId}/${Math.ceil(neededUntil / 1000)}`;
}

/**
 * The envelope to send: unchanged when its body is inline or its key lives long enough, else
 * pointing at a fresh copy of the body (read, then written under {@link bodyKey}). Idempotent in
 * effect: a retry writes another copy with the same bytes, which expires like any other.
 */
export async function ensureBodyLifetime(
  payloads: Pick<PayloadStore, 'getBytes' | 'putBlob'>,
  envelope: Envelope,
  neededUntil: number,
  now: number,
): Promise<Envelope> {
  if (envelope.s3Key === undefined || bodyAliveUntil(envelope.s3Key) >= neededUntil) return envelope;
  const bytes = await payloads.getBytes(envelope.s3Key);
  const key = bodyKey(envelope.messageId, neededUntil, now);
  await payloads.putBlob(key, bytes);
  return { ...envelope, s3Key: key };
}
