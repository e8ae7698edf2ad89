/**
 * JS value <-> DynamoDB AttributeValue, without a schema in between: the one item codec of the
 * World (storage re-exports it as storage/table/codec.ts; the owned records of ./owned-record.ts,
 * the queue's claims, the nonces and the run keys use it too).
 *
 * Event data is stored *opaquely*: whatever fields a core sends (newer cores send more than the
 * pinned schemas know) are written and read back unchanged, so nothing here parses through zod.
 *
 * Invariants:
 * - `Uint8Array` (and `Buffer`) <-> `B`: bytes round-trip exactly, null bytes included.
 * - `Date` <-> a one-key map `{ "$date": N(ms) }`; reads revive it as a `Date`.
 * - `undefined` object members are dropped (DynamoDB has no undefined); `undefined` array
 *   members become `NULL` so positions are kept.
 * - Numbers that are not finite, and bigints, use one-key tagged maps so they survive as well.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export type Attrs = Record<string, AttributeValue>;

const DATE_TAG = '$date';
const NUM_TAG = '$num';
const BIGINT_TAG = '$bigint';

export function toAttr(v: unknown): AttributeValue | undefined {
  if (v === undefined) return undefined;
  if (v === null) return { NULL: true };
  if (v instanceof Uint8Array) return { B: v };
  if (v instanceof Date) return { M: { [DATE_TAG]: { N: String(v.getTime()) } } };
  switch (typeof v) {
    case 'string':
      return { S: v };
    case 'boolean':
      return { BOOL: v };
    case 'number':
      return Number.isFinite(v) ? { N: String(v) } : { M: { [NUM_TAG]: { S: String(v) } } };
    case 'bigint':
      return { M: { [BIGINT_TAG]: { S: v.toString() } } };
    case 'object':
      break;
    default:
      throw new TypeError(`cannot store a ${typeof v} value`);
  }
  if (Array.isArray(v)) return { L: v.map((x) => toAttr(x) ?? { NULL: true }) };
  if (v instanceof ArrayBuffer) return { B: new Uint8Array(v) };
  return { M: toItem(v as Record<string, unknown>) };
}

export function fromAttr(a: AttributeValue): unknown {
  if (a.S !== undefined) return a.S;
  if (a.N !== undefined) return Number(a.N);
  if (a.B !== undefined) return new Uint8Array(a.B);
  if (a.BOOL !== undefined) return a.BOOL;
  if (a.NULL !== undefined) return null;
  if (a.L !== undefined) return a.L.map(fromAttr);
  if (a.M !== undefined) {
    const keys = Object.keys(a.M);
    if (keys.length === 1) {
      const k = keys[0];
      const inner = a.M[k];
      if (k === DATE_TAG && inner.N !== undefined) return new Date(Number(inner.N));
      if (k === NUM_TAG && inner.S !== undefined) return Number(inner.S);
      if (k === BIGINT_TAG && inner.S !== undefined) return BigInt(inner.S);
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(a.M)) out[k] = fromAttr(x);
    return out;
  }
  if (a.SS !== undefined) return a.SS;
  if (a.NS !== undefined) return a.NS.map(Number);
  return undefined;
}

/** Object -> item attributes; `undefined` members are omitted. */
export function toItem(obj: Record<string, unknown>): Attrs {
  const out: Attrs = {};
  for (const [k, v] of Object.entries(obj)) {
    const a = toAttr(v);
    if (a !== undefined) out[k] = a;
  }
  return out;
}

/** An item's key as attributes. */
export function keysOf(k: { PK: string; SK: string }): Attrs {
  return { PK: { S: k.PK }, SK: { S: k.SK } };
}

/** Drop `undefined` members in place (DynamoDB has no undefined). */
export function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/**
 * Times on entity items are epoch-ms numbers (so they compare in conditions, e.g. `retryAfter`);
 * inside opaque event data they use the tagged form above.
 */
export const epochMs = (d: Date | undefined) => (d === undefined ? undefined : d.getTime());

// ---------- typed readers for entity items ----------

export const str = (it: Attrs, k: string): string | undefined => it[k]?.S;
export const num = (it: Attrs, k: string): number | undefined => (it[k]?.N !== undefined ? Number(it[k].N) : undefined);
export const bool = (it: Attrs, k: string): boolean | undefined => it[k]?.BOOL;
export const date = (it: Attrs, k: string): Date | undefined => {
  const n = num(it, k);
  return n === undefined ? undefined : new Date(n);
};
export const val = (it: Attrs, k: string): unknown => (it[k] === undefined ? undefined : fromAttr(it[k]));

/**
 * Approximate stored size of an item (DynamoDB's 400 KB cap is on names + values). Errs on the
 * large side so that a budget computed from it is safe.
 */
export function itemSize(item: Attrs): number {
  let n = 0;
  for (const [k, v] of Object.entries(item)) n += Buffer.byteLength(k) + attrSize(v);
  return n;
}

function attrSize(a: AttributeValue): number {
  if (a.S !== undefined) return Buffer.byteLength(a.S);
  if (a.B !== undefined) return a.B.byteLength;
  if (a.N !== undefined) return a.N.length + 1;
  if (a.BOOL !== undefined || a.NULL !== undefined) return 1;
  if (a.L !== undefined) return 3 + a.L.reduce((s, x) => s + 1 + attrSize(x), 0);
  if (a.M !== undefined)
    return 3 + Object.entries(a.M).reduce((s, [k, x]) => s + 1 + Buffer.byteLength(k) + attrSize(x), 0);
  return 8;
}

/** Attribute-value size of one JS value as it will be stored. */
export function valueSize(v: unknown): number {
  const a = toAttr(v);
  return a === undefined ? 0 : attrSize(a);
}
