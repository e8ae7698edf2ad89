/** RecentKeys (src/util/recent-keys.ts): new or seen, in bounded memory, oldest forgotten first. */
import { describe, expect, it } from 'vitest';
import { RecentKeys } from '../../../src/util/recent-keys.js';

describe('RecentKeys', () => {
  it('says whether a key is new, and forgets the oldest beyond its capacity', () => {
    const keys = new RecentKeys(2);
    expect(keys.add('a')).toBe(true);
    expect(keys.add('a')).toBe(false);
    expect(keys.add('b')).toBe(true);
    expect(keys.add('c')).toBe(true); // forgets 'a'
    expect(keys.add('b')).toBe(false);
    expect(keys.add('a')).toBe(true); // new again; forgets 'b'
    expect(keys.add('c')).toBe(false);
    expect(keys.add('b')).toBe(true);
  });
});
