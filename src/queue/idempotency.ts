/**
 * Durable idempotency-key dedupe for `queue()`, in two phases so that "claimed" always means "sent,
 * or being sent by a live owner".
 *
 * `QKEY#<key>` item:
 * - `pending {owner, leaseUntil, messageId}`: written by {@link claimIdempotencyKey} before the
 *   send;
 * - `sent {messageId, sentAt}`: written by {@link markIdempotencyKeySent} after SQS (or the
 *   Scheduler) accepted the message.
 * An item with neither state was not written here: the claim fails loudly rather than guess.
 *
 * The claim (src/aws/owned-record.ts, `claim`) succeeds while no claim exists, its TTL has passed,
 * or it is this sender's own (an SDK retry of a lost response must not report a duplicate).
 * Otherwise the stored item decides:
 * - `sent` -> a duplicate: the first message's id is returned and nothing is sent;
 * - `pending` with a live lease -> wait (short polls) until it becomes `sent` or its lease ends;
 * - `pending` with an expired lease (its owner died between claim and send, or the send and the
 *   release both failed) -> taken over with a conditional update on the old owner and lease; the
 *   taker sends, under the same message id.
 *
 * Invariants:
 * - A key is reported as a duplicate only when its item is `sent`, i.e. after a message for it was
 *   accepted (a crash between the accepted send and `markIdempotencyKeySent` leaves `pending`: the
 *   key is taken over after the lease and sent again, a duplicate delivery, never a loss).
 * - A used key keeps deduping for `idempotencyTtlSeconds` (the runtime mints fresh keys for re-arms
 *   and relies on a used key staying used).
 * - A claim whose send failed is released (conditional on still owning it), so a retry can send.
 */
import { randomUUID } from 'node:crypto';
import { when } from '../aws/expression.js';
import { OwnedRecord, tableOf } from '../aws/owned-record.js';
import { sleep } from '../aws/sleep.js';
import type { WorldContext } from '../context/world-context.js';
import { ATTR, keys } from '../schema/keys.js';

/** How long a pending claim protects its owner's send before another sender may take it over. */
export const IDEMPOTENCY_LEASE_MS = 30_000;

export type ClaimResult =
  /** This caller owns the key and must send `messageId` (a taken-over claim keeps the first id). */
  | { claimed: true; messageId: string; owner: string; tookOver: boolean }
  /** The key was already used: a message with this id was accepted. */
  | { claimed: false; messageId: string };

export interface ClaimOptions {
  now?: () => number;
  leaseMs?: number;
  /** Owner token; a fresh one per claim by default. */
  owner?: string;
  sleep?: (ms: number) => Promise<void>;
}

/** The `QKEY#` item as an owned record: `owner`, `state` (pending, sent), `leaseUntil`, the TTL. */
const claims = new OwnedRecord('queue claim', {
  owner: 'owner',
  state: 'state',
  until: 'leaseUntil',
  expiresAt: ATTR.ttl,
});
const PENDING = ['pending'] as const;

export async function claimIdempotencyKey(
  ctx: WorldContext,
  idempotencyKey: string,
  messageId: string,
  queueName: string,
  opts: ClaimOptions = {},
): Promise<ClaimResult> {
  const now = opts.now ?? Date.now;
  const leaseMs = opts.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  const pause = opts.sleep ?? ((ms: number) => sleep(ms));
  const owner = opts.owner ?? randomUUID();
  const table = tableOf(ctx);
  const Key = keys.qkey(idempotencyKey);
  let wait = 25;
  for (;;) {
    const t = now();
    const nowSec = Math.floor(t / 1000);
    const claim = await claims.claim(
      table,
      Key,
      owner,
      {
        state: 'pending',
        leaseUntil: t + leaseMs,
        messageId,
        queueName,
        createdAt: new Date(t).toISOString(),
        [ATTR.ttl]: nowSec + ctx.config.idempotencyTtlSeconds,
      },
      { nowMs: t, mineIn: PENDING },
    );
    if (claim.won) return { claimed: true, messageId, owner, tookOver: false };
    const old = claim.current;
    if (!old) {
      // Deleted (released) in between: claim again, after a short pause.
      await pause(wait);
      continue;
    }
    if (old.state === 'sent') return { claimed: false, messageId: String(old.messageId ?? '') };
    if (old.state !== 'pending') {
      throw new Error(
        `idempotency key ${idempotencyKey}: its item in ${ctx.config.tableName} has no state (pending or sent), so it was not written by this World; delete it or use another key`,
      );
    }
    const leaseUntil = typeof old.leaseUntil === 'number' ? old.leaseUntil : 0;
    if (leaseUntil > t) {
      // Being sent by a live owner: wait for `sent` (a duplicate) or for the lease to end.
      await pause(Math.min(wait, Math.max(1, leaseUntil - t)));
      wait = Math.min(wait * 2, 1000);
      continue;
    }
    // The owner's lease ended with nothing accepted: take the claim over, keeping its message id.
    // Re-applying our own takeover (a retry after a lost response) also passes.
    const takenId = typeof old.messageId === 'string' ? old.messageId : messageId;
    const set = {
      leaseUntil: t + leaseMs,
      [ATTR.ttl]: nowSec + ctx.config.idempotencyTtlSeconds,
      previousOwner: typeof old.owner === 'string' ? old.owner : '',
    };
    if (await claims.takeOver(table, Key, old, owner, { set }, { from: PENDING })) {
      return { claimed: true, messageId: takenId, owner, tookOver: true };
    }
    // Someone else took it over or it was sent meanwhile: look again.
  }
}

/**
 * Record that the message of a claim was accepted. Conditional on still owning the claim; a claim
 * taken over meanwhile (this owner was slower than its lease) is left to its new owner. Returns
 * whether the claim was marked. `sent` by us already (a retried update) also passes: the write is
 * the same.
 */
export function markIdempotencyKeySent(
  ctx: WorldContext,
  idempotencyKey: string,
  owner: string,
  now = Date.now(),
): Promise<boolean> {
  return claims.transition(tableOf(ctx), keys.qkey(idempotencyKey), owner, {
    set: { state: 'sent', sentAt: new Date(now).toISOString() },
    remove: ['leaseUntil'],
  });
}

/** Drop our own pending claim (after a failed send). Never removes a claim another sender now holds. */
export async function releaseIdempotencyKey(ctx: WorldContext, idempotencyKey: string, owner: string): Promise<void> {
  await claims.release(tableOf(ctx), keys.qkey(idempotencyKey), owner, { from: PENDING });
}

/**
 * Re-open a used key (the liveness backstop, src/backstop/wake.ts): delete its claim if it is
 * `sent`, so the next `queue()` under the key sends again. Core re-queues a stranded pending step
 * under the key of its first dispatch, which stays used for `idempotencyTtlSeconds`; when that
 * message was lost, only a re-opened key lets the re-queue out. Conditional on `sent` (a `pending`
 * claim has a live or expiring owner, whom the lease takeover above serves); applying it twice
 * deletes nothing more. At worst the re-send is a duplicate, which the step lease makes safe.
 * Returns whether a claim was deleted.
 */
export function reopenSentIdempotencyKey(ctx: WorldContext, idempotencyKey: string): Promise<boolean> {
  return claims.remove(tableOf(ctx), keys.qkey(idempotencyKey), when.is('state', 'sent'));
}
