/**
 * Condition expressions for the owned record (./owned-record.ts) and the writes beside it: `when`'s
 * building blocks compose into a {@link Cond}, which {@link build} turns into an expression with
 * its placeholders (`#o<n>` for names, `:o<n>` for values), so no protocol writes a condition by
 * hand. `when.readable` is the format guard every owned-record update and delete carries
 * (src/schema/formats.ts).
 */
import { FORMAT_ATTR, FORMATS } from '../schema/formats.js';
import { ATTR } from '../schema/keys.js';
import { type Attrs, toAttr } from './item-codec.js';

/** A condition expression built with placeholders from `x`. */
export type Cond = (x: Expr) => string;

/** Placeholders for one expression: `#o<n>` for names, `:o<n>` for values. */
export class Expr {
  readonly names: Record<string, string> = {};
  readonly values: Attrs = {};
  #byName = new Map<string, string>();
  #n = 0;

  name(attr: string): string {
    let ph = this.#byName.get(attr);
    if (!ph) {
      ph = `#o${this.#byName.size}`;
      this.#byName.set(attr, ph);
      this.names[ph] = attr;
    }
    return ph;
  }

  value(v: unknown): string {
    const a = toAttr(v);
    if (a === undefined) throw new TypeError('a condition cannot compare with undefined');
    const ph = `:o${this.#n++}`;
    this.values[ph] = a;
    return ph;
  }
}

/** The building blocks of conditions. */
export const when = {
  absent: ((x) => `attribute_not_exists(${x.name(ATTR.pk)})`) as Cond,
  present: ((x) => `attribute_exists(${x.name(ATTR.pk)})`) as Cond,
  has:
    (attr: string): Cond =>
    (x) =>
      `attribute_exists(${x.name(attr)})`,
  lacks:
    (attr: string): Cond =>
    (x) =>
      `attribute_not_exists(${x.name(attr)})`,
  is:
    (attr: string, v: unknown): Cond =>
    (x) =>
      `${x.name(attr)} = ${x.value(v)}`,
  below:
    (attr: string, v: number): Cond =>
    (x) =>
      `${x.name(attr)} < ${x.value(v)}`,
  same:
    (a: string, b: string): Cond =>
    (x) =>
      `${x.name(a)} = ${x.name(b)}`,
  oneOf:
    (attr: string, vs: readonly unknown[]): Cond =>
    (x) =>
      `${x.name(attr)} IN (${vs.map((v) => x.value(v)).join(', ')})`,
  /** The field is absent or equals `v` (a seen value that may have been missing). */
  asSeen: (attr: string, v: unknown): Cond => (v === undefined ? when.lacks(attr) : when.is(attr, v)),
  all:
    (...cs: Cond[]): Cond =>
    (x) =>
      cs.map((c) => `(${c(x)})`).join(' AND '),
  any:
    (...cs: Cond[]): Cond =>
    (x) =>
      cs.map((c) => `(${c(x)})`).join(' OR '),
  /** A format this build reads, stamped or not (src/schema/formats.ts). */
  readable: ((x) =>
    `attribute_not_exists(${x.name(FORMAT_ATTR)}) OR ${x.name(FORMAT_ATTR)} <= ${x.value(FORMATS.records.current)}`) as Cond,
};

/** A condition as an expression with its placeholders. */
export interface BuiltCond {
  expr: string;
  names: Record<string, string>;
  values: Attrs;
}

export function build(c: Cond): BuiltCond {
  const x = new Expr();
  const expr = c(x);
  return { expr, names: x.names, values: x.values };
}
