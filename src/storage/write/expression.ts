/**
 * Update and condition expressions from typed parts instead of string assembly.
 *
 * A {@link Part} is a piece of expression text together with the `#name` and `:value`
 * placeholders it uses, so a clause and its placeholders are written in one place and travel
 * together. {@link Expression} collects SET, REMOVE and condition parts and renders the
 * transaction action. Invariant, checked when an action is rendered: every placeholder the text
 * uses is defined, every definition is used, and one placeholder never stands for two things
 * (DynamoDB would refuse the first two; the third would silently compare against the wrong value).
 */
import type { AttributeValue, TransactWriteItem, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { build, type Cond } from '../../aws/owned-record.js';
import { NOT_TERMINAL, TERMINAL_VALUES } from '../records/lifecycle.js';
import type { Attrs } from '../table/codec.js';

/** A piece of expression text and the placeholders it uses. */
export interface Part {
  readonly text: string;
  /** `#placeholder` -> attribute name. */
  readonly names?: Readonly<Record<string, string>>;
  /** `:placeholder` -> value. */
  readonly values?: Readonly<Attrs>;
}

export const part = (text: string, values?: Attrs, names?: Record<string, string>): Part => ({ text, values, names });

/** `#st`, the run's or a view's `status` attribute (a reserved word in expressions). */
export const STATUS_NAME = { '#st': 'status' } as const;

/** The item exists. */
export const itemExists: Part = part('attribute_exists(PK)');

/** The run is not terminal (records/lifecycle.ts). */
export const runNotTerminal: Part = part(NOT_TERMINAL, TERMINAL_VALUES, STATUS_NAME);

/** `status = <status>`, its value under `placeholder`. */
export const statusIs = (placeholder: string, status: string): Part =>
  part(`#st = ${placeholder}`, { [placeholder]: { S: status } }, STATUS_NAME);

/** SET `status = <status>`, its value under `placeholder`. */
export const setStatus = (placeholder: string, status: string): Part =>
  part(`#st = ${placeholder}`, { [placeholder]: { S: status } }, STATUS_NAME);

/** A number attribute equals `value` (an optimistic version). */
export const numberIs = (attribute: string, placeholder: string, value: number): Part =>
  part(`${attribute} = ${placeholder}`, { [placeholder]: { N: String(value) } });

/** `attribute = placeholder` with `value`: a SET clause. */
export const assign = (attribute: string, placeholder: string, value: AttributeValue): Part =>
  part(`${attribute} = ${placeholder}`, { [placeholder]: value });

/** A condition built with `when` (src/aws/owned-record.ts) as a part (placeholders `#o<n>`, `:o<n>`). */
export function condition(c: Cond): Part {
  const b = build(c);
  return part(b.expr, b.values, b.names);
}

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

  /** An Update action; a failed condition returns the item as it was (`ALL_OLD`). */
  toUpdate(table: string, key: Attrs): TransactWriteItem {
    const updateExpression = this.updateText();
    const conditionExpression = this.conditionText();
    return {
      Update: {
        TableName: table,
        Key: key,
        UpdateExpression: updateExpression,
        ...(conditionExpression === '' ? {} : { ConditionExpression: conditionExpression }),
        ...this.placeholders([updateExpression, conditionExpression]),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /** {@link toUpdate} as the input of a single UpdateItem (outside a transaction). */
  toUpdateItem(table: string, key: Attrs): UpdateItemCommandInput {
    return this.toUpdate(table, key).Update as UpdateItemCommandInput;
  }

  /** A ConditionCheck action: the conditions only; `returnOld`: a failed one returns the item (`ALL_OLD`). */
  toConditionCheck(table: string, key: Attrs, { returnOld = false } = {}): TransactWriteItem {
    const conditionExpression = this.conditionText();
    return {
      ConditionCheck: {
        TableName: table,
        Key: key,
        ConditionExpression: conditionExpression,
        ...this.placeholders([conditionExpression]),
        ...(returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
      },
    };
  }

  /** The merged names and values, checked against the texts that use them. */
  private placeholders(texts: string[]): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Attrs;
  } {
    const names: Record<string, string> = {};
    const values: Attrs = {};
    for (const p of [...this.setParts, ...this.removeParts, ...this.conditionParts]) {
      for (const [k, v] of Object.entries(p.names ?? {})) define(names, k, v, (a, b) => a === b);
      for (const [k, v] of Object.entries(p.values ?? {}))
        define(values, k, v, (a, b) => JSON.stringify(a) === JSON.stringify(b));
    }
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
}

function define<T>(into: Record<string, T>, key: string, value: T, same: (a: T, b: T) => boolean): void {
  if (key in into && !same(into[key], value)) throw new Error(`expression placeholder ${key} stands for two things`);
  into[key] = value;
}

/** A new {@link Expression}. */
export const expression = (): Expression => new Expression();
