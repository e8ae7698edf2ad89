/**
 * The log item codec (src/storage/records/event.ts): a pair item holds its second event in `e2`
 * encoded exactly as that event's own item would hold it, reads back as the two events, covers
 * two slots, and never carries a correlation index key. Pure: builds items, no AWS.
 */
import { expect, it } from 'vitest';
import {
  type EventRecord,
  eventItem,
  eventsOf,
  lastSlotOf,
  PAIR_ATTR,
  parseEvents,
} from '../../../../src/storage/records/event.js';

const runId = 'wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV';
const ev = (slot: number, eventType: string, over: Partial<EventRecord> = {}): EventRecord => ({
  runId,
  slot,
  eventType,
  correlationId: 'step_1',
  eventData: { stepName: 's', input: new Uint8Array([1, 0, 2]), at: new Date(5) },
  createdAt: new Date(1_000),
  occurredAt: new Date(900),
  specVersion: 3,
  extra: { newerField: true },
  ...over,
});

it('stores the second event exactly as its own item would, and reads both back', () => {
  const created = ev(7, 'step_created');
  const started = ev(8, 'step_started', { eventData: { stepName: 's', ownerMessageId: 'm' }, extra: undefined });
  const pair = eventItem(created, started);
  // The format stamp is the item's, not the event's: a pair carries one, at the top level.
  const { PK, SK, fv, ...alone } = eventItem(started);
  expect(fv).toEqual(pair.fv);
  expect(SK.S).toBe('EVT#00000000000000000008');
  expect(pair[PAIR_ATTR]).toEqual({ M: alone });
  expect(pair.SK.S).toBe('EVT#00000000000000000007');
  expect(parseEvents(pair)).toEqual([{ ...created, pairedWithNext: true }, started]);
  expect(lastSlotOf(pair)).toBe(8);
  expect(lastSlotOf(eventItem(created))).toBe(7);
  // Bounds inside the pair drop the half outside them, both ways.
  expect(eventsOf([pair], { after: 7 }).map((e) => e.slot)).toEqual([8]);
  expect(eventsOf([pair], { before: 8 }, true).map((e) => e.slot)).toEqual([7]);
  expect(eventsOf([pair], {}, true).map((e) => e.slot)).toEqual([8, 7]);
});

it('refuses a pair of non-consecutive slots or with a correlation-opening event; a single hook event keeps its index key', () => {
  expect(() => eventItem(ev(7, 'step_created'), ev(9, 'step_started'))).toThrow(/consecutive/);
  expect(() => eventItem(ev(7, 'step_created'), ev(8, 'wait_created'))).toThrow(/correlation/);
  expect(() => eventItem(ev(7, 'hook_created'), ev(8, 'step_started'))).toThrow(/correlation/);
  expect(eventItem(ev(7, 'hook_created')).GSI1SK).toEqual({ S: 'EVT#00000000000000000007' });
  expect(eventItem(ev(7, 'step_created'), ev(8, 'step_started')).GSI1PK).toBeUndefined();
});
