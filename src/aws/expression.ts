/**
 * The one language of DynamoDB expressions: every condition, update and read expression of the
 * World (the owned record ./owned-record.ts, storage's writers and reads, the queue's claims, the
 * nonces, the run keys, the stream reads, the preflight's probe, `destroy`'s scan) is built here,
 * so no module writes expression text or placeholders by hand.
 *
 * A {@link Cond} is built from `when`'s blocks (`absent`, `present`, `has`, `lacks`, `is`, `above`,
 * `below`, `atMost`, `oneOf`, `all`, `any`, `not`, ...); values are plain JS values, stored as
 * ./item-codec.ts stores them. {@link Expression} collects SET, ADD, REMOVE and conditions and
 * renders one action: an Update (or a single UpdateItem), a ConditionCheck, a conditional Put or
 * Delete (or a single DeleteItem); whether a failed condition returns the item (`ALL_OLD`) is the
 * caller's explicit choice for a Put or a Delete. {@link readInput} renders a read's key condition,
 * filter and projection. `when.readable` is the format guard every owned-record update and delete
 * carries (src/schema/formats.ts).
 *
 * Placeholders are named here only, while an action renders: `#n<i>` for attribute names (one per
 * name), `:v<i>` for values (one per use). Names stay out of the text, so reserved words (`status`,
 * `ttl`...) need no care.
 *
 * Invariants: one placeholder never stands for two things (it would silently compare against the
 * wrong value): by construction, as one {@link Placeholders} names a whole action or read. Checked
 * when an action or a read is rendered: every placeholder the text uses is defined, and every
 * definition is used (DynamoDB would refuse either). A Put, a Delete or a ConditionCheck carries
 * conditions only: SET, ADD or REMOVE on it, or no condition, are refused; an Update changes
 * something. No text has redundant parentheses (DynamoDB refuses them): `all` or `any` of one is
 * that one.
 */
import type {
  DeleteItemCommandInput,
  PutItemCommandInput,
  TransactWriteItem,
  UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { FORMAT_ATTR, FORMATS } from '../schema/formats.js';
import { ATTR } from '../schema/keys.js';
import { type Attrs, toAttr } from './item-codec.js';

/** An attribute, or a document path to a nested one (its segments, each named). */
export type Path = string | readonly string[];

/** The placeholders of one rendered expression. */
export class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Attrs = {};
  #byName = new Map<string, string>();
  #n = 0;

  /** The path's text, each segment behind a `#n<i>` placeholder. */
  name(path: Path): string {
    return (typeof path === 'string' ? [path] : path).map((a) => this.#name(a)).join('.');
  }

  #name(attr: string): string {
    let ph = this.#byName.get(attr);
    if (!ph) {
      ph = `#n${this.#byName.size}`;
      this.#byName.set(attr, ph);
      this.names[ph] = attr;
    }
    return ph;
  }

  /** A `:v<i>` placeholder for the value, stored as the item codec stores it. */
  value(v: unknown): string {
    const a = toAttr(v);
    if (a === undefined) throw new TypeError('an expression cannot use an undefined value');
    const ph = `:v${this.#n++}`;
    this.values[ph] = a;
    return ph;
  }
}

/** A condition, rendered with the placeholders of the expression it is part of. */
export type Cond = (x: Placeholders) => string;

const compare = (op: string) => (path: Path, v: unknown) => (x: Placeholders) => `${x.name(path)} ${op} ${x.value(v)}`;

/** `cs` joined by `op`, each in parentheses; one alone unwrapped, so nesting never doubles them; none is ''. */
const joined = (cs: readonly Cond[], op: 'AND' | 'OR') => (x: Placeholders) =>
  cs.length === 1 ? cs[0](x) : cs.map((c) => `(${c(x)})`).join(` ${op} `);

export const when = {
  /** The item does not exist (a create claim). */
  absent: (x: Placeholders) => `attribute_not_exists(${x.name(ATTR.pk)})`,
  present: (x: Placeholders) => `attribute_exists(${x.name(ATTR.pk)})`,
  has: (path: Path) => (x: Placeholders) => `attribute_exists(${x.name(path)})`,
  lacks: (path: Path) => (x: Placeholders) => `attribute_not_exists(${x.name(path)})`,
  is: compare('='),
  above: compare('>'),
  below: compare('<'),
  atMost: compare('<='),
  /** Two attributes hold the same value. */
  same: (a: Path, b: Path) => (x: Placeholders) => `${x.name(a)} = ${x.name(b)}`,
  oneOf: (path: Path, vs: readonly unknown[]) => (x: Placeholders) =>
    `${x.name(path)} IN (${vs.map((v) => x.value(v)).join(', ')})`,
  /** `lo <= path <= hi` (a sort key's range, in a key condition). */
  between: (path: Path, lo: unknown, hi: unknown) => (x: Placeholders) =>
    `${x.name(path)} BETWEEN ${x.value(lo)} AND ${x.value(hi)}`,
  /** A string attribute (a sort key, in a key condition) starts with `prefix`. */
  beginsWith: (path: Path, prefix: string) => (x: Placeholders) => `begins_with(${x.name(path)}, ${x.value(prefix)})`,
  /** The field is absent or equals `v` (a seen value that may have been missing). */
  asSeen: (path: Path, v: unknown): Cond => (v === undefined ? when.lacks(path) : when.is(path, v)),
  /** Every one of `cs` holds (one alone is itself: DynamoDB refuses redundant parentheses). */
  all: (...cs: Cond[]): Cond => joined(cs, 'AND'),
  /** One of `cs` holds at least. */
  any: (...cs: Cond[]): Cond => joined(cs, 'OR'),
  not: (c: Cond) => (x: Placeholders) => `NOT (${c(x)})`,
  /** A format this build reads, stamped or not (src/schema/formats.ts). */
  readable: (x: Placeholders) =>
    `attribute_not_exists(${x.name(FORMAT_ATTR)}) OR ${x.name(FORMAT_ATTR)} <= ${x.value(FORMATS.records.current)}`,
};

/** Whether a failed condition returns the item it saw (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`). */
export interface ReturnOld {
  readonly returnOld?: boolean;
}

interface Rendered {
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Attrs;
}

type Clause = (x: Placeholders) => string;

/** SET, REMOVE and conditions of one action on one item. */
export class Expression {
  private readonly sets: Clause[] = [];
  private readonly adds: Clause[] = [];
  private readonly removes: Path[] = [];
  private readonly conds: Cond[] = [];

  /** SET each field to its value, in order (`undefined` values are skipped). */
  set(fields: Record<string, unknown>): this {
    for (const [k, v] of Object.entries(fields))
      if (v !== undefined) this.sets.push((x) => `${x.name(k)} = ${x.value(v)}`);
    return this;
  }

  /** SET each field to its value, unless the attribute is already set (`if_not_exists`). */
  setIfAbsent(fields: Record<string, unknown>): this {
    for (const [k, v] of Object.entries(fields))
      if (v !== undefined) this.sets.push((x) => `${x.name(k)} = if_not_exists(${x.name(k)}, ${x.value(v)})`);
    return this;
  }

  /** ADD each number to its field (a missing field counts as 0). */
  add(fields: Record<string, number>): this {
    for (const [k, v] of Object.entries(fields)) this.adds.push((x) => `${x.name(k)} ${x.value(v)}`);
    return this;
  }

  /** REMOVE the paths, in order. */
  remove(...paths: Path[]): this {
    this.removes.push(...paths);
    return this;
  }

  /** Adds conditions, all of which must hold. */
  when(...conds: Cond[]): this {
    this.conds.push(...conds);
    return this;
  }

  /**
   * An Update action. `returnOld` (default: true, as every update inside a create's transaction):
   * a failed condition returns the item as it was (`ALL_OLD`).
   */
  toUpdate(table: string, key: Attrs, { returnOld = true }: ReturnOld = {}): TransactWriteItem {
    const x = new Placeholders();
    const sections: string[] = [];
    if (this.sets.length > 0) sections.push(`SET ${this.sets.map((s) => s(x)).join(', ')}`);
    if (this.adds.length > 0) sections.push(`ADD ${this.adds.map((a) => a(x)).join(', ')}`);
    if (this.removes.length > 0) sections.push(`REMOVE ${this.removes.map((p) => x.name(p)).join(', ')}`);
    const updateExpression = sections.join(' ');
    if (updateExpression === '') throw new Error('expression: an update without SET, ADD or REMOVE');
    const condition = when.all(...this.conds)(x); // '' for none
    return {
      Update: {
        TableName: table,
        Key: key,
        UpdateExpression: updateExpression,
        ...(condition === '' ? {} : { ConditionExpression: condition }),
        ...checked(x, [updateExpression, condition]),
        ...returnValues(returnOld),
      },
    };
  }

  /** {@link toUpdate} as the input of a single UpdateItem (outside a transaction). */
  toUpdateItem(table: string, key: Attrs, options: ReturnOld = {}): UpdateItemCommandInput {
    return this.toUpdate(table, key, options).Update as UpdateItemCommandInput;
  }

  /** A ConditionCheck action: the conditions only; `returnOld`: a failed one returns the item (`ALL_OLD`). */
  toConditionCheck(table: string, key: Attrs, { returnOld = false }: ReturnOld = {}): TransactWriteItem {
    return { ConditionCheck: { TableName: table, Key: key, ...this.conditionOnly(), ...returnValues(returnOld) } };
  }

  /**
   * A conditional Put action of the whole `item`: the conditions only (a Put has no SET or
   * REMOVE); `returnOld`: a failed condition returns the item it found (`ALL_OLD`).
   */
  toPut(table: string, item: Attrs, { returnOld }: Required<ReturnOld>): TransactWriteItem {
    return { Put: { TableName: table, Item: item, ...this.conditionOnly(), ...returnValues(returnOld) } };
  }

  /** {@link toPut} as the input of a single PutItem (outside a transaction). */
  toPutItem(table: string, item: Attrs, options: Required<ReturnOld>): PutItemCommandInput {
    return this.toPut(table, item, options).Put as PutItemCommandInput;
  }

  /** A conditional Delete action: the conditions only; `returnOld` as for {@link toPut}. */
  toDelete(table: string, key: Attrs, { returnOld }: Required<ReturnOld>): TransactWriteItem {
    return { Delete: { TableName: table, Key: key, ...this.conditionOnly(), ...returnValues(returnOld) } };
  }

  /** {@link toDelete} as the input of a single DeleteItem (outside a transaction). */
  toDeleteItem(table: string, key: Attrs, options: Required<ReturnOld>): DeleteItemCommandInput {
    return this.toDelete(table, key, options).Delete as DeleteItemCommandInput;
  }

  /** The condition and its placeholders, for an action that has nothing else. */
  private conditionOnly(): { ConditionExpression: string } & Rendered {
    if (this.sets.length + this.adds.length + this.removes.length > 0)
      throw new Error('expression: SET, ADD or REMOVE on an action that takes a condition only');
    if (this.conds.length === 0) throw new Error('expression: a condition-only action without a condition');
    const x = new Placeholders();
    const condition = when.all(...this.conds)(x);
    return { ConditionExpression: condition, ...checked(x, [condition]) };
  }
}

export const expression = (): Expression => new Expression();

const returnValues = (returnOld: boolean) =>
  returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {};

const PLACEHOLDER = /[#:][A-Za-z0-9_]+/g;

/** The names and values of `x`, checked against the texts that use them (the header's invariants). */
function checked(x: Placeholders, texts: readonly string[]): Rendered {
  const used = new Set(texts.flatMap((t) => t.match(PLACEHOLDER) ?? []));
  const defined = [...Object.keys(x.names), ...Object.keys(x.values)];
  const undefinedUse = [...used].filter((p) => !defined.includes(p));
  const unused = defined.filter((p) => !used.has(p));
  if (undefinedUse.length > 0 || unused.length > 0) {
    throw new Error(
      `expression placeholders out of step: used but not defined [${undefinedUse.join(', ')}], defined but not used [${unused.join(', ')}]`,
    );
  }
  return {
    ...(Object.keys(x.names).length > 0 ? { ExpressionAttributeNames: x.names } : {}),
    ...(Object.keys(x.values).length > 0 ? { ExpressionAttributeValues: x.values } : {}),
  };
}

/** What a read is asked for: a Query's key condition and filter, the attributes returned. */
export interface ReadParts {
  /** The key condition (a Query), all of which must hold. */
  readonly key?: readonly Cond[];
  /** A filter (a Query), all of which must hold. */
  readonly filter?: readonly Cond[];
  /** The attributes to return (`ProjectionExpression`); all of them when absent. */
  readonly projection?: readonly Path[];
}

/** The expression fields of a read (Query or GetItem), with their placeholders, checked as an action's are. */
export function readInput({ key = [], filter = [], projection = [] }: ReadParts): {
  KeyConditionExpression?: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
} & Rendered {
  const x = new Placeholders();
  // A key condition takes no parentheses around its two parts.
  const texts = {
    KeyConditionExpression: key.map((c) => c(x)).join(' AND '),
    FilterExpression: when.all(...filter)(x),
    ProjectionExpression: projection.map((p) => x.name(p)).join(', '),
  };
  const present = Object.fromEntries(Object.entries(texts).filter(([, t]) => t !== ''));
  return { ...present, ...checked(x, Object.values(texts)) };
}
