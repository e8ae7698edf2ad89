/**
 * Update and condition expressions from typed parts instead of string assembly.
 *
 * A {@link Part} is a piece of expression text together with the `#name` and `:value`
 * placeholders it uses, so a clause and its placeholders are written in one place and travel
 * together. Small builders make the common parts (`assign`, `equals`, `attributeAbsent`,
 * `anyOf`, `not`, `named` for an attribute behind a `#name` ...), so no writer assembles
 * expression text or placeholder maps by hand. {@link Expression} collects SET, REMOVE and
 * condition parts and renders one action: an Update (or a single UpdateItem), a ConditionCheck,
 * a conditional Put or Delete (or a single DeleteItem); whether a failed condition returns the
 * item (`ALL_OLD`) is the caller's explicit choice for a Put or a Delete. {@link readInput}
 * renders a read's key condition, filter and projection from parts the same way.
 *
 * Invariants, checked when an action is rendered: every placeholder the text uses is defined,
 * every definition is used, and one placeholder never stands for two things (DynamoDB would
 * refuse the first two; the third would silently compare against the wrong value), and the same
 * for a read. A Put, a Delete or a ConditionCheck carries conditions only: SET or REMOVE parts on
 * it, or no condition, are refused.
 */
import type {
  AttributeValue,
  DeleteItemCommandInput,
  TransactWriteItem,
  UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { type BuiltCond, build, type Cond } from '../../aws/record-conditions.js';
import type { Attrs } from './codec.js';

/** A piece of expression text and the placeholders it uses. */
export interface Part {
  readonly text: string;
  /** `#placeholder` -> attribute name. */
  readonly names?: Readonly<Record<string, string>>;
  /** `:placeholder` -> value. */
  readonly values?: Readonly<Attrs>;
}

export const part = (text: string, values?: Attrs, names?: Record<string, string>): Part => ({ text, values, names });

/** A `:placeholder` of a value. */
export type ValuePlaceholder = `:${string}`;

/** A `#placeholder` of an attribute name. */
export type NamePlaceholder = `#${string}`;

/** An attribute path: plain text (`attrVer`, `PK`), or a part that names it through placeholders. */
export type Path = string | Part;

/**
 * `text` using the placeholders of `parts`, merged (one placeholder standing for two things is
 * refused here, as at render).
 */
function compose(text: string, ...parts: Part[]): Part {
  const names: Record<string, string> = {};
  const values: Attrs = {};
  for (const p of parts) mergeInto(names, values, p);
  return part(
    text,
    Object.keys(values).length > 0 ? values : undefined,
    Object.keys(names).length > 0 ? names : undefined,
  );
}

const pathOf = (path: Path): Part => (typeof path === 'string' ? part(path) : path);

/** `#placeholder`, standing for `attribute` (a reserved word, or a name kept out of the text). */
export const named = (placeholder: NamePlaceholder, attribute: string): Part =>
  part(placeholder, undefined, { [placeholder]: attribute });

/** `#st`, the run's or a view's `status` attribute (a reserved word in expressions). */
export const STATUS_NAME = { '#st': 'status' } as const;
const status = named('#st', STATUS_NAME['#st']);

/** `path = placeholder` with `value` (a SET clause, or a condition). */
export function assign(path: Path, placeholder: ValuePlaceholder, value: AttributeValue): Part {
  const p = pathOf(path);
  return compose(`${p.text} = ${placeholder}`, p, part(placeholder, { [placeholder]: value }));
}

/** A condition: `path = placeholder` with `value`. */
export const equals = assign;

/** A condition: `path <= placeholder` with `value`. */
export function atMost(path: Path, placeholder: ValuePlaceholder, value: AttributeValue): Part {
  const p = pathOf(path);
  return compose(`${p.text} <= ${placeholder}`, p, part(placeholder, { [placeholder]: value }));
}

/** SET `path = if_not_exists(path, placeholder)`: the value, unless the attribute is already set. */
export function assignIfAbsent(path: Path, placeholder: ValuePlaceholder, value: AttributeValue): Part {
  const p = pathOf(path);
  return compose(
    `${p.text} = if_not_exists(${p.text}, ${placeholder})`,
    p,
    part(placeholder, { [placeholder]: value }),
  );
}

/** A string attribute equals `value`. */
export const stringIs = (attribute: string, placeholder: ValuePlaceholder, value: string): Part =>
  equals(attribute, placeholder, { S: value });

/** A number attribute equals `value` (an optimistic version). */
export const numberIs = (attribute: string, placeholder: ValuePlaceholder, value: number): Part =>
  equals(attribute, placeholder, { N: String(value) });

/** `status = <status>`, its value under `placeholder`. */
export const statusIs = (placeholder: ValuePlaceholder, value: string): Part =>
  equals(status, placeholder, { S: value });

/** SET `status = <status>`, its value under `placeholder`. */
export const setStatus = statusIs;

/** The attribute is absent: `attribute_not_exists(path)`. */
export function attributeAbsent(path: Path): Part {
  const p = pathOf(path);
  return compose(`attribute_not_exists(${p.text})`, p);
}

/** A condition (a sort key's, in a key condition): `begins_with(path, placeholder)` with `prefix`. */
export function beginsWith(path: Path, placeholder: ValuePlaceholder, prefix: string): Part {
  const p = pathOf(path);
  return compose(`begins_with(${p.text}, ${placeholder})`, p, part(placeholder, { [placeholder]: { S: prefix } }));
}

/** The item exists. */
export const itemExists: Part = part('attribute_exists(PK)');

/** The item does not exist (a create claim). */
export const itemAbsent: Part = attributeAbsent('PK');

/** The parts joined with OR, in parentheses: `(a OR b)`. */
export const anyOf = (...parts: Part[]): Part => compose(`(${parts.map((p) => p.text).join(' OR ')})`, ...parts);

/** The negation: `NOT (p)`. */
export const not = (p: Part): Part => compose(`NOT (${p.text})`, p);

/** The part in parentheses, for a condition built elsewhere whose operators must bind first. */
export const grouped = (p: Part): Part => compose(`(${p.text})`, p);

/** A condition already built with its placeholders (e.g. a step lease's fence) as a part. */
export const built = (c: BuiltCond): Part => part(c.expr, c.values, c.names);

/** A condition built with `when` (src/aws/owned-record.ts) as a part (placeholders `#o<n>`, `:o<n>`). */
export const condition = (c: Cond): Part => built(build(c));

const PLACEHOLDER = /[#:][A-Za-z0-9_]+/g;

/** SET, REMOVE and condition parts of one action on one item. */
export class Expression {
  private readonly setParts: Part[] = [];
  private readonly removeParts: Part[] = [];
  private readonly conditionParts: Part[] = [];

  /** Adds SET clauses, in order. */
  set(...parts: Part[]): this {
    this.setParts.push(...parts);
    return this;
  }

  /** Adds REMOVE clauses, in order. */
  remove(...parts: Part[]): this {
    this.removeParts.push(...parts);
    return this;
  }

  /** Adds conditions, joined with AND, in order. */
  when(...parts: Part[]): this {
    this.conditionParts.push(...parts);
    return this;
  }

  /** The UpdateExpression: `SET a, b REMOVE c, d`. */
  updateText(): string {
    const sections: string[] = [];
    if (this.setParts.length > 0) sections.push(`SET ${this.setParts.map((p) => p.text).join(', ')}`);
    if (this.removeParts.length > 0) sections.push(`REMOVE ${this.removeParts.map((p) => p.text).join(', ')}`);
    return sections.join(' ');
  }

  conditionText(): string {
    return this.conditionParts.map((p) => p.text).join(' AND ');
  }

  /**
   * An Update action. `returnOld` (default: true, as every update inside a create's transaction):
   * a failed condition returns the item as it was (`ALL_OLD`).
   */
  toUpdate(table: string, key: Attrs, { returnOld = true }: ReturnOld = {}): TransactWriteItem {
    const updateExpression = this.updateText();
    const conditionExpression = this.conditionText();
    return {
      Update: {
        TableName: table,
        Key: key,
        UpdateExpression: updateExpression,
        ...(conditionExpression === '' ? {} : { ConditionExpression: conditionExpression }),
        ...this.placeholders([updateExpression, conditionExpression]),
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

  /** A conditional Delete action: the conditions only; `returnOld` as for {@link toPut}. */
  toDelete(table: string, key: Attrs, { returnOld }: Required<ReturnOld>): TransactWriteItem {
    return { Delete: { TableName: table, Key: key, ...this.conditionOnly(), ...returnValues(returnOld) } };
  }

  /** {@link toDelete} as the input of a single DeleteItem (outside a transaction). */
  toDeleteItem(table: string, key: Attrs, options: Required<ReturnOld>): DeleteItemCommandInput {
    return this.toDelete(table, key, options).Delete as DeleteItemCommandInput;
  }

  /** The condition and its placeholders, for an action that has nothing else (refused without one, or with SET or REMOVE parts). */
  private conditionOnly(): { ConditionExpression: string } & Placeholders {
    if (this.setParts.length > 0 || this.removeParts.length > 0)
      throw new Error('expression: SET or REMOVE parts on an action that takes a condition only');
    const conditionExpression = this.conditionText();
    if (conditionExpression === '') throw new Error('expression: a condition-only action without a condition');
    return { ConditionExpression: conditionExpression, ...this.placeholders([conditionExpression]) };
  }

  /** The merged names and values, checked against the texts that use them. */
  private placeholders(texts: string[]): Placeholders {
    return placeholdersOf([...this.setParts, ...this.removeParts, ...this.conditionParts], texts);
  }
}

/** Whether a failed condition returns the item it saw (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`). */
export interface ReturnOld {
  readonly returnOld?: boolean;
}

interface Placeholders {
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Attrs;
}

const returnValues = (returnOld: boolean) =>
  returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {};

/** The merged names and values of `parts`, checked against the texts that use them (the header's invariants). */
function placeholdersOf(parts: readonly Part[], texts: readonly string[]): Placeholders {
  const names: Record<string, string> = {};
  const values: Attrs = {};
  for (const p of parts) mergeInto(names, values, p);
  const used = new Set(texts.flatMap((t) => t.match(PLACEHOLDER) ?? []));
  const defined = [...Object.keys(names), ...Object.keys(values)];
  const undefinedUse = [...used].filter((p) => !defined.includes(p));
  const unused = defined.filter((p) => !used.has(p));
  if (undefinedUse.length > 0 || unused.length > 0) {
    throw new Error(
      `expression placeholders out of step: used but not defined [${undefinedUse.join(', ')}], defined but not used [${unused.join(', ')}]`,
    );
  }
  return {
    ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  };
}

/** What a read is asked for: a Query's key condition and filter, the attributes returned. */
export interface ReadParts {
  /** The key condition (a Query), parts joined with AND. */
  readonly key?: readonly Part[];
  /** A filter (a Query), parts joined with AND. */
  readonly filter?: readonly Part[];
  /** The attributes to return (`ProjectionExpression`); all of them when absent. */
  readonly projection?: readonly Path[];
}

/**
 * The expression fields of a read (Query or GetItem) from parts, with their merged placeholders,
 * checked as an action's are.
 */
export function readInput({ key = [], filter = [], projection = [] }: ReadParts): {
  KeyConditionExpression?: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
} & Placeholders {
  const projected = projection.map(pathOf);
  const texts = {
    KeyConditionExpression: key.map((p) => p.text).join(' AND '),
    FilterExpression: filter.map((p) => p.text).join(' AND '),
    ProjectionExpression: projected.map((p) => p.text).join(', '),
  };
  const present = Object.fromEntries(Object.entries(texts).filter(([, t]) => t !== ''));
  return { ...present, ...placeholdersOf([...key, ...filter, ...projected], Object.values(texts)) };
}

function mergeInto(names: Record<string, string>, values: Attrs, p: Part): void {
  for (const [k, v] of Object.entries(p.names ?? {})) define(names, k, v, (a, b) => a === b);
  for (const [k, v] of Object.entries(p.values ?? {}))
    define(values, k, v, (a, b) => JSON.stringify(a) === JSON.stringify(b));
}

function define<T>(into: Record<string, T>, key: string, value: T, same: (a: T, b: T) => boolean): void {
  if (key in into && !same(into[key], value)) throw new Error(`expression placeholder ${key} stands for two things`);
  into[key] = value;
}

/** A new {@link Expression}. */
export const expression = (): Expression => new Expression();
