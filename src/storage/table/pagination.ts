/**
 * Cursor codecs and page limits for every storage list. Cursors are opaque to callers; a cursor
 * that does not decode is a 400 naming the field, never a plain `Error`.
 *
 * - Events: `evc:<slot>`, the slot of the last returned event (an exclusive bound), so a cursor
 *   stays valid across writes and a write's delta can hand one out. `evc:<slot>h` is the same bound
 *   at the first half of a pair item (../records/event.ts): the log item at `slot` also holds `slot
 *   + 1`, which the holder has not seen. A reader treats both forms alike (its reads start at the
 *   item of `slot`, inclusive); a writer given the half form as `sinceCursor` must read the pair's
 *   second half before it may try a slot (../write/position.ts).
 * - Other lists: the DynamoDB key of the last returned item, base64url JSON.
 */
import type { Attrs } from './codec.js';
import { invalidArgument } from './world-errors.js';

const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export function pageLimit(limit: number | undefined, def = DEFAULT_LIMIT, max = MAX_LIMIT): number {
  if (limit === undefined) return def;
  if (!Number.isInteger(limit) || limit < 1)
    throw invalidArgument('limit', `limit must be a positive integer, got ${limit}`);
  return Math.min(limit, max);
}

const EVENT_CURSOR = /^evc:(\d{1,16})(h?)$/;

/**
 * Events cursor: the slot of the last event a page returned (exclusive bound); `midPair` when
 * that event is the first half of a pair item (the `h` form).
 */
export const encodeEventCursor = (slot: number, midPair = false) => `evc:${slot}${midPair ? 'h' : ''}`;

export function decodeEventCursor(cursor: string, field = 'cursor'): { slot: number; midPair: boolean } {
  const m = EVENT_CURSOR.exec(cursor);
  if (!m) throw invalidArgument(field, `Invalid events cursor "${cursor.slice(0, 40)}"`);
  return { slot: Number(m[1]), midPair: m[2] === 'h' };
}

export function encodeKeyCursor(key: Attrs): string {
  const plain = Object.fromEntries(Object.entries(key).map(([k, v]) => [k, v.S]));
  return Buffer.from(JSON.stringify(plain)).toString('base64url');
}

export function decodeKeyCursor(cursor: string, names: string[]): Attrs {
  try {
    const plain = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
    const key: Attrs = {};
    for (const n of names) {
      if (typeof plain[n] !== 'string') throw new Error(n);
      key[n] = { S: plain[n] as string };
    }
    return key;
  } catch {
    throw invalidArgument('cursor', 'Invalid pagination cursor');
  }
}
