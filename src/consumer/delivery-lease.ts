/**
 * Durable in-progress lease per logical message: one delivery at a time per message, across
 * processes (the pattern of Powertools' idempotency utility: a conditional put of an "in progress"
 * record with an expiry, extended while the work runs, removed when it settles).
 *
 * SQS standard queues occasionally hand one message to two consumers at once, and a re-sent
 * message (an idempotency takeover, a redrive) carries the same logical id. Core treats a delivery
 * that carries the message id of a step's inline owner as that owner's crash-redelivery and runs
 * the step again, so two concurrent copies both run step bodies. The consumer takes this lease
 * before dispatching; a copy that finds it held by another live delivery is deferred, not run.
 *
 * `LEASE#<messageId>` item: `{ token, expiresAt (ms), ttl (s, for DynamoDB's TTL cleanup) }`.
 *
 * Invariants:
 * - At most one live holder: acquire is one conditional PutItem that succeeds only when there is no
 *   lease, the lease expired (`expiresAt < now`: its holder died or lost its heartbeat), or the
 *   lease is the caller's own (`token`), so an SDK retry after a lost response is recognised.
 * - Extend and release are conditional on the token: applying either twice is the same as once,
 *   and neither ever touches a lease another delivery now holds.
 * - Expiry is compared with the acquirer's clock: keep clock skew well below `ttlMs`.
 * - Cost: acquire 1 WRU, each extension 1 WRU, release 1 WRU (items < 1 KB). An acked delivery
 *   that settles inside one heartbeat costs 1 WRU and one request: its lease is not released but
 *   left to expire (no later delivery of a finished message needs it; a late duplicate copy is
 *   deferred until then and then finds nothing to do). A copy that comes back (deferred, hopped,
 *   retried) releases its lease, 2 WRU. A deferred copy costs 1 WRU (the failed put).
 */
import { randomUUID } from 'node:crypto';
import {
  type ConditionalCheckFailedException,
  DeleteItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.js';
import type { WorldContext } from '../context.js';
import { ATTR, keys } from '../ddb.js';
import type { Logger } from '../log.js';

/** DynamoDB deletes expired leases this long after they expire (they no longer matter by then). */
const CLEANUP_AFTER_SECONDS = 3600;

export interface DeliveryLease {
  messageId: string;
  token: string;
  expiresAt: number;
}

export type AcquireResult =
  | { acquired: true; lease: DeliveryLease }
  /** Held by another live delivery until `expiresAt` (ms; 0 when the store could not say). */
  | { acquired: false; expiresAt: number };

type Ctx = Pick<WorldContext, 'config' | 'clients'>;

/** Longest lease: a crashed holder blocks its message for at most this long. */
export const MAX_LEASE_TTL_MS = 60_000;

/**
 * The lease's ttl for a copy hidden for `visibilitySeconds`: half the visibility in force, at most
 * 60 s, so an abandoned delivery's lease has expired before SQS shows its copy again.
 */
export function leaseTtlMs(visibilitySeconds: number): number {
  return Math.max(1000, Math.min((visibilitySeconds * 1000) / 2, MAX_LEASE_TTL_MS));
}

function validate(messageId: string, ttlMs: number): void {
  if (!messageId) throw new TypeError('delivery lease: messageId must be a non-empty string');
  if (!Number.isFinite(ttlMs) || ttlMs <= 0)
    throw new RangeError(`delivery lease: ttlMs must be a positive number of milliseconds, got ${ttlMs}`);
}

/** Take the lease for `messageId` for `ttlMs`, unless another live delivery holds it. */
export async function acquireDeliveryLease(
  ctx: Ctx,
  messageId: string,
  opts: { ttlMs: number; token?: string; now?: number },
): Promise<AcquireResult> {
  validate(messageId, opts.ttlMs);
  const now = opts.now ?? Date.now();
  const token = opts.token ?? randomUUID();
  const expiresAt = now + opts.ttlMs;
  try {
    await ctx.clients.ddb.send(
      new PutItemCommand({
        TableName: ctx.config.tableName,
        Item: marshall({
          ...keys.deliveryLease(messageId),
          token,
          expiresAt,
          [ATTR.ttl]: Math.ceil(expiresAt / 1000) + CLEANUP_AFTER_SECONDS,
        }),
        ConditionExpression: 'attribute_not_exists(#pk) OR #exp < :now OR #token = :token',
        ExpressionAttributeNames: { '#pk': ATTR.pk, '#exp': 'expiresAt', '#token': 'token' },
        ExpressionAttributeValues: marshall({ ':now': now, ':token': token }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { acquired: true, lease: { messageId, token, expiresAt } };
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
    const item = (err as ConditionalCheckFailedException).Item;
    const old = item ? (unmarshall(item) as { expiresAt?: number }) : undefined;
    return { acquired: false, expiresAt: old?.expiresAt ?? 0 };
  }
}

/**
 * Push the lease's expiry to `now + ttlMs` (the heartbeat). Returns false when the lease is no
 * longer this delivery's (it expired and another delivery took it, or it was released).
 */
export async function extendDeliveryLease(
  ctx: Ctx,
  lease: DeliveryLease,
  opts: { ttlMs: number; now?: number },
): Promise<boolean> {
  validate(lease.messageId, opts.ttlMs);
  const expiresAt = (opts.now ?? Date.now()) + opts.ttlMs;
  try {
    await ctx.clients.ddb.send(
      new UpdateItemCommand({
        TableName: ctx.config.tableName,
        Key: marshall(keys.deliveryLease(lease.messageId)),
        UpdateExpression: 'SET #exp = :exp, #ttl = :ttl',
        ConditionExpression: '#token = :token',
        ExpressionAttributeNames: { '#exp': 'expiresAt', '#ttl': ATTR.ttl, '#token': 'token' },
        ExpressionAttributeValues: marshall({
          ':exp': expiresAt,
          ':ttl': Math.ceil(expiresAt / 1000) + CLEANUP_AFTER_SECONDS,
          ':token': lease.token,
        }),
      }),
    );
    lease.expiresAt = expiresAt;
    return true;
  } catch (err) {
    if (isConditionalCheckFailed(err)) return false;
    throw err;
  }
}

/** Drop the lease when the delivery settles. A lease another delivery holds now is left alone. */
export async function releaseDeliveryLease(ctx: Ctx, lease: DeliveryLease): Promise<void> {
  try {
    await ctx.clients.ddb.send(
      new DeleteItemCommand({
        TableName: ctx.config.tableName,
        Key: marshall(keys.deliveryLease(lease.messageId)),
        ConditionExpression: '#token = :token',
        ExpressionAttributeNames: { '#token': 'token' },
        ExpressionAttributeValues: marshall({ ':token': lease.token }),
      }),
    );
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
  }
}

/** A lease as the pipeline holds it: kept alive by its own heartbeat until released or let go. */
export interface HeldLease {
  acquired: true;
  /**
   * The copy will be delivered again (deferred, hopped, kept for retry, released): drop the lease
   * now so that delivery is not held back.
   */
  release(): Promise<void>;
  /**
   * The logical message is finished (acked): stop the heartbeat and leave the lease to expire by
   * itself (at most `ttlMs` later). No write: a finished message needs no release, and a late SQS
   * duplicate of it meanwhile is deferred rather than run.
   */
  expire(): void;
}

/** What the delivery pipeline needs: take the lease (kept alive until released) or learn it is held. */
export interface DeliveryLeasePort {
  /**
   * The held lease, or `{acquired: false, expiresAt}` when another live delivery of `messageId`
   * holds it until `expiresAt` (ms, this process's clock; 0 when the store could not say).
   * `signal` aborts when the delivery is abandoned (shutdown, deadline): the lease then stops
   * being extended, so it expires like a crashed holder's and another consumer can take the
   * message.
   */
  acquire(
    messageId: string,
    opts: { ttlMs: number; signal?: AbortSignal },
  ): Promise<HeldLease | { acquired: false; expiresAt: number }>;
}

/**
 * The lease as the consumer uses it: acquire with `ttlMs`, extend every `ttlMs / 3` while the
 * delivery runs (the lease's heartbeat); on settle, release it when the copy will come back, or
 * let it expire when the message is finished (saving the release's write on the common path). When the store cannot be reached the
 * delivery runs without the lease (logged): the event log stays exactly-once either way, and a
 * DynamoDB outage must not also stop the queue.
 */
export function deliveryLeasePort(ctx: Ctx, opts: { logger?: Pick<Logger, 'warn'> } = {}): DeliveryLeasePort {
  const warn = (m: string) => (opts.logger ?? console).warn(`[eve-world-aws] ${m}`);
  return {
    async acquire(messageId, { ttlMs, signal }) {
      let got: AcquireResult;
      try {
        got = await acquireDeliveryLease(ctx, messageId, { ttlMs });
      } catch (err) {
        warn(`delivery lease for ${messageId} unavailable, delivering without it: ${String(err)}`);
        return { acquired: true, release: async () => {}, expire: () => {} };
      }
      if (!got.acquired) return got;
      const lease = got.lease;
      const timer = setInterval(
        () => {
          extendDeliveryLease(ctx, lease, { ttlMs })
            .then((ok) => {
              if (!ok) warn(`delivery lease for ${messageId} was lost (expired and taken by another delivery)`);
            })
            .catch((err) => warn(`could not extend the delivery lease for ${messageId}: ${String(err)}`));
        },
        Math.max(100, Math.floor(ttlMs / 3)),
      );
      timer.unref?.();
      const stop = () => clearInterval(timer);
      signal?.addEventListener('abort', stop, { once: true });
      if (signal?.aborted) stop();
      return {
        acquired: true,
        expire() {
          stop();
          signal?.removeEventListener('abort', stop);
        },
        async release() {
          stop();
          signal?.removeEventListener('abort', stop);
          // A lease that cannot be released expires by itself after ttlMs.
          await releaseDeliveryLease(ctx, lease).catch((err) =>
            warn(`could not release the delivery lease for ${messageId}: ${String(err)}`),
          );
        },
      };
    },
  };
}
