/**
 * The one byte-bounded cache (src/util/byte-lru.ts): the byte and entry bounds hold after every
 * write, eviction takes the least recently written first, an oversized entry is refused, and
 * reads do not reorder.
 */
import { describe, expect, it } from 'vitest';
import { ByteLru } from '../../../src/util/byte-lru.js';

describe('ByteLru', () => {
  it('keeps the sum of sizes within maxBytes, evicting the least recently written first', () => {
    const c = new ByteLru<string, number>({ maxBytes: 10 });
    c.set('a', 1, 4);
    c.set('b', 2, 4);
    expect(c.bytes).toBe(8);
    c.set('c', 3, 4); // 12 > 10: 'a' goes
    expect([c.get('a'), c.get('b'), c.get('c')]).toEqual([undefined, 2, 3]);
    expect(c.bytes).toBe(8);
    c.set('b', 22, 4); // re-written: now the most recent
    c.set('d', 4, 4); // 'c' is the least recently written
    expect([c.get('b'), c.get('c'), c.get('d')]).toEqual([22, undefined, 4]);
    expect(c.size).toBe(2);
  });

  it('get does not change the eviction order', () => {
    const c = new ByteLru<string, number>({ maxBytes: 2 });
    c.set('a', 1, 1);
    c.set('b', 2, 1);
    expect(c.get('a')).toBe(1);
    c.set('c', 3, 1);
    expect(c.get('a')).toBeUndefined();
    expect(c.get('b')).toBe(2);
  });

  it('refuses an entry over maxEntryBytes and drops what the key held', () => {
    const c = new ByteLru<string, string>({ maxBytes: 100, maxEntryBytes: 10 });
    expect(c.set('k', 'small', 5)).toBe(true);
    expect(c.set('k', 'big', 11)).toBe(false);
    expect(c.get('k')).toBeUndefined();
    expect(c.bytes).toBe(0);
    expect(c.size).toBe(0);
  });

  it('bounds the number of entries', () => {
    const c = new ByteLru<number, number>({ maxBytes: Number.POSITIVE_INFINITY, maxEntries: 3 });
    for (let i = 0; i < 10; i++) c.set(i, i, 0);
    expect(c.size).toBe(3);
    expect([0, 6, 7, 8, 9].map((k) => c.get(k))).toEqual([undefined, undefined, 7, 8, 9]);
  });

  it('never evicts the entry just written, even when it alone is over the budget', () => {
    const c = new ByteLru<string, number>({ maxBytes: 10 });
    c.set('a', 1, 3);
    c.set('huge', 2, 50);
    expect(c.get('a')).toBeUndefined();
    expect(c.get('huge')).toBe(2);
    expect(c.bytes).toBe(50);
    c.set('b', 3, 1); // the next write brings it back within the budget
    expect(c.get('huge')).toBeUndefined();
    expect(c.bytes).toBe(1);
  });

  it('delete frees the entry and its bytes', () => {
    const c = new ByteLru<string, number>({ maxBytes: 10 });
    c.set('a', 1, 6);
    expect(c.delete('a')).toBe(true);
    expect(c.delete('a')).toBe(false);
    expect(c.bytes).toBe(0);
  });

  it('rejects impossible bounds', () => {
    expect(() => new ByteLru({ maxBytes: -1 })).toThrow(/maxBytes must be >= 0/);
    expect(() => new ByteLru({ maxBytes: 1, maxEntries: 0 })).toThrow(/maxEntries must be >= 1/);
  });
});
