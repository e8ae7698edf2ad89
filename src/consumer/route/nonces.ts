/**
 * Durable replay guard of the flow route: every accepted delivery signature is claimed with one
 * conditional PutItem on `NONCE#<signature>` (src/schema/keys.ts), so a captured request replayed
 * to any instance (not just the same process) inside the signature's 300 s window is refused.
 *
 * Invariants:
 * - A signature is accepted at most once across all instances sharing the table.
 * - Safe when the SDK retries the put after a lost response: each claim carries a random token, and
 *   the condition `attribute_not_exists(PK) OR token = :mine` lets this claim's own retry through,
 *   so a lost response never turns a first delivery into a "replay" (the owned-record primitive's
 *   claim, src/aws/owned-record.ts, with the token as owner).
 * - Items expire by TTL after twice the tolerance (covers clock skew between instances); a request
 *   older than the tolerance is refused by its timestamp before it gets here.
 */
import { randomUUID } from 'node:crypto';
import { OwnedRecord, tableOf } from '../../aws/owned-record.js';
import type { WorldContext } from '../../context/world-context.js';
import { ATTR, keys } from '../../schema/keys.js';
import { type NonceStore, SIGNATURE_TOLERANCE_SECONDS } from '../shared/signing.js';

/** The `NONCE#` item as an owned record: its owner is the claim's `token`. */
const nonces = new OwnedRecord('delivery nonce', { owner: 'token' });

export class DynamoNonceStore implements NonceStore {
  constructor(
    private readonly ctx: Pick<WorldContext, 'config' | 'clients'>,
    private readonly toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
  ) {}

  async claim(signature: string, timestamp: number): Promise<boolean> {
    const claim = await nonces.claim(tableOf(this.ctx), keys.deliveryNonce(signature), randomUUID(), {
      signedAt: timestamp,
      [ATTR.ttl]: timestamp + 2 * this.toleranceSeconds,
    });
    return claim.won;
  }
}
