/**
 * One `events.create` call as its handlers see it (`CreateCall`), what a handler reports back
 * (`Outcome`, assembled into the `EventResult` by `create.ts`), and the two ways a handler ends
 * early: `Resolved` (answer without a further write) and `Restart` (the state it decided on moved;
 * decide again from a fresh read).
 */
import type { CreateEventParams, EventResult, Hook, ResolveData, Step, Wait, WorkflowRun } from '@workflow/world';
import type { RunItemCache, StepItemCache } from '../memory/items.js';
import type { SlotHints } from '../memory/slot-hints.js';
import type { EventRecord, EventStamp } from '../records/event.js';
import type { StorageCtx } from '../table/context.js';
import type { Position } from './position.js';

export interface CreateCall {
  readonly ctx: StorageCtx;
  readonly hints: SlotHints;
  readonly steps: StepItemCache;
  readonly runs: RunItemCache;
  readonly params: CreateEventParams | undefined;
  readonly rd: ResolveData;
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

/** A handler finished without (another) write: return this result as is. */
export class Resolved extends Error {
  constructor(readonly result: EventResult) {
    super('resolved');
  }
}

/** The state a handler decided on moved under it: start over from a fresh read. */
export class Restart extends Error {
  constructor() {
    super('restart');
  }
}
