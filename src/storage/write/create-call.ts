/**
 * One `events.create` call as its handlers see it (`CreateCall`), what a handler reports back
 * (`Outcome`, assembled into the `EventResult` by `create.ts`), and the two ways a handler ends
 * early, as returned values: `Resolved` (answer without a further write) and `Restart` (the state
 * it decided on moved; decide again from a fresh read, {@link restartable}).
 */
import { ThrottleError } from '@workflow/errors';
import type { CreateEventParams, EventResult, Hook, ResolveData, Step, Wait, WorkflowRun } from '@workflow/world';
import type { SlotHints } from '../memory/slot-hints.js';
import type { RunItemCache, StepItemCache } from '../memory/view-items.js';
import type { EventRecord, EventStamp } from '../records/event.js';
import { backoff } from '../table/contention-backoff.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import type { Position } from './position.js';

/** An event request, or its `eventData`, as core sends it: opaque beyond the fields a handler reads. */
export type EventData = Record<string, any>;

export interface CreateCall {
  readonly ctx: StorageCtx;
  readonly hints: SlotHints;
  readonly steps: StepItemCache;
  readonly runs: RunItemCache;
  readonly params: CreateEventParams | undefined;
  readonly resolveData: ResolveData;
  readonly now: Date;
  /** `now` and the params' `occurredAt`, for the events this call writes. */
  readonly stamp: EventStamp;
}

/** What a handler did; `create` turns it into the `EventResult`. */
export interface Outcome {
  /** Events this call committed, ascending, with their *original* (un-offloaded) data. */
  own: EventRecord[];
  /** Snapshot position used for the commit; `collect` holds what the write skipped over. */
  pos: Position;
  run?: WorkflowRun;
  step?: Step;
  hook?: Hook;
  wait?: Wait;
  stepCreated?: true;
  /** The run's log before this write, when the handler read it (run_started preload). */
  preload?: EventRecord[];
  /** Whether to attach the full log (preload + collect + own). */
  fullLog?: boolean;
}

/** A handler finished without (another) write: `create` returns `result` as is. */
export interface Resolved {
  readonly kind: 'resolved';
  readonly result: EventResult;
}

export const resolved = (result: EventResult): Resolved => ({ kind: 'resolved', result });

/** The state a handler decided on moved under it: start over from a fresh read ({@link restartable}). */
export interface Restart {
  readonly kind: 'restart';
}

export const RESTART: Restart = Object.freeze({ kind: 'restart' });

/** How a handler ends: its outcome, or a result given without (another) write. */
export type Handled = Outcome | Resolved;

/** Whether a handler's or a commit's value is one of the early ends rather than its outcome. */
export function endedEarly<T extends object>(value: T | Resolved | Restart): value is Resolved | Restart {
  return 'kind' in value && (value.kind === 'resolved' || value.kind === 'restart');
}

const MAX_RESTARTS = 20;

/**
 * Runs one decide-and-commit attempt until it does not ask for a {@link RESTART}, backing off
 * between attempts; after {@link MAX_RESTARTS} restarts the state is still moving and the call
 * fails (a contention error, like the commit's own limit).
 */
export async function restartable<T extends object>(
  what: string,
  attempt: () => Promise<T | Resolved | Restart>,
): Promise<T | Resolved> {
  for (let i = 0; ; i++) {
    const result = await attempt();
    if (!isRestart(result)) return result;
    if (i >= MAX_RESTARTS)
      throw new ThrottleError(`${what}: the run kept changing under the write (contention); try again`, {
        retryAfter: 1,
      });
    await backoff(i);
  }
}

function isRestart(value: object): value is Restart {
  return 'kind' in value && value.kind === 'restart';
}
