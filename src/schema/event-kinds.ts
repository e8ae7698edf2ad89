/**
 * Event kinds: one row per event type of `@workflow/world`'s union (`EventType`), stating what
 * every part of the World needs to know of an event by its type alone. Adding an event type is a
 * row here plus its writer (`HANDLERS` in src/storage/write/create.ts, typed from this table);
 * the parts derive their sets from the rows, where they enforce them:
 *
 * - `writer`, `correlated`, `metric`: events.create (src/storage/write/create.ts);
 * - `opensCorrelation`: the log item's correlation index key (src/storage/records/event.ts);
 * - `changesRun`: the started run's preload from memory (src/storage/write/run-started.ts);
 * - `replayOwed`: the liveness backstop (src/backstop/decide.ts);
 * - `lifecycle`: what the CLI folds from a log (src/cli/run-waits.ts, src/cli/redrive/stranded.ts).
 *
 * Invariants (checked by the compiler and test/unit/schema/event-kinds.test.ts):
 * - **Every event type has exactly one row**: `satisfies Record<EventType, EventKind>` makes a
 *   missing or unknown type a compile error, and `HANDLERS` must hold exactly the types written
 *   by `core` (run_created aside: its own path). A fact a row does not name is false (or none).
 * - **Facts of the type only**, never of an event's data: event data stays opaque to the table.
 * - **An opened correlation is a correlation**: `opensCorrelation` and `lifecycle` imply `correlated`.
 * - **Only what events.create commits is counted**: a `metric` only on a row written by `core`.
 */
import type { EventType } from '@workflow/world';
import type { MetricName } from '../telemetry/metrics.js';

/** An entity's life as the CLI folds it from the log: what the event does to its step, hook or wait. */
export type Lifecycle =
  | { readonly of: 'step'; readonly phase: 'opens' | 'starts' | 'retries' | 'ends' }
  | { readonly of: 'hook'; readonly phase: 'opens' | 'receives' | 'ends' }
  | { readonly of: 'wait'; readonly phase: 'opens' | 'ends' };

export interface EventKind {
  /**
   * Who writes it: `core` through `events.create` (a writer in `HANDLERS`), `world` inside another
   * event's writer (refused as a request), `none` (this World refuses it).
   */
  readonly writer: 'core' | 'world' | 'none';
  /** Its entity (step, hook, wait) is named by `correlationId`: a request without one is refused. */
  readonly correlated: boolean;
  /**
   * It opens a correlation, so its log item carries the correlation index key: at most one index
   * write per hook or wait (src/storage/read/correlation.ts). A step's `step_created` opens none:
   * its step item records the slot (`firstSlot`), so a step's events are found without an index copy.
   */
  readonly opensCorrelation: boolean;
  /** It changes the run item after the run started (an attribute, an end). */
  readonly changesRun: boolean;
  /** Counted as this metric once committed (src/telemetry/metrics.ts). */
  readonly metric: MetricName | null;
  /** The workflow owes a replay after it: something it waits for has happened. */
  readonly replayOwed: boolean;
  /** What it does to a step, hook or wait the run waits on. */
  readonly lifecycle: Lifecycle | null;
}

/** A row: its writer and the facts that hold (a fact not named is false, or none). */
function kind<const W extends EventKind['writer']>(
  writer: W,
  facts: Partial<Omit<EventKind, 'writer'>> = {},
): EventKind & { readonly writer: W } {
  const none = { correlated: false, opensCorrelation: false, changesRun: false, replayOwed: false };
  return { ...none, metric: null, lifecycle: null, ...facts, writer };
}

const step = (phase: Extract<Lifecycle, { of: 'step' }>['phase']): Lifecycle => ({ of: 'step', phase });
const hook = (phase: Extract<Lifecycle, { of: 'hook' }>['phase']): Lifecycle => ({ of: 'hook', phase });
const wait = (phase: Extract<Lifecycle, { of: 'wait' }>['phase']): Lifecycle => ({ of: 'wait', phase });

/** Every event type and its facts, one row each. */
export const EVENT_KINDS = {
  run_created: kind('core', { replayOwed: true }),
  run_started: kind('core', { metric: 'RunsStarted', replayOwed: true }),
  run_completed: kind('core', { changesRun: true, metric: 'RunsCompleted' }),
  run_failed: kind('core', { changesRun: true, metric: 'RunsFailed' }),
  run_cancelled: kind('core', { changesRun: true, metric: 'RunsCancelled' }),
  attr_set: kind('core', { changesRun: true }),
  step_created: kind('core', { correlated: true, lifecycle: step('opens') }),
  step_started: kind('core', { correlated: true, lifecycle: step('starts') }),
  step_completed: kind('core', {
    correlated: true,
    metric: 'StepsCompleted',
    replayOwed: true,
    lifecycle: step('ends'),
  }),
  step_failed: kind('core', { correlated: true, metric: 'StepsFailed', replayOwed: true, lifecycle: step('ends') }),
  step_retrying: kind('core', { correlated: true, metric: 'StepsRetried', lifecycle: step('retries') }),
  hook_created: kind('core', { correlated: true, opensCorrelation: true, lifecycle: hook('opens') }),
  hook_received: kind('core', { correlated: true, replayOwed: true, lifecycle: hook('receives') }),
  hook_disposed: kind('core', { correlated: true, lifecycle: hook('ends') }),
  // Written by hook_created's writer in its place when the token is taken.
  hook_conflict: kind('world', { correlated: true, opensCorrelation: true, replayOwed: true }),
  wait_created: kind('core', { correlated: true, opensCorrelation: true, lifecycle: wait('opens') }),
  wait_completed: kind('core', { correlated: true, replayOwed: true, lifecycle: wait('ends') }),
  noop: kind('none'),
} as const satisfies Record<EventType, EventKind>;

/** The event types a core writes through events.create. */
export type CoreEventType = {
  [T in EventType]: (typeof EVENT_KINDS)[T]['writer'] extends 'core' ? T : never;
}[EventType];

/** The kind of an event type, or undefined for a type outside the union (never an inherited property). */
export function eventKind(type: string): EventKind | undefined {
  return Object.hasOwn(EVENT_KINDS, type) ? EVENT_KINDS[type as EventType] : undefined;
}

/** The event types whose kind satisfies `test`: the set a part derives from the table. */
export function eventTypesWhere(test: (kind: EventKind) => boolean): ReadonlySet<string> {
  return new Set(Object.entries(EVENT_KINDS).flatMap(([type, k]) => (test(k) ? [type] : [])));
}
