/**
 * The table of event kinds (src/schema/event-kinds.ts): one row for each event type of the
 * installed `@workflow/world` (the compiler checks the types; this checks the running package),
 * the invariants its header states, and lookups that never take an inherited property for a row.
 */
import { EventTypeSchema } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { EVENT_KINDS, eventKind, eventTypesWhere } from '../../../src/schema/event-kinds.js';
import { METRICS } from '../../../src/telemetry/metrics.js';

const rows = Object.entries(EVENT_KINDS);

describe('EVENT_KINDS', () => {
  it('has one row for each event type of the installed @workflow/world, and no other', () => {
    expect(Object.keys(EVENT_KINDS).sort()).toEqual([...EventTypeSchema.options].sort());
  });

  it('opens a correlation, or folds a lifecycle, only on a correlated type', () => {
    const bad = rows.filter(([, k]) => (k.opensCorrelation || k.lifecycle !== null) && !k.correlated);
    expect(bad.map(([t]) => t)).toEqual([]);
  });

  it('counts a metric only for a type a core writes, and only a metric of the catalogue', () => {
    const counted = rows.filter(([, k]) => k.metric !== null);
    expect(counted.length).toBeGreaterThan(0);
    for (const [type, k] of counted) {
      expect(k.writer, type).toBe('core');
      expect(Object.keys(METRICS), type).toContain(k.metric);
    }
  });

  it('looks up own rows only: an inherited property is no event type', () => {
    expect(eventKind('step_completed')).toBe(EVENT_KINDS.step_completed);
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'bogus']) {
      expect(eventKind(name), name).toBeUndefined();
    }
  });

  it('derives a set of the types whose row holds a fact', () => {
    const owed = eventTypesWhere((k) => k.replayOwed);
    expect([...owed].sort()).toEqual(
      rows
        .filter(([, k]) => k.replayOwed)
        .map(([t]) => t)
        .sort(),
    );
    expect(owed.has('hook_received')).toBe(true);
    expect(owed.has('step_started')).toBe(false);
  });
});
