/**
 * What a rendered DynamoDB expression says, not how its placeholders are spelled: each `#name` and
 * `:value` placeholder replaced by what it stands for (a name as written, a value as JSON), so a
 * test asserts the meaning of an expression (src/aws/expression.ts) and survives a renaming.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type Cond, Placeholders } from '../../src/aws/expression.js';
import { fromAttr } from '../../src/aws/item-codec.js';

interface Rendered {
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
}

const FIELDS = [
  'UpdateExpression',
  'ConditionExpression',
  'KeyConditionExpression',
  'FilterExpression',
  'ProjectionExpression',
];

/** The expression fields of a rendered action or read, placeholders resolved. */
export function spelled(input: Rendered | undefined): Record<string, string> {
  const r = (input ?? {}) as Rendered & Record<string, unknown>;
  const names = r.ExpressionAttributeNames ?? {};
  const values = r.ExpressionAttributeValues ?? {};
  const resolve = (text: string) =>
    text.replace(/[#:][A-Za-z0-9_]+/g, (p) =>
      p in names ? names[p] : p in values ? JSON.stringify(fromAttr(values[p])) : p,
    );
  return Object.fromEntries(FIELDS.filter((f) => typeof r[f] === 'string').map((f) => [f, resolve(r[f] as string)]));
}

/** A condition alone, rendered and resolved. */
export function condText(c: Cond): string {
  const x = new Placeholders();
  const text = c(x);
  return spelled({
    ConditionExpression: text,
    ExpressionAttributeNames: x.names,
    ExpressionAttributeValues: x.values,
  } as Rendered).ConditionExpression;
}
