/**
 * write/expression.ts: parts render to the expression text and placeholders DynamoDB receives,
 * and a part whose placeholders are out of step with its text is refused before it is sent.
 */
import { SPEC_VERSION_MAX_SUPPORTED } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { when as ownedWhen } from '../../../../src/aws/owned-record.js';
import { NOT_TERMINAL, TERMINAL_VALUES } from '../../../../src/storage/records/lifecycle.js';
import type { StorageCtx } from '../../../../src/storage/table/storage-ctx.js';
import {
  assign,
  expression,
  itemExists,
  numberIs,
  part,
  runNotTerminal,
  setStatus,
  statusIs,
  condition as whenPart,
} from '../../../../src/storage/write/expression.js';
import { holdingRunGuard, runGuard } from '../../../../src/storage/write/run-guard.js';

const KEY = { PK: { S: 'RUN#r' }, SK: { S: 'RUN#meta' } };

describe('expression', () => {
  it('renders SET, REMOVE and AND-joined conditions with the merged placeholders', () => {
    const now = { N: '5' };
    const action = expression()
      .set(setStatus(':new', 'completed'), assign('completedAt', ':now', now), assign('updatedAt', ':now', now))
      .when(itemExists, runNotTerminal, numberIs('attrVer', ':av', 3))
      .set(assign('expiredAt', ':now', now))
      .remove(part('#in', undefined, { '#in': 'input' }))
      .toUpdate('t', KEY);
    expect(action.Update).toEqual({
      TableName: 't',
      Key: KEY,
      UpdateExpression: 'SET #st = :new, completedAt = :now, updatedAt = :now, expiredAt = :now REMOVE #in',
      ConditionExpression: `attribute_exists(PK) AND ${NOT_TERMINAL} AND attrVer = :av`,
      ExpressionAttributeNames: { '#st': 'status', '#in': 'input' },
      ExpressionAttributeValues: { ':new': { S: 'completed' }, ':now': now, ...TERMINAL_VALUES, ':av': { N: '3' } },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });

  it('renders a ConditionCheck without update text', () => {
    expect(expression().when(statusIs(':x', 'cancelled')).toConditionCheck('t', KEY)).toEqual({
      ConditionCheck: {
        TableName: 't',
        Key: KEY,
        ConditionExpression: '#st = :x',
        ExpressionAttributeNames: { '#st': 'status' },
        ExpressionAttributeValues: { ':x': { S: 'cancelled' } },
      },
    });
  });

  it('refuses a placeholder used but not defined, or defined but not used', () => {
    expect(() => expression().set(part('a = :missing')).toUpdate('t', KEY)).toThrow(
      /used but not defined \[:missing\]/,
    );
    expect(() =>
      expression()
        .set(part('a = :v', { ':v': { N: '1' }, ':extra': { N: '2' } }))
        .toUpdate('t', KEY),
    ).toThrow(/defined but not used \[:extra\]/);
  });

  it('refuses one placeholder standing for two values', () => {
    expect(() =>
      expression()
        .set(assign('a', ':v', { N: '1' }), assign('b', ':v', { N: '2' }))
        .toUpdate('t', KEY),
    ).toThrow(/:v stands for two things/);
  });
});

describe('the run guards, built from parts', () => {
  const ctx = { table: 't' } as StorageCtx;
  const condition = `attribute_exists(PK) AND ${NOT_TERMINAL} AND (attribute_not_exists(specVersion) OR specVersion <= :maxsv)`;
  const values = { ...TERMINAL_VALUES, ':maxsv': { N: String(SPEC_VERSION_MAX_SUPPORTED) } };

  it('runGuard is the ConditionCheck it always was', () => {
    expect(runGuard(ctx, 'r')).toEqual({
      ConditionCheck: {
        TableName: 't',
        Key: KEY,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#st': 'status' },
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });

  it('holdingRunGuard is the same condition on an Update that sets holds', () => {
    expect(holdingRunGuard(ctx, 'r')).toEqual({
      Update: {
        TableName: 't',
        Key: KEY,
        ConditionExpression: condition,
        UpdateExpression: 'SET #holds = :held',
        ExpressionAttributeNames: { '#st': 'status', '#holds': 'holds' },
        ExpressionAttributeValues: { ...values, ':held': { BOOL: true } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });
});

describe('a `when` condition as a part, and a single UpdateItem', () => {
  it('renders the condition with its own placeholders beside the SET parts, as UpdateItem input', () => {
    const input = expression()
      .set(assign('ackedSlot', ':s', { N: '7' }))
      .when(
        whenPart(
          ownedWhen.all(
            ownedWhen.present,
            ownedWhen.any(ownedWhen.lacks('ackedSlot'), ownedWhen.below('ackedSlot', 7)),
          ),
        ),
      )
      .toUpdateItem('t', { PK: { S: 'RUN#r' }, SK: { S: 'DUE' } });
    expect(input).toEqual({
      TableName: 't',
      Key: { PK: { S: 'RUN#r' }, SK: { S: 'DUE' } },
      UpdateExpression: 'SET ackedSlot = :s',
      ConditionExpression: '(attribute_exists(#o0)) AND ((attribute_not_exists(#o1)) OR (#o1 < :o0))',
      ExpressionAttributeNames: { '#o0': 'PK', '#o1': 'ackedSlot' },
      ExpressionAttributeValues: { ':s': { N: '7' }, ':o0': { N: '7' } },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });
});
