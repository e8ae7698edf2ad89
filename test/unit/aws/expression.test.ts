/**
 * src/aws/expression.ts, the one condition language: conditions, updates and reads render to the
 * expressions DynamoDB receives (asserted by what they say, placeholders resolved:
 * test/helpers/expression-text.ts), and an action whose placeholders are out of step with its
 * text, or a condition-only action with SET or REMOVE, is refused before it is sent.
 * (The language against DynamoDB itself: every writer's integration test, and
 * test/integration/aws/owned-record.test.ts.)
 */
import { SPEC_VERSION_MAX_SUPPORTED, TERMINAL_WORKFLOW_RUN_STATUSES } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { type Cond, expression, readInput, when } from '../../../src/aws/expression.js';
import { runIsTerminal, runNotTerminal } from '../../../src/storage/records/lifecycle.js';
import type { StorageCtx } from '../../../src/storage/table/storage-ctx.js';
import { putEvent, putNew } from '../../../src/storage/write/conditions.js';
import { holdingRunGuard, runGuard } from '../../../src/storage/write/run-guard.js';
import { startFence } from '../../../src/storage/write/step-lease.js';
import { stepUnmoved } from '../../../src/storage/write/step-transition.js';
import { condText, spelled } from '../../helpers/expression-text.js';

const KEY = { PK: { S: 'RUN#r' }, SK: { S: 'RUN#meta' } };
const TERMINAL = `status IN (${TERMINAL_WORKFLOW_RUN_STATUSES.map((s) => JSON.stringify(s)).join(', ')})`;

describe('expression', () => {
  it('renders SET, REMOVE and AND-joined conditions, every name and value behind a placeholder', () => {
    const action = expression()
      .set({ status: 'completed', completedAt: 5, updatedAt: 5, skipped: undefined })
      .when(when.present, runNotTerminal, when.is('attrVer', 3))
      .set({ expiredAt: 5 })
      .remove('input', ['ed', 'input'])
      .toUpdate('t', KEY);
    expect(spelled(action.Update)).toEqual({
      UpdateExpression:
        'SET status = "completed", completedAt = 5, updatedAt = 5, expiredAt = 5 REMOVE input, ed.input',
      ConditionExpression: `(attribute_exists(PK)) AND (NOT (${TERMINAL})) AND (attrVer = 3)`,
    });
    expect(action.Update?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    // One placeholder per name, however often it is used; one per value use.
    expect(Object.values(action.Update?.ExpressionAttributeNames ?? {})).toEqual([
      'status',
      'completedAt',
      'updatedAt',
      'expiredAt',
      'input',
      'ed',
      'PK',
      'attrVer',
    ]);
    expect(action.Update?.UpdateExpression).not.toMatch(/status|input/);
  });

  it('setIfAbsent keeps a value already set', () => {
    expect(spelled(expression().setIfAbsent({ startedAt: 5 }).toUpdateItem('t', KEY))).toEqual({
      UpdateExpression: 'SET startedAt = if_not_exists(startedAt, 5)',
    });
  });

  it('refuses a placeholder used but not defined, or defined but not used', () => {
    const undefinedUse: Cond = () => 'a = :missing';
    expect(() => expression().set({ a: 1 }).when(undefinedUse).toUpdate('t', KEY)).toThrow(
      /used but not defined \[:missing\]/,
    );
    const unusedValue: Cond = (x) => `attribute_exists(${x.name('a')}) OR size(${x.name('b')}) > 0${x.value(1) && ''}`;
    expect(() => expression().when(unusedValue).toConditionCheck('t', KEY)).toThrow(/defined but not used \[:v0\]/);
  });

  it('refuses an update with nothing to set or remove, and an undefined value in a condition', () => {
    expect(() => expression().when(when.present).toUpdate('t', KEY)).toThrow(/without SET, ADD or REMOVE/);
    expect(() => expression().when(when.is('a', undefined)).toConditionCheck('t', KEY)).toThrow(/undefined value/);
  });
});

describe('the building blocks', () => {
  it('say what they test', () => {
    expect(condText(when.absent)).toBe('attribute_not_exists(PK)');
    expect(condText(when.has('f'))).toBe('attribute_exists(f)');
    expect(condText(when.lacks('f'))).toBe('attribute_not_exists(f)');
    expect(condText(when.above('n', 2))).toBe('n > 2');
    expect(condText(when.below('n', 2))).toBe('n < 2');
    expect(condText(when.atMost('n', 2))).toBe('n <= 2');
    expect(condText(when.same('ttl', 'pendingTtl'))).toBe('ttl = pendingTtl');
    expect(condText(when.oneOf('s', ['a', 'b']))).toBe('s IN ("a", "b")');
    expect(condText(when.beginsWith('SK', 'WAIT#'))).toBe('begins_with(SK, "WAIT#")');
    expect(condText(when.between('SK', 'EVT#', 'RUN#meta'))).toBe('SK BETWEEN "EVT#" AND "RUN#meta"');
    expect(condText(when.asSeen('o', undefined))).toBe('attribute_not_exists(o)');
    expect(condText(when.asSeen('o', 'x'))).toBe('o = "x"');
    expect(condText(when.not(when.is('s', 'done')))).toBe('NOT (s = "done")');
    expect(condText(when.any(when.lacks('a'), when.all(when.is('a', 1), when.is('b', true))))).toBe(
      '(attribute_not_exists(a)) OR ((a = 1) AND (b = true))',
    );
    // One condition alone is itself: nested, it never doubles parentheses (DynamoDB refuses them).
    expect(condText(when.any(when.all(when.is('cid', 'c')), when.all(when.is(['p', 'cid'], 'c'))))).toBe(
      '(cid = "c") OR (p.cid = "c")',
    );
  });

  it('the run is terminal / not terminal, from @workflow/world’s list', () => {
    expect(condText(runIsTerminal)).toBe(TERMINAL);
    expect(condText(runNotTerminal)).toBe(`NOT (${TERMINAL})`);
  });
});

describe('the run guards', () => {
  const ctx = { table: 't' } as StorageCtx;
  const condition = `(attribute_exists(PK)) AND (NOT (${TERMINAL})) AND ((attribute_not_exists(specVersion)) OR (specVersion <= ${SPEC_VERSION_MAX_SUPPORTED}))`;

  it('runGuard is a ConditionCheck that returns the run it refused', () => {
    const guard = runGuard(ctx, 'r').ConditionCheck;
    expect(spelled(guard)).toEqual({ ConditionExpression: condition });
    expect(guard?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('holdingRunGuard is the same condition on an Update that sets holds', () => {
    const guard = holdingRunGuard(ctx, 'r').Update;
    expect(spelled(guard)).toEqual({ UpdateExpression: 'SET holds = true', ConditionExpression: condition });
    expect(guard?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });
});

describe('condition-only actions: ConditionCheck, Put and Delete', () => {
  const item = { ...KEY, a: { S: 'x' } };

  it('a conditional Put carries the condition, and ALL_OLD only when asked', () => {
    const put = expression().when(when.is('status', 'waiting')).toPut('t', item, { returnOld: true }).Put;
    expect(put?.Item).toBe(item);
    expect(spelled(put)).toEqual({ ConditionExpression: 'status = "waiting"' });
    expect(put?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    const plain = expression().when(when.absent).toPut('t', item, { returnOld: false }).Put;
    expect(plain?.ReturnValuesOnConditionCheckFailure).toBeUndefined();
    expect(plain?.ExpressionAttributeValues).toBeUndefined();
  });

  it('a conditional Delete, in a transaction or alone', () => {
    const owned = expression().when(when.is('runId', 'r'), when.is('hookId', 'h'));
    const d = owned.toDelete('t', KEY, { returnOld: false }).Delete;
    expect(spelled(d)).toEqual({ ConditionExpression: '(runId = "r") AND (hookId = "h")' });
    expect(d?.ReturnValuesOnConditionCheckFailure).toBeUndefined();
    const alone = owned.toDeleteItem('t', KEY, { returnOld: true });
    expect(spelled(alone)).toEqual(spelled(d));
    expect(alone.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('refuses SET or REMOVE, or no condition, on a condition-only action', () => {
    expect(() => expression().set({ a: 1 }).when(when.present).toPut('t', item, { returnOld: false })).toThrow(
      /condition only/,
    );
    expect(() => expression().remove('a').when(when.present).toDelete('t', KEY, { returnOld: false })).toThrow(
      /condition only/,
    );
    expect(() => expression().toPut('t', item, { returnOld: false })).toThrow(/without a condition/);
  });

  it('an UpdateItem without ALL_OLD when asked', () => {
    const u = expression().set({ expiredAt: 1 }).when(when.present).toUpdateItem('t', KEY, { returnOld: false });
    expect(spelled(u)).toEqual({ UpdateExpression: 'SET expiredAt = 1', ConditionExpression: 'attribute_exists(PK)' });
    expect(u.ReturnValuesOnConditionCheckFailure).toBeUndefined();
  });
});

describe('readInput', () => {
  it('renders a key condition, a filter and a projection with one set of placeholders', () => {
    const read = readInput({
      key: [when.is('PK', 'RUN#r'), when.beginsWith('SK', 'WAIT#')],
      filter: [when.is('status', 'waiting')],
      projection: ['PK', 'SK', 'status', ['ed', 'input']],
    });
    expect(spelled(read)).toEqual({
      KeyConditionExpression: 'PK = "RUN#r" AND begins_with(SK, "WAIT#")',
      FilterExpression: 'status = "waiting"',
      ProjectionExpression: 'PK, SK, status, ed.input',
    });
    expect(Object.keys(read.ExpressionAttributeNames ?? {})).toHaveLength(5);
  });

  it('refuses placeholders out of step', () => {
    expect(() => readInput({ key: [() => 'PK = :pk'] })).toThrow(/used but not defined \[:pk\]/);
  });
});

describe('the create claims', () => {
  const ctx = { table: 't' } as StorageCtx;
  const item = { ...KEY, a: { S: 'x' } };

  it('putNew reports the item it found; putEvent (the slot claim) does not', () => {
    const n = putNew(ctx, item).Put;
    const e = putEvent(ctx, item).Put;
    expect(spelled(n)).toEqual({ ConditionExpression: 'attribute_not_exists(PK)' });
    expect(spelled(e)).toEqual(spelled(n));
    expect(n?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    expect(e?.ReturnValuesOnConditionCheckFailure).toBeUndefined();
  });
});

describe('a step transition’s put', () => {
  const step = { ver: 4 } as Parameters<typeof stepUnmoved>[0];
  const item = { PK: { S: 'RUN#r' }, SK: { S: 'STEP#s' } };
  const next = {} as Parameters<typeof stepUnmoved>[1]['next'];

  it('without a lease: the version only', () => {
    const put = stepUnmoved(step, { next, eventData: undefined }).toPut('t', item, { returnOld: true }).Put;
    expect(spelled(put)).toEqual({ ConditionExpression: 'ver = 4' });
  });

  it('a leased start: the version AND the lease fence, its ORs in parentheses', () => {
    const fence = startFence({ token: 'tok', ttlMs: 10_000, started: new Map() }, { runId: 'r', stepId: 's' }, true);
    const put = stepUnmoved(step, { next, eventData: undefined, fence }).toPut('t', item, { returnOld: true }).Put;
    expect(spelled(put)).toEqual({
      ConditionExpression: '(ver = 4) AND ((attribute_not_exists(leaseUntil)) OR (leaseToken = "tok"))',
    });
  });
});
