/**
 * run_started, incl. the resilient start: reads the run view and the log tail in one Query
 * (`readRunTail`, or from memory when warm and no preload is asked for), decides from that state,
 * and commits one transaction whose `RUN#meta` condition restates the decision. If the state moved
 * in between, the ALL_OLD item names the new state and the start is decided again ({@link
 * restartable}).
 *
 * - pending: the run becomes running (`startedAt` kept if set), and the event is appended.
 * - running: idempotent, no event; the run (and the log, with a preload) is answered as is.
 * - terminal: `RunExpiredError`.
 * - missing, with creation data on the event: the resilient start creates it, with a synthetic
 *   run_created paired with the start in one log item.
 */
import { RunExpiredError, WorkflowRunNotFoundError } from '@workflow/errors';
import type { EventResult } from '@workflow/world';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { expression, when } from '../../aws/expression.js';
import { currentDelivery } from '../../context/delivery-scope.js';
import { eventTypesWhere } from '../../schema/event-kinds.js';
import { keys } from '../../schema/keys.js';
import { type RunTail, readRunTail } from '../read/log-tail.js';
import { dueOnCreate } from '../records/due.js';
import { atSlot, cursorAt, type EventRecord, eventItem, newEvent, pairEvents, toEvent } from '../records/event.js';
import { isTerminalRun } from '../records/lifecycle.js';
import { parseRun, type RunRecord, runItem, toRun } from '../records/run.js';
import { keysOf } from '../table/codec.js';
import { commit } from './commit.js';
import { putEvent, putNew } from './conditions.js';
import {
  type CreateCall,
  type EventData,
  endedEarly,
  type Handled,
  type Outcome,
  RESTART,
  type Resolved,
  type Restart,
  resolved,
  restartable,
} from './create-call.js';
import { type Position, startPosition } from './position.js';
import { assertSpec, rereadRunOnGuard } from './run-guard.js';
import { newRun, placeRunInput, validateSeedAttributes } from './run-seed.js';

export function runStarted(call: CreateCall, runId: string, data: EventData): Promise<Handled> {
  return restartable('run_started', () => runStartedOnce(call, runId, data));
}

async function runStartedOnce(call: CreateCall, runId: string, data: EventData): Promise<Outcome | Resolved | Restart> {
  const preload = call.params?.skipPreload !== true;
  const state = await readStartState(call, runId, preload);
  if ('answer' in state) return state.answer;
  const event = newEvent(call.stamp, runId, data, 'run_started', undefined); // eventData belongs on run_created only
  if (!state.read.run) return resilientStart(call, runId, data, state, event);
  const record = parseRun(state.read.run);
  assertSpec(record);
  if (isTerminalRun(record.status)) {
    throw new RunExpiredError(
      `Workflow run "${runId}" is already in terminal state "${record.status}"`,
      runId,
      record.status,
    );
  }
  if (record.status === 'running')
    return resolved({
      run: await toRun(call.ctx, record, call.resolveData),
      ...(state.preload ? await logPage(call, state.read.events) : {}),
    } as EventResult);
  return startPending(call, runId, record, state, event);
}

/** What a start decides from: the run and the log as read (or remembered), and the position the write starts at. */
interface StartState {
  /** With a preload, the events read are the whole log. */
  readonly preload: boolean;
  /** The run came from this process's memory (the write is then conditioned on its attributes' version). */
  readonly remembered: boolean;
  readonly read: RunTail;
  readonly pos: Position;
}

/**
 * The run and the log tail a start decides from: remembered (warm, without a preload: the run as
 * this process created it, the tail from memory, no read), or read with `readRunTail` (a preload
 * reads only what follows a prefix this process remembers). `answer`: a started run's preload
 * answered from memory alone ({@link preloadFromMemory}).
 */
async function readStartState(
  call: CreateCall,
  runId: string,
  preload: boolean,
): Promise<StartState | { readonly answer: Resolved }> {
  const { ctx, params } = call;
  const start = startPosition(params);
  const callerTail = start.last;
  // Warm, without a preload: the start is conditioned on what it relies on (pending, the
  // attributes' version).
  const hint = call.hints.get(runId);
  const remembered = !preload && (callerTail !== undefined || hint !== undefined) ? call.runs.known(runId) : undefined;
  // The log is append-only: a prefix this process remembers (it wrote or read those slots) is
  // exactly what a read would return, so the preload reads only the run and the events after it.
  const prefix = preload && !remembered && hint !== undefined ? call.hints.recent(runId, 0, hint) : undefined;
  if (prefix) {
    const known = preloadFromMemory(call, runId, hint!, prefix);
    if (known)
      return {
        answer: resolved({
          run: await toRun(ctx, known, call.resolveData),
          ...(await logPage(call, prefix)),
        } as EventResult),
      };
  }
  const read: RunTail = remembered
    ? { run: remembered, events: [], tail: callerTail ?? hint! }
    : await readRunTail(ctx, runId, preload ? (prefix ? hint : 0) : callerTail);
  if (prefix) read.events = [...prefix, ...read.events];
  // Remembered: the caller's own position as given (a half-form cursor keeps its mark for
  // `advance`); read: the tail the read ended at, never inside a pair (../read/log-tail.ts).
  const pos: Position = remembered
    ? callerTail !== undefined
      ? start
      : { last: hint, collect: [] }
    : { last: read.tail, collect: preload || callerTail === undefined ? [] : [...read.events] };
  return { preload, remembered: remembered !== undefined, read, pos };
}

/** Pending -> running (header), conditioned on still pending and on a remembered `attrVer`. */
async function startPending(
  call: CreateCall,
  runId: string,
  record: RunRecord,
  state: StartState,
  event: EventRecord,
): Promise<Outcome | Resolved | Restart> {
  const { ctx } = call;
  const { read, pos, preload } = state;
  const next: RunRecord = {
    ...record,
    status: 'running',
    startedAt: record.startedAt ?? call.now,
    updatedAt: call.now,
  };
  const now = call.now.getTime();
  const startRun = expression()
    .set({ status: 'running' })
    .setIfAbsent({ startedAt: now })
    .set({ updatedAt: now })
    .when(when.is('status', 'pending'));
  if (state.remembered) startRun.when(when.is('attrVer', record.attrVer));
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'run_started',
    build: (slot) => ({
      items: [startRun.toUpdate(ctx.table, keysOf(keys.runMeta(runId))), putEvent(ctx, eventItem(atSlot(event, slot)))],
      eventIdx: 1,
    }),
    onGuard: rereadRunOnGuard(call, runId),
  });
  if (endedEarly(done)) return done;
  call.runs.remember(runId, {
    ...read.run,
    status: { S: 'running' },
    startedAt: { N: String(next.startedAt!.getTime()) },
    updatedAt: { N: String(call.now.getTime()) },
  });
  return {
    own: [atSlot(event, done.slot)],
    pos,
    run: await toRun(ctx, next, call.resolveData),
    preload: preload ? read.events : undefined,
    fullLog: preload,
  };
}

/**
 * Events that change the run item after its start (src/schema/event-kinds.ts, `changesRun`): one in
 * a remembered prefix means the remembered item may be older.
 */
const RUN_ITEM_EVENTS = eventTypesWhere((k) => k.changesRun);

/**
 * The run, when a started run's preload can be answered from memory alone (no read): inside a
 * delivery whose sender had seen the log no further than `hint` (its `eve.tail`), with every event
 * 1..`hint` remembered (`prefix`), and the run item this process remembers is `running` with
 * nothing in the prefix that changes a run item after its start (an `attr_set`, an end). Why that
 * is enough is the argument of `events.list` from memory (../read/events.ts): 1..hint is the whole
 * log as of the moment `hint` committed, and the remembered item is the run as of then. Whatever
 * core then writes is conditioned on the run item as usual (the run guard), so a run ended
 * meanwhile fails that write, as after any read.
 */
function preloadFromMemory(
  call: CreateCall,
  runId: string,
  hint: number,
  prefix: EventRecord[],
): RunRecord | undefined {
  const need = currentDelivery()?.logTails.get(runId);
  if (need === undefined || need > hint) return undefined;
  const item = call.runs.known(runId);
  if (item?.status?.S !== 'running') return undefined;
  let started = false;
  for (const e of prefix) {
    if (e.eventType === 'run_started') started = true;
    else if (RUN_ITEM_EVENTS.has(e.eventType)) return undefined;
  }
  if (!started) return undefined;
  const rec = parseRun(item);
  assertSpec(rec);
  return rec;
}

/** No run: created when the start carries its creation data (with a synthetic run_created), else not found. */
async function resilientStart(
  call: CreateCall,
  runId: string,
  data: EventData,
  state: StartState,
  started: EventRecord,
): Promise<Outcome | Restart> {
  const { ctx } = call;
  const eventData: EventData | undefined = data.eventData;
  if (
    !eventData ||
    typeof eventData.deploymentId !== 'string' ||
    typeof eventData.workflowName !== 'string' ||
    eventData.input === undefined
  ) {
    throw new WorkflowRunNotFoundError(runId);
  }
  const { pos } = state;
  const before = state.preload ? state.read.events : undefined;
  validateSeedAttributes(eventData);
  const specVersion = data.specVersion ?? SPEC_VERSION_CURRENT;
  const input = await placeRunInput(call, runId, eventData);
  const run: RunRecord = {
    ...newRun(call, runId, eventData, specVersion, input),
    status: 'running',
    startedAt: call.now,
  };
  const created = newEvent(call.stamp, runId, { specVersion: data.specVersion }, 'run_created', eventData);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'run_started',
    build: (slot) => ({
      items: [
        putNew(ctx, runItem(run)),
        // One pair item: the synthetic run_created at `slot`, the start at `slot + 1`.
        putEvent(
          ctx,
          eventItem({ ...atSlot(created, slot), eventData: { ...eventData, input } }, atSlot(started, slot + 1)),
        ),
        dueOnCreate(ctx, runId, Date.now() + ctx.config.backstopSeconds * 1000, slot + 1),
      ],
      eventIdx: 1,
    }),
    onGuard: () => RESTART, // a concurrent run_created won: continue as an ordinary start
  });
  if (endedEarly(done)) return done;
  return {
    own: pairEvents(atSlot(created, done.slot), atSlot(started, done.slot + 1)),
    pos,
    run: await toRun(ctx, { ...run, input: eventData.input }, call.resolveData),
    preload: before,
    fullLog: before !== undefined,
  };
}

/** The whole log as one page (the preload of an idempotent start). */
async function logPage(call: CreateCall, events: EventRecord[]) {
  return {
    events: await Promise.all(events.map((e) => toEvent(call.ctx, e, call.resolveData))),
    cursor: events.length > 0 ? cursorAt(events[events.length - 1]) : null,
    hasMore: false,
  };
}
