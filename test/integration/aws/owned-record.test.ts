/**
 * The owned-record primitive (src/aws/owned-record.ts) against DynamoDB Local: each operation,
 * each one's SDK retry after a lost response (middleware that drops the response after the write
 * committed), a stale takeover refused, a claim past its TTL, a foreign owner refused, a newer
 * format refused, and the fence inside a real transaction (no clock compared: the taker's seen mark).
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { expression, when } from '../../../src/aws/expression.js';
import { type Key, OwnedRecord, type TableRef } from '../../../src/aws/owned-record.js';
import { isTransactionCanceled } from '../../../src/aws/sdk-errors.js';
import { FORMAT_ATTR, FORMATS, FormatError } from '../../../src/schema/formats.js';
import { createFixture, type Fixture, uniquePrefix } from '../../helpers/aws.js';

let f: Fixture;
let t: TableRef;
const made: ReturnType<typeof createClients>[] = [];

beforeAll(async () => {
  f = await createFixture({}, 'own');
  t = { ddb: f.clients.ddb, table: f.config.tableName };
});
afterAll(() => {
  for (const c of made) destroyClients(c);
  if (f) destroyClients(f.clients);
});

/** The record of a queue-claim-like protocol: owner, state, lease end, TTL. */
const leased = new OwnedRecord('test claim', { owner: 'owner', state: 'state', until: 'leaseUntil', expiresAt: 'ttl' });
/** A record with only an owner (like a nonce). */
const bare = new OwnedRecord('test nonce', { owner: 'token' });

const key = (): Key => ({ PK: `OWN#${uniquePrefix('k')}`, SK: 'OWN' });

async function rawItem(k: Key): Promise<Record<string, AttributeValue> | undefined> {
  const out = await t.ddb.send(
    new GetItemCommand({ TableName: t.table, Key: { PK: { S: k.PK }, SK: { S: k.SK } }, ConsistentRead: true }),
  );
  return out.Item;
}

/**
 * A table whose client loses the response of the first `command` once: the write commits, the
 * SDK sees a dropped connection and retries the very same request.
 */
function losingTable(command: string): { t: TableRef; sent: () => number } {
  const clients = createClients(f.config);
  made.push(clients);
  let sent = 0;
  clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName !== command) return next(args);
      const attempt = ++sent;
      const out = await next(args);
      if (attempt === 1)
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
      return out;
    },
    { step: 'finalizeRequest', priority: 'low', name: 'loseFirstResponse' },
  );
  return { t: { ddb: clients.ddb as DynamoDBClient, table: f.config.tableName }, sent: () => sent };
}

const NOW = 1_900_000_000_000;
const pendingBody = (until = NOW + 30_000) => ({
  state: 'pending',
  leaseUntil: until,
  messageId: 'm1',
  ttl: Math.floor(NOW / 1000) + 3600,
});

describe('claim', () => {
  it('puts the stamped record while absent, with exactly the fields given; another owner is refused and told the holder', async () => {
    const k = key();
    expect(await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW, mineIn: ['pending'] })).toEqual({ won: true });
    expect(await rawItem(k)).toEqual({
      PK: { S: k.PK },
      SK: { S: k.SK },
      [FORMAT_ATTR]: { N: String(FORMATS.records.current) },
      owner: { S: 'a' },
      state: { S: 'pending' },
      leaseUntil: { N: String(NOW + 30_000) },
      messageId: { S: 'm1' },
      ttl: { N: String(Math.floor(NOW / 1000) + 3600) },
    });
    const refused = await leased.claim(t, k, 'b', pendingBody(), { nowMs: NOW, mineIn: ['pending'] });
    expect(refused).toMatchObject({ won: false, current: { owner: 'a', state: 'pending', leaseUntil: NOW + 30_000 } });
    // Its own owner claims again (the same write): still won.
    expect(await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW, mineIn: ['pending'] })).toEqual({ won: true });
  });

  it("the owner's claim is refused outside the states it may rewrite (a sent claim stays sent)", async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW, mineIn: ['pending'] });
    expect(await leased.transition(t, k, 'a', { set: { state: 'sent' }, remove: ['leaseUntil'] })).toBe(true);
    const again = await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW, mineIn: ['pending'] });
    expect(again).toMatchObject({ won: false, current: { state: 'sent', owner: 'a' } });
  });

  it('a lost response: the SDK retries the put that already committed, and the claim is still won', async () => {
    const k = key();
    const lossy = losingTable('PutItemCommand');
    expect(await leased.claim(lossy.t, k, 'a', pendingBody(), { nowMs: NOW, mineIn: ['pending'] })).toEqual({
      won: true,
    });
    expect(lossy.sent()).toBe(2);
    expect((await rawItem(k))?.owner).toEqual({ S: 'a' });
    // A bare record (a nonce) likewise: the retry is the same write, not a "replay".
    const n = key();
    const lossyNonce = losingTable('PutItemCommand');
    expect(await bare.claim(lossyNonce.t, n, 'tok', { signedAt: 1 })).toEqual({ won: true });
    expect(lossyNonce.sent()).toBe(2);
    expect(await bare.claim(t, n, 'other', { signedAt: 1 })).toMatchObject({ won: false, current: { token: 'tok' } });
  });

  it('a record past its TTL is claimed by another owner (DynamoDB deletes lazily); one inside it is not', async () => {
    const k = key();
    await leased.claim(t, k, 'a', { ...pendingBody(), ttl: Math.floor(NOW / 1000) - 1 }, { nowMs: NOW });
    expect(await leased.claim(t, k, 'b', pendingBody(), { nowMs: NOW })).toEqual({ won: true });
    expect((await rawItem(k))?.owner).toEqual({ S: 'b' });
    // The new one lives for an hour: refused a second before it ends, won a second after.
    expect((await leased.claim(t, k, 'c', pendingBody(), { nowMs: NOW + 3_599_000 })).won).toBe(false);
    expect((await leased.claim(t, k, 'c', pendingBody(), { nowMs: NOW + 3_601_000 })).won).toBe(true);
  });

  it('as a transaction action: won with the other items, or the transaction is cancelled and nothing is written', async () => {
    const k = key();
    const other = key();
    const tx = (owner: string) =>
      t.ddb.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            leased.claimAction(t, k, owner, pendingBody(), { nowMs: NOW, mineIn: ['pending'] }),
            { Put: { TableName: t.table, Item: { PK: { S: other.PK }, SK: { S: other.SK }, by: { S: owner } } } },
          ],
        }),
      );
    await tx('a');
    expect((await rawItem(k))?.owner).toEqual({ S: 'a' });
    await tx('a'); // the same owner's retry: the same write
    await expect(tx('b')).rejects.toSatisfy(isTransactionCanceled);
    expect((await rawItem(other))?.by).toEqual({ S: 'a' });
  });

  it('bytes as the owner (a run key is owned by its wrapped key): its own put wins again, other bytes are refused', async () => {
    const k = key();
    const wrapped = new Uint8Array([1, 2, 3, 0, 255]);
    expect(await bare.claim(t, k, wrapped, { kmsKeyArn: 'arn' })).toEqual({ won: true });
    expect((await rawItem(k))?.token).toEqual({ B: wrapped });
    expect(await bare.claim(t, k, new Uint8Array(wrapped), { kmsKeyArn: 'arn' })).toEqual({ won: true });
    const refused = await bare.claim(t, k, new Uint8Array([1, 2, 3, 0, 254]), { kmsKeyArn: 'arn' });
    expect(refused).toMatchObject({ won: false, current: { token: wrapped } });
  });

  it('a record without a TTL field never lapses: a bare claim is refused however late', async () => {
    const k = key();
    await bare.claim(t, k, 'tok', { ttl: 1 });
    expect((await bare.claim(t, k, 'other', { ttl: 1 }, { nowMs: NOW })).won).toBe(false);
  });
});

describe('transition', () => {
  it('renews and completes for the owner only; a foreign owner or a state outside `from` is refused', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW });
    expect(await leased.transition(t, k, 'b', { set: { leaseUntil: 1 } })).toBe(false);
    expect(await leased.transition(t, k, 'a', { set: { leaseUntil: NOW + 60_000 } }, { from: ['pending'] })).toBe(true);
    expect((await rawItem(k))?.leaseUntil).toEqual({ N: String(NOW + 60_000) });
    expect(await leased.transition(t, k, 'a', { set: { state: 'sent' }, remove: ['leaseUntil'] })).toBe(true);
    expect(await leased.transition(t, k, 'a', { set: { state: 'done' } }, { from: ['pending'] })).toBe(false);
    const item = await leased.read(t, k);
    expect(item).toMatchObject({ owner: 'a', state: 'sent' });
    expect(item).not.toHaveProperty('leaseUntil');
    // On an absent record: refused, nothing created.
    const none = key();
    expect(await leased.transition(t, none, 'a', { set: { state: 'sent' } })).toBe(false);
    expect(await rawItem(none)).toBeUndefined();
  });

  it('a lost response: the retried update passes again (the owner is still its own)', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW });
    const lossy = losingTable('UpdateItemCommand');
    expect(
      await leased.transition(lossy.t, k, 'a', { set: { state: 'sent', sentAt: 'x' }, remove: ['leaseUntil'] }),
    ).toBe(true);
    expect(lossy.sent()).toBe(2);
    expect(await leased.read(t, k)).toMatchObject({ state: 'sent', sentAt: 'x' });
  });
});

describe('takeOver', () => {
  it('wins on the owner and lease end it read; a second taker with the same stale read is refused', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(NOW - 1), { nowMs: NOW });
    const seen = await leased.read(t, k);
    expect(seen).toBeDefined();
    const set = { leaseUntil: NOW + 30_000, previousOwner: 'a' };
    expect(await leased.takeOver(t, k, seen!, 'b', { set }, { from: ['pending'] })).toBe(true);
    expect(await leased.takeOver(t, k, seen!, 'c', { set }, { from: ['pending'] })).toBe(false);
    expect(await leased.read(t, k)).toMatchObject({ owner: 'b', leaseUntil: NOW + 30_000, previousOwner: 'a' });
    // The winner's retry of its own takeover passes (same owner), and so does nothing else.
    expect(await leased.takeOver(t, k, seen!, 'b', { set }, { from: ['pending'] })).toBe(true);
  });

  it('is refused once the record moved on (renewed, or out of the `from` states)', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(NOW - 1), { nowMs: NOW });
    const seen = (await leased.read(t, k))!;
    await leased.transition(t, k, 'a', { set: { leaseUntil: NOW + 30_000 } });
    expect(await leased.takeOver(t, k, seen, 'b', { set: { leaseUntil: 5 } }, { from: ['pending'] })).toBe(false);
    const seen2 = (await leased.read(t, k))!;
    await leased.transition(t, k, 'a', { set: { state: 'sent' } });
    expect(await leased.takeOver(t, k, { ...seen2, state: 'sent' }, 'b', { set: {} }, { from: ['pending'] })).toBe(
      false,
    );
    expect(await leased.read(t, k)).toMatchObject({ owner: 'a', state: 'sent' });
  });

  it('a lost response: the retried takeover passes again (the record is already the taker’s)', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(NOW - 1), { nowMs: NOW });
    const seen = (await leased.read(t, k))!;
    const lossy = losingTable('UpdateItemCommand');
    expect(
      await leased.takeOver(lossy.t, k, seen, 'b', { set: { leaseUntil: NOW + 30_000 } }, { from: ['pending'] }),
    ).toBe(true);
    expect(lossy.sent()).toBe(2);
    expect(await leased.read(t, k)).toMatchObject({ owner: 'b', leaseUntil: NOW + 30_000 });
  });
});

describe('release', () => {
  it('deletes for the owner only (in a `from` state); a foreign owner is refused and the record stays', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW });
    expect(await leased.release(t, k, 'b', { from: ['pending'] })).toBe(false);
    expect(await rawItem(k)).toBeDefined();
    await leased.transition(t, k, 'a', { set: { state: 'sent' } });
    expect(await leased.release(t, k, 'a', { from: ['pending'] })).toBe(false);
    expect(await rawItem(k)).toBeDefined();
    await leased.transition(t, k, 'a', { set: { state: 'pending' } });
    expect(await leased.release(t, k, 'a', { from: ['pending'] })).toBe(true);
    expect(await rawItem(k)).toBeUndefined();
  });

  it('a lost response: the retried delete finds the record gone and reports it released', async () => {
    const k = key();
    await leased.claim(t, k, 'a', pendingBody(), { nowMs: NOW });
    const lossy = losingTable('DeleteItemCommand');
    expect(await leased.release(lossy.t, k, 'a')).toBe(true);
    expect(lossy.sent()).toBe(2);
    expect(await rawItem(k)).toBeUndefined();
  });
});

describe('update (a change any process may make, under a condition)', () => {
  it('applies only while its condition holds', async () => {
    const k = key();
    await bare.claim(t, k, 'tok', { ttl: 10, pendingTtl: 10 });
    const asCreated = when.all(when.has('pendingTtl'), when.same('ttl', 'pendingTtl'));
    expect(await bare.update(t, k, { remove: ['ttl', 'pendingTtl'] }, asCreated)).toBe(true);
    expect(await bare.update(t, k, { remove: ['ttl', 'pendingTtl'] }, asCreated)).toBe(false);
    const item = await rawItem(k);
    expect(item).not.toHaveProperty('ttl');
    expect(item).not.toHaveProperty('pendingTtl');
    expect(await bare.update(t, key(), { set: { x: 1 } }, when.present)).toBe(false);
  });
});

describe('formats', () => {
  /** A record as a build of a newer records format wrote it. */
  async function newer(k: Key, owner: string): Promise<void> {
    await t.ddb.send(
      new PutItemCommand({
        TableName: t.table,
        Item: {
          PK: { S: k.PK },
          SK: { S: k.SK },
          [FORMAT_ATTR]: { N: String(FORMATS.records.current + 1) },
          owner: { S: owner },
          state: { S: 'pending' },
          leaseUntil: { N: '1' },
        },
      }),
    );
  }

  it('a newer format is refused on read and on a refused claim, never misread', async () => {
    const k = key();
    await newer(k, 'a');
    await expect(leased.read(t, k)).rejects.toBeInstanceOf(FormatError);
    await expect(leased.read(t, k)).rejects.toThrow(/records format \d+; this build .* reads records formats/);
    await expect(leased.claim(t, k, 'b', pendingBody(), { nowMs: NOW })).rejects.toBeInstanceOf(FormatError);
  });

  it("a newer record is never changed: its owner's update and release are refused with a FormatError; another's are plain refusals", async () => {
    const k = key();
    await newer(k, 'a');
    await expect(leased.transition(t, k, 'a', { set: { state: 'sent' } })).rejects.toBeInstanceOf(FormatError);
    await expect(leased.release(t, k, 'a')).rejects.toBeInstanceOf(FormatError);
    expect(await leased.transition(t, k, 'b', { set: { state: 'sent' } })).toBe(false);
    expect(await leased.release(t, k, 'b')).toBe(false);
    const seen = { owner: 'a', leaseUntil: 1 };
    await expect(leased.takeOver(t, k, seen, 'b', { set: {} })).rejects.toBeInstanceOf(FormatError);
    expect((await rawItem(k))?.state).toEqual({ S: 'pending' });
    expect((await rawItem(k))?.owner).toEqual({ S: 'a' });
  });
});

describe('fence (the claim as a condition of a transaction action, on a host item)', () => {
  const lease = new OwnedRecord('test lease', { owner: 'leaseToken', until: 'leaseUntil', beat: 'leaseBeat' });

  async function hostItem(k: Key, fields: Record<string, AttributeValue>): Promise<void> {
    await t.ddb.send(
      new PutItemCommand({
        TableName: t.table,
        Item: { PK: { S: k.PK }, SK: { S: k.SK }, ver: { N: '1' }, ...fields },
      }),
    );
  }

  /** A transaction that bumps `ver` under the fence, as `step_started` does. */
  async function startUnder(k: Key, token: string, lapsed?: Record<string, unknown>): Promise<boolean> {
    const fence = lease.fence(token, lapsed);
    try {
      await t.ddb.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            expression()
              .set({ ver: 2 })
              .when(when.is('ver', 1), fence)
              .toUpdate(t.table, { PK: { S: k.PK }, SK: { S: k.SK } }, { returnOld: false }),
          ],
        }),
      );
      return true;
    } catch (err) {
      if (isTransactionCanceled(err)) return false;
      throw err;
    }
  }

  it('passes with no lease, our own, or exactly the lapsed lease the taker saw; refuses any other foreign lease, whatever its end says', async () => {
    const none = key();
    await hostItem(none, {});
    expect(await startUnder(none, 'me')).toBe(true);
    const mine = key();
    await hostItem(mine, { leaseToken: { S: 'me' }, leaseUntil: { N: String(NOW + 10_000) } });
    expect(await startUnder(mine, 'me')).toBe(true);
    // An end long past on any clock is no permission: only the taker's own judgement is.
    const foreign = key();
    await hostItem(foreign, { leaseToken: { S: 'other' }, leaseUntil: { N: '1' }, leaseBeat: { N: '4' } });
    expect(await startUnder(foreign, 'me')).toBe(false);
    expect((await rawItem(foreign))?.ver).toEqual({ N: '1' });
    // Judged lapsed on what was seen: passes only while the lease is exactly that.
    const seen = { leaseToken: 'other', leaseUntil: 1, leaseBeat: 4 };
    expect(await startUnder(foreign, 'me', { ...seen, leaseBeat: 3 })).toBe(false); // a heartbeat since
    expect(await startUnder(foreign, 'me', { ...seen, leaseUntil: 2 })).toBe(false); // an older build's
    expect(await startUnder(foreign, 'me', seen)).toBe(true);
    // An older build's lease has no count: seen absent, it must still be absent.
    const old = key();
    await hostItem(old, { leaseToken: { S: 'other' }, leaseUntil: { N: '7' } });
    expect(await startUnder(old, 'me', { leaseToken: 'other', leaseUntil: 7, leaseBeat: 0 })).toBe(false);
    expect(await startUnder(old, 'me', { leaseToken: 'other', leaseUntil: 7 })).toBe(true);
    // Renew and release on the host item: its other fields stay.
    expect(await lease.transition(t, mine, 'me', { set: { leaseUntil: NOW + 20_000 } })).toBe(true);
    expect(await lease.transition(t, mine, 'other', { remove: ['leaseToken', 'leaseUntil'] })).toBe(false);
    expect(await lease.transition(t, mine, 'me', { remove: ['leaseToken', 'leaseUntil'] })).toBe(true);
    expect(await rawItem(mine)).toEqual({ PK: { S: mine.PK }, SK: { S: mine.SK }, ver: { N: '2' } });
    // heldAs: a revoke under the seen mark (the backstop's), refused once the holder renewed.
    const held = key();
    await hostItem(held, { leaseToken: { S: 'h' }, leaseUntil: { N: '9' }, leaseBeat: { N: '1' } });
    const at = { leaseToken: 'h', leaseUntil: 9, leaseBeat: 1 };
    expect(await lease.transition(t, held, 'h', { set: { leaseBeat: 2, leaseUntil: 10 } })).toBe(true);
    expect(await lease.update(t, held, { remove: ['leaseToken', 'leaseUntil', 'leaseBeat'] }, lease.heldAs(at))).toBe(
      false,
    );
    expect(
      await lease.update(
        t,
        held,
        { remove: ['leaseToken', 'leaseUntil', 'leaseBeat'] },
        lease.heldAs({ ...at, leaseBeat: 2, leaseUntil: 10 }),
      ),
    ).toBe(true);
    expect(await rawItem(held)).toEqual({ PK: { S: held.PK }, SK: { S: held.SK }, ver: { N: '1' } });
  });

  it('renew only raises the heartbeat count: a late or retried renewal changes nothing and still reports the lease held; another owner’s is refused', async () => {
    const k = key();
    await hostItem(k, { leaseToken: { S: 'h' }, leaseUntil: { N: '100' } }); // an older build's: no count
    expect(await lease.renew(t, k, 'h', 1, { leaseUntil: 200 })).toBe(true);
    expect(await lease.renew(t, k, 'h', 3, { leaseUntil: 400 })).toBe(true);
    // Beat 2 arrives after beat 3 (it hung in its retries), and beat 3 is retried: both held, nothing moves.
    expect(await lease.renew(t, k, 'h', 2, { leaseUntil: 300 })).toBe(true);
    expect(await lease.renew(t, k, 'h', 3, { leaseUntil: 400 })).toBe(true);
    expect(await rawItem(k)).toMatchObject({ leaseBeat: { N: '3' }, leaseUntil: { N: '400' } });
    expect(await lease.renew(t, k, 'other', 9, { leaseUntil: 900 })).toBe(false);
    expect(await rawItem(k)).toMatchObject({ leaseToken: { S: 'h' }, leaseBeat: { N: '3' } });
  });
});
