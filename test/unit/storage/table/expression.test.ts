/**
 * storage/table/expression.ts: parts render to the expression text and placeholders DynamoDB receives,
 * and a part whose placeholders are out of step with its text is refused before it is sent.
 */
import { SPEC_VERSION_MAX_SUPPORTED } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { when as ownedWhen } from '../../../../src/aws/record-conditions.js';
import {
  NOT_TERMINAL,
  runIsTerminal,
  runNotTerminal,
  TERMINAL_VALUES,
} from '../../../../src/storage/records/lifecycle.js';
import {
  anyOf,
  assign,
  assignIfAbsent,
  atMost,
  attributeAbsent,
  beginsWith,
  built,
  equals,
  expression,
  grouped,
  itemAbsent,
  itemExists,
  named,
  not,
  numberIs,
  part,
  readInput,
  setStatus,
  statusIs,
  stringIs,
  condition as whenPart,
} from '../../../../src/storage/table/expression.js';
import type { StorageCtx } from '../../../../src/storage/table/storage-ctx.js';
import { putEvent, putNew } from '../../../../src/storage/write/conditions.js';
import { holdingRunGuard, runGuard } from '../../../../src/storage/write/run-guard.js';
import { startFence } from '../../../../src/storage/write/step-lease.js';
import { stepUnmoved } from '../../../../src/storage/write/step-transition.js';

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

describe('the builders', () => {
  it('render their text with exactly the placeholders they use', () => {
    expect(assign(named('#ttl', 'ttl'), ':t', { N: '9' })).toEqual({
      text: '#ttl = :t',
      names: { '#ttl': 'ttl' },
      values: { ':t': { N: '9' } },
    });
    expect(stringIs('runId', ':r', 'wrun_1')).toEqual({ text: 'runId = :r', values: { ':r': { S: 'wrun_1' } } });
    expect(equals('ver', ':v', { N: '2' }).text).toBe('ver = :v');
    expect(atMost('tokenRetentionUntil', ':now', { N: '5' }).text).toBe('tokenRetentionUntil <= :now');
    expect(assignIfAbsent('startedAt', ':now', { N: '5' }).text).toBe('startedAt = if_not_exists(startedAt, :now)');
    expect(itemAbsent).toEqual({ text: 'attribute_not_exists(PK)' });
    expect(attributeAbsent(named('#f', 'format'))).toEqual({
      text: 'attribute_not_exists(#f)',
      names: { '#f': 'format' },
    });
    expect(not(statusIs(':x', 'done'))).toEqual({
      text: 'NOT (#st = :x)',
      names: { '#st': 'status' },
      values: { ':x': { S: 'done' } },
    });
    expect(runIsTerminal.text).toBe(`NOT (${NOT_TERMINAL})`);
  });

  it('anyOf joins with OR in parentheses and merges the placeholders', () => {
    const either = anyOf(attributeAbsent('specVersion'), atMost('specVersion', ':maxsv', { N: '7' }));
    expect(either).toEqual({
      text: '(attribute_not_exists(specVersion) OR specVersion <= :maxsv)',
      values: { ':maxsv': { N: '7' } },
    });
    expect(() => anyOf(stringIs('a', ':v', 'x'), stringIs('b', ':v', 'y'))).toThrow(/:v stands for two things/);
  });

  it('grouped keeps a condition built elsewhere binding first', () => {
    const fence = built({ expr: 'a = :o0 OR b = :o0', names: {}, values: { ':o0': { N: '1' } } });
    const action = expression()
      .when(numberIs('ver', ':v', 3), grouped(fence))
      .toPut('t', KEY, { returnOld: true });
    expect(action.Put?.ConditionExpression).toBe('ver = :v AND (a = :o0 OR b = :o0)');
    expect(action.Put?.ExpressionAttributeValues).toEqual({ ':v': { N: '3' }, ':o0': { N: '1' } });
  });
});

describe('condition-only actions: Put and Delete', () => {
  const item = { ...KEY, a: { S: 'x' } };

  it('a conditional Put carries the condition, its placeholders and ALL_OLD only when asked', () => {
    expect(expression().when(statusIs(':w', 'waiting')).toPut('t', item, { returnOld: true })).toEqual({
      Put: {
        TableName: 't',
        Item: item,
        ConditionExpression: '#st = :w',
        ExpressionAttributeNames: { '#st': 'status' },
        ExpressionAttributeValues: { ':w': { S: 'waiting' } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    expect(expression().when(itemAbsent).toPut('t', item, { returnOld: false })).toEqual({
      Put: { TableName: 't', Item: item, ConditionExpression: 'attribute_not_exists(PK)' },
    });
  });

  it('a conditional Delete, in a transaction or alone', () => {
    const owned = expression().when(stringIs('runId', ':r', 'r'), stringIs('hookId', ':h', 'h'));
    expect(owned.toDelete('t', KEY, { returnOld: false })).toEqual({
      Delete: {
        TableName: 't',
        Key: KEY,
        ConditionExpression: 'runId = :r AND hookId = :h',
        ExpressionAttributeValues: { ':r': { S: 'r' }, ':h': { S: 'h' } },
      },
    });
    expect(owned.toDeleteItem('t', KEY, { returnOld: true })).toEqual({
      TableName: 't',
      Key: KEY,
      ConditionExpression: 'runId = :r AND hookId = :h',
      ExpressionAttributeValues: { ':r': { S: 'r' }, ':h': { S: 'h' } },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });

  it('refuses SET or REMOVE parts, or no condition, on a condition-only action', () => {
    expect(() =>
      expression()
        .set(assign('a', ':a', { N: '1' }))
        .when(itemExists)
        .toPut('t', item, { returnOld: false }),
    ).toThrow(/condition only/);
    expect(() => expression().remove(part('a')).when(itemExists).toDelete('t', KEY, { returnOld: false })).toThrow(
      /condition only/,
    );
    expect(() => expression().toPut('t', item, { returnOld: false })).toThrow(/without a condition/);
  });

  it('an UpdateItem without ALL_OLD when asked', () => {
    expect(
      expression()
        .set(assign('expiredAt', ':e', { N: '1' }))
        .when(itemExists)
        .toUpdateItem('t', KEY, { returnOld: false }),
    ).toEqual({
      TableName: 't',
      Key: KEY,
      UpdateExpression: 'SET expiredAt = :e',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':e': { N: '1' } },
    });
  });
});

describe('readInput', () => {
  it('renders a key condition, a filter and a projection with the merged placeholders', () => {
    expect(
      readInput({
        key: [stringIs('PK', ':pk', 'RUN#r'), beginsWith('SK', ':w', 'WAIT#')],
        filter: [statusIs(':waiting', 'waiting')],
        projection: ['PK', 'SK'],
      }),
    ).toEqual({
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :w)',
      FilterExpression: '#st = :waiting',
      ProjectionExpression: 'PK, SK',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':pk': { S: 'RUN#r' }, ':w': { S: 'WAIT#' }, ':waiting': { S: 'waiting' } },
    });
  });

  it('a projection alone, its names behind placeholders', () => {
    expect(readInput({ projection: ['PK', named('#st', 'status'), named('#ttl', 'ttl')] })).toEqual({
      ProjectionExpression: 'PK, #st, #ttl',
      ExpressionAttributeNames: { '#st': 'status', '#ttl': 'ttl' },
    });
  });

  it('refuses placeholders out of step', () => {
    expect(() => readInput({ key: [part('PK = :pk')] })).toThrow(/used but not defined \[:pk\]/);
  });
});

describe('the create claims, built from parts', () => {
  const ctx = { table: 't' } as StorageCtx;
  const item = { ...KEY, a: { S: 'x' } };

  it('putNew reports the item it found; putEvent (the slot claim) does not', () => {
    expect(putNew(ctx, item)).toEqual({
      Put: {
        TableName: 't',
        Item: item,
        ConditionExpression: 'attribute_not_exists(PK)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    expect(putEvent(ctx, item)).toEqual({
      Put: { TableName: 't', Item: item, ConditionExpression: 'attribute_not_exists(PK)' },
    });
  });
});

describe('a step transition’s put, built from parts', () => {
  const step = { ver: 4 } as Parameters<typeof stepUnmoved>[0];
  const item = { PK: { S: 'RUN#r' }, SK: { S: 'STEP#s' } };
  const next = {} as Parameters<typeof stepUnmoved>[1]['next'];

  it('without a lease: the version only', () => {
    expect(stepUnmoved(step, { next, eventData: undefined }).toPut('t', item, { returnOld: true })).toEqual({
      Put: {
        TableName: 't',
        Item: item,
        ConditionExpression: 'ver = :v',
        ExpressionAttributeValues: { ':v': { N: '4' } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });

  it('a leased start: the version AND the lease fence in parentheses, with the fence’s placeholders', () => {
    const fence = startFence({ token: 'tok', ttlMs: 10_000, started: new Map() }, { runId: 'r', stepId: 's' }, true);
    expect(fence.expr).toMatch(/ OR /); // why the parentheses matter
    expect(stepUnmoved(step, { next, eventData: undefined, fence }).toPut('t', item, { returnOld: true })).toEqual({
      Put: {
        TableName: 't',
        Item: item,
        ConditionExpression: `ver = :v AND (${fence.expr})`,
        ExpressionAttributeNames: fence.names,
        ExpressionAttributeValues: { ':v': { N: '4' }, ...fence.values },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });
});
