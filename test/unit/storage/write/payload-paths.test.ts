/**
 * A purge removes the payload fields of every event a log item holds (src/storage/write/retention.ts),
 * the second event of a pair item (src/storage/records/event.ts) included. Pure: builds items, no AWS.
 */
import { expect, it } from 'vitest';
import { expression } from '../../../../src/aws/expression.js';
import { type EventRecord, eventItem } from '../../../../src/storage/records/event.js';
import { payloadPaths } from '../../../../src/storage/write/retention.js';
import { spelled } from '../../../helpers/expression-text.js';

const ev = (slot: number, eventType: string, eventData: Record<string, unknown>): EventRecord => ({
  runId: 'wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  slot,
  eventType,
  correlationId: 'step_1',
  eventData,
  createdAt: new Date(0),
});

/** The REMOVE paths of `item`, as document paths. */
function removed(item: ReturnType<typeof eventItem>): string[] {
  return payloadPaths(item).map((p) => (typeof p === 'string' ? p : p.join('.')));
}

it('lists the ref fields of both events of a pair item, the second under its map', () => {
  const pair = eventItem(
    ev(3, 'step_created', { stepName: 's', input: 'in' }),
    // Today's pairs carry no ref field in their second event; a purge must not depend on that.
    ev(4, 'step_started', { stepName: 's', input: 'also-in', ownerMessageId: 'm' }),
  );
  expect(removed(pair)).toEqual(['ed.input', 'e2.ed.input']);
  expect(removed(eventItem(ev(5, 'step_completed', { result: 'r' })))).toEqual(['ed.result']);
});

it('renders as one REMOVE clause, each segment behind a placeholder defined once', () => {
  const pair = eventItem(
    ev(3, 'step_created', { stepName: 's', input: 'in' }),
    ev(4, 'step_started', { stepName: 's', input: 'also-in' }),
  );
  const update = expression()
    .remove(...payloadPaths(pair))
    .toUpdateItem('t', { PK: { S: 'p' }, SK: { S: 's' } });
  expect(spelled(update)).toEqual({ UpdateExpression: 'REMOVE ed.input, e2.ed.input' });
  expect(Object.values(update.ExpressionAttributeNames ?? {})).toEqual(['ed', 'input', 'e2']);
});
