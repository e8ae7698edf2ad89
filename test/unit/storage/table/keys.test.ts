/**
 * Pure storage logic (no AWS): the list-shard hash spreads ids evenly, and every cursor codec
 * round-trips and answers a bad cursor with a 400 naming the field.
 */
import { expect, it } from 'vitest';
import { LIST_SHARDS, shardOf } from '../../../../src/schema/keys.js';
import { decodeShardCursor, encodeShardCursor } from '../../../../src/storage/read/sharded-page.js';
import {
  decodeEventCursor,
  decodeKeyCursor,
  encodeEventCursor,
  encodeKeyCursor,
} from '../../../../src/storage/table/pagination.js';

it('shardOf spreads ids evenly: over 16,000 run ids no shard holds more than 1/16 + 20%', () => {
  const counts = new Array(LIST_SHARDS).fill(0);
  // ULID-shaped ids from a seeded generator: the same 16,000 every run, and cheap to make.
  const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let seed = 0x2f6b_1d3a;
  const next = () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return seed >>> 27;
  };
  const fakeUlid = () => Array.from({ length: 26 }, () => CROCKFORD[next()]).join('');
  for (let i = 0; i < 16_000; i++) counts[shardOf(`wrun_${fakeUlid()}`)]++;
  expect(Math.max(...counts)).toBeLessThanOrEqual(1.2 * (16_000 / LIST_SHARDS));
  expect(Math.min(...counts)).toBeGreaterThanOrEqual(0.8 * (16_000 / LIST_SHARDS));
  // Deterministic: the same id always lands on the same shard.
  expect(shardOf('wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(shardOf('wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV'));
});

it('cursors round-trip; a bad one is a 400 naming the field', () => {
  expect(decodeEventCursor(encodeEventCursor(42))).toEqual({ slot: 42, midPair: false });
  // The half form: the slot is a pair item's first half (storage/records/event.ts).
  expect(encodeEventCursor(42, true)).not.toBe(encodeEventCursor(42));
  expect(decodeEventCursor(encodeEventCursor(42, true))).toEqual({ slot: 42, midPair: true });
  const sk = '2026-12-01T04:00:00.000Z#wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV';
  expect(decodeShardCursor(encodeShardCursor(sk))).toBe(sk);
  const key = { PK: { S: 'RUN#a' }, SK: { S: 'STEP#b' } };
  expect(decodeKeyCursor(encodeKeyCursor(key), ['PK', 'SK'])).toEqual(key);
  for (const bad of [
    () => decodeEventCursor('garbage', 'sinceCursor'),
    () => decodeShardCursor('garbage'),
    () => decodeShardCursor('shk:'),
    () => decodeKeyCursor('not-json', ['PK', 'SK']),
  ]) {
    const err = (() => {
      try {
        bad();
      } catch (e) {
        return e as { name: string; status: number; field: string };
      }
    })();
    expect(err).toMatchObject({ name: 'WorkflowWorldError', status: 400 });
    expect(['cursor', 'sinceCursor']).toContain(err!.field);
  }
});
