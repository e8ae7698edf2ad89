/**
 * The owned record: a DynamoDB item (or a few fields of a host item) that one owner at a time
 * holds. The one primitive behind the World's ownership protocols: the queue's idempotency claims
 * (src/queue/idempotency.ts), the delivery nonces (src/consumer/route/nonces.ts), the run keys
 * (src/encryption/run-keys.ts) and the step lease on the step item
 * (src/storage/write/step-lease.ts). Each only names its fields ({@link OwnedFields}) and says in
 * its own header when it claims, moves or lets go. The operations (claim, transition, renew,
 * takeOver, release, update, remove, read; claimAction and fence for transactions) each say what
 * they condition on.
 *
 * When a lease has lapsed is the protocol's judgement, not this module's: the fence and the
 * takeover compare no clocks, they only pin what the taker saw (a protocol that judged by a
 * duration it measured itself takes over with a write the holder's next renewal would have broken).
 *
 * Invariants (enforced here, so no protocol writes a condition by hand):
 * - Every write is conditional, and the condition passes again for the same writer with the same
 *   values: an SDK retry after a lost response is the same write, with the same effect (a claim's
 *   retry finds the record its own; a transition's, its own owner; a takeover's, its own token).
 * - Every item a claim puts is format-stamped (src/schema/formats.ts). Every item read, or returned
 *   by a failed condition, is format-checked: a newer format is refused with a FormatError, never
 *   misread. Updates and deletes are also conditioned on a format this build writes or reads, so a
 *   newer record is never changed; when that is the only reason a change was refused, the refusal
 *   is the FormatError.
 * - The protocols' keys, field names and values are theirs: this module adds no attribute, so items
 *   stay byte-compatible with builds that wrote them by hand.
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  type Put,
  PutItemCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { assertItemFormat, FORMAT_ATTR, FORMATS, formatStamp, itemFormatOf } from '../schema/formats.js';
import { type Cond, expression, readInput, when } from './expression.js';
import { fromAttr, keysOf, toAttr, toItem } from './item-codec.js';
import { conditionFailureItem, isConditionalCheckFailed } from './sdk-errors.js';

export interface TableRef {
  readonly ddb: DynamoDBClient;
  readonly table: string;
}

/** The table of a World context (`clients.ddb`, `config.tableName`). */
export function tableOf(ctx: { clients: { ddb: DynamoDBClient }; config: { tableName: string } }): TableRef {
  return { ddb: ctx.clients.ddb, table: ctx.config.tableName };
}

export type Key = { PK: string; SK: string };
/** An owner token: a random string, or bytes (a run key's wrapped key). */
export type Owner = string | Uint8Array;
/** A decoded record: field name -> value (numbers, strings, bytes...). */
export type Fields = Record<string, unknown>;

/** What an update sets and removes (field names as stored). */
export interface Change {
  set?: Fields;
  remove?: readonly string[];
}

/** The fields a protocol keeps its ownership in, as stored. */
export interface OwnedFields {
  owner: string;
  /** For records that move between states. */
  state?: string;
  /** When the holder's lease ends (epoch ms), for records that can lapse and be taken over. */
  until?: string;
  /** A counter the holder raises with every renewal (a heartbeat), for leases watched by others. */
  beat?: string;
  /**
   * The TTL attribute (epoch s) past which a claim may replace the record. DynamoDB deletes
   * expired items lazily (up to days later), so the claim re-checks it.
   */
  expiresAt?: string;
}

export type ClaimResult = { won: true } | { won: false; current?: Fields };
/** `nowMs`: the clock the TTL is judged by; `mineIn`: the states in which a record of this owner counts as ours. */
type ClaimOptions = { nowMs?: number; mineIn?: readonly string[] };
/** The states a change may leave (for records with a state). */
type FromStates = { from?: readonly string[] };

export class OwnedRecord {
  /**
   * @param what names a record in errors, e.g. `queue claim` (followed by its key)
   * @param fields where the protocol keeps owner, state, lease end and TTL
   */
  constructor(
    readonly what: string,
    readonly fields: OwnedFields,
  ) {}

  /**
   * Put the record unless another owner holds the key: wins while the key is absent, past its
   * TTL (when the protocol has one), or already this owner's (in one of `mineIn`'s states, when
   * given). `body` is every other field; the item is format-stamped. Refused: the current record.
   */
  async claim(t: TableRef, key: Key, owner: Owner, body: Fields, o: ClaimOptions = {}): Promise<ClaimResult> {
    try {
      await t.ddb.send(new PutItemCommand(this.#claimPut(t, key, owner, body, o)));
      return { won: true };
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
      const old = conditionFailureItem(err);
      return { won: false, current: old ? this.#decode(key, old) : await this.read(t, key) };
    }
  }

  /**
   * {@link claim} as a transaction action, for a claim written together with other items; its
   * refusal is the transaction's cancellation (with the current record, `ALL_OLD`).
   */
  claimAction(t: TableRef, key: Key, owner: Owner, body: Fields, o: ClaimOptions = {}): TransactWriteItem {
    return { Put: this.#claimPut(t, key, owner, body, o) };
  }

  #claimPut(t: TableRef, key: Key, owner: Owner, body: Fields, o: ClaimOptions): Put {
    const f = this.fields;
    const mine = this.#held(owner, o.mineIn);
    const free = f.expiresAt
      ? when.any(when.absent, when.below(f.expiresAt, Math.floor((o.nowMs ?? Date.now()) / 1000)), mine)
      : when.any(when.absent, mine);
    const item = { ...toItem({ ...body, [f.owner]: owner }), ...keysOf(key), ...formatStamp('records') };
    return expression().when(free).toPut(t.table, item, { returnOld: true }).Put as Put;
  }

  /**
   * Change the record while `owner` holds it (and, with `from`, while its state is one of them):
   * renew (a new `until`), complete (a new state), or release a host item's fields (remove them).
   * False when the record is not, or no longer, this owner's.
   */
  transition(
    t: TableRef,
    key: Key,
    owner: Owner,
    change: Change,
    o: FromStates & { also?: Cond } = {},
  ): Promise<boolean> {
    const held = this.#held(owner, o.from);
    return this.update(t, key, change, o.also ? when.all(held, o.also) : held, [owner]);
  }

  /**
   * A renewal that raises the heartbeat count (`beat`) to `beat`: applied only while `owner` holds
   * the record and its count is below `beat` (absent counts as below), so counts only grow however
   * renewals overlap or arrive late. True when applied, or when the record is still `owner`'s with
   * a count at or above `beat` (a later renewal landed first, or this one's SDK retry): the lease
   * is still held. False when the record is no longer `owner`'s.
   */
  async renew(t: TableRef, key: Key, owner: Owner, beat: number, set: Fields): Promise<boolean> {
    const f = this.fields;
    if (!f.beat) throw new TypeError(`${this.what}: a renewal needs a heartbeat count field`);
    const raise = when.any(when.lacks(f.beat), when.below(f.beat, beat));
    if (await this.transition(t, key, owner, { set: { ...set, [f.beat]: beat } }, { also: raise })) return true;
    const now = await this.read(t, key, { fields: [f.owner, f.beat] });
    return now !== undefined && sameOwner(toAttr(now[f.owner]), owner);
  }

  /**
   * Take the record over from the holder `seen` (read, with a lapsed lease): succeeds only while
   * the record still has the owner, lease end and heartbeat count that were read (and a state of
   * `from`), or is already `owner`'s (this takeover's retry). Sets the owner and `change.set`.
   */
  takeOver(t: TableRef, key: Key, seen: Fields, owner: Owner, change: Change, o: FromStates = {}): Promise<boolean> {
    const f = this.fields;
    const who = when.any(when.is(f.owner, owner), this.heldAs(seen));
    const cond = f.state && o.from ? when.all(when.oneOf(f.state, o.from), who) : who;
    const seenOwner = seen[f.owner];
    const holders = typeof seenOwner === 'string' || seenOwner instanceof Uint8Array ? [owner, seenOwner] : [owner];
    return this.update(t, key, { ...change, set: { ...change.set, [f.owner]: owner } }, cond, holders);
  }

  /**
   * Delete the record while `owner` holds it (in a state of `from`); true also when it is gone
   * (a retry after a lost response). False when another owner holds it.
   */
  release(t: TableRef, key: Key, owner: Owner, o: FromStates = {}): Promise<boolean> {
    return this.#delete(t, key, when.any(when.absent, when.all(when.readable, this.#held(owner, o.from))), [owner]);
  }

  /**
   * Delete the record under `cond` (and a readable format), whoever holds it. False when the
   * condition fails, which includes a retry after a lost response (the record is gone).
   */
  remove(t: TableRef, key: Key, cond: Cond): Promise<boolean> {
    return this.#delete(t, key, when.all(when.readable, cond), undefined);
  }

  /** DeleteItem under `cond`; a failed condition is refused (see #refused) for `holders`. */
  async #delete(t: TableRef, key: Key, cond: Cond, holders: readonly Owner[] | undefined): Promise<boolean> {
    try {
      await t.ddb.send(
        new DeleteItemCommand(expression().when(cond).toDeleteItem(t.table, keysOf(key), { returnOld: true })),
      );
      return true;
    } catch (err) {
      return this.#refused(key, err, holders);
    }
  }

  async read(
    t: TableRef,
    key: Key,
    o: { consistent?: boolean; fields?: readonly string[] } = {},
  ): Promise<Fields | undefined> {
    const out = await t.ddb.send(
      new GetItemCommand({
        TableName: t.table,
        Key: keysOf(key),
        ConsistentRead: o.consistent ?? true,
        ...(o.fields ? readInput({ projection: [...o.fields, FORMAT_ATTR] }) : {}),
      }),
    );
    return out.Item ? this.#decode(key, out.Item) : undefined;
  }

  /**
   * The condition that the record is still held exactly as `seen` shows it: its owner, lease end
   * and heartbeat count (each absent if it was absent). A renewal since changes one of them, so a
   * write under this condition is one the holder's next renewal would have broken.
   */
  heldAs(seen: Fields): Cond {
    const f = this.fields;
    const parts = [when.asSeen(f.owner, seen[f.owner])];
    if (f.until) parts.push(when.asSeen(f.until, seen[f.until]));
    if (f.beat) parts.push(when.asSeen(f.beat, seen[f.beat]));
    return parts.length === 1 ? parts[0] : when.all(...parts);
  }

  /**
   * The claim's condition for a transaction action on a host item: no lease (`until` absent),
   * this owner's, or (`lapsed`, the taker's judgement) the lease exactly as the taker saw it
   * ({@link heldAs}). For the step lease inside `step_started`. No clock is compared here.
   */
  fence(owner: Owner, lapsed?: Fields): Cond {
    const f = this.fields;
    if (!f.until) throw new TypeError(`${this.what}: a fence needs a lease end field`);
    const free = [when.lacks(f.until), when.is(f.owner, owner)];
    return when.any(...free, ...(lapsed ? [this.heldAs(lapsed)] : []));
  }

  #held(owner: Owner, from: readonly string[] | undefined): Cond {
    const f = this.fields;
    return f.state && from ? when.all(when.is(f.owner, owner), when.oneOf(f.state, from)) : when.is(f.owner, owner);
  }

  /**
   * Change the record under `cond` (and a readable format). False when the condition fails.
   * `holders`: the owners for whom a refusal can only be the format's (none: anyone's).
   */
  async update(t: TableRef, key: Key, change: Change, cond: Cond, holders?: readonly Owner[]): Promise<boolean> {
    const update = expression()
      .set(change.set ?? {})
      .remove(...(change.remove ?? []))
      .when(when.readable, cond);
    try {
      await t.ddb.send(new UpdateItemCommand(update.toUpdateItem(t.table, keysOf(key))));
      return true;
    } catch (err) {
      return this.#refused(key, err, holders);
    }
  }

  /**
   * A refused change: false, unless the record is of a format this build does not write and is held
   * by one of `holders` (or `holders` is not given: an ownerless update), so that the format was
   * what refused it: then the FormatError.
   */
  #refused(key: Key, err: unknown, holders: readonly Owner[] | undefined): false {
    if (!isConditionalCheckFailed(err)) throw err;
    const old = conditionFailureItem(err);
    const fmt = old ? itemFormatOf(old) : undefined;
    if (old && (fmt === undefined || fmt > FORMATS.records.current)) {
      if (!holders || holders.some((h) => sameOwner(old[this.fields.owner], h))) this.#decode(key, old);
    }
    return false;
  }

  #decode(key: Key, item: Record<string, AttributeValue>): Fields {
    assertItemFormat(item, 'records', `${this.what} ${key.PK} / ${key.SK}`);
    const out: Fields = {};
    for (const [k, v] of Object.entries(item)) out[k] = fromAttr(v);
    return out;
  }
}

function sameOwner(stored: AttributeValue | undefined, owner: Owner): boolean {
  if (stored === undefined) return false;
  if (typeof owner === 'string') return stored.S === owner;
  return stored.B !== undefined && Buffer.from(stored.B).equals(Buffer.from(owner));
}
