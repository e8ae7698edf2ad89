/**
 * The run's end: run_completed / run_failed / run_cancelled. Reads the run view and the log tail
 * (`readRunTail`, or the remembered view when warm), decides, and commits one transaction whose
 * `RUN#meta` condition restates the decision; if the state moved in between, the ALL_OLD item names
 * the new state and the end is decided again ({@link restartable}).
 *
 * - Not terminal: the run item takes the terminal status, its output or error (offloaded like any
 *   payload), `completedAt`; then what the run held is released (run-release.ts) and retention
 *   applied (retention.ts).
 * - Cancelled, and the event is another cancel: idempotent, the event is appended and the run
 *   returned unchanged. Any other terminal: `EntityConflictError`.
 */
import { EntityConflictError, WorkflowRunNotFoundError } from '@workflow/errors';
import { expression, when } from '../../aws/expression.js';
import { keys } from '../../schema/keys.js';
import { readRunTail } from '../read/log-tail.js';
import { atSlot, type EventRecord, eventItem, newEvent } from '../records/event.js';
import { isTerminalRun, runNotTerminal } from '../records/lifecycle.js';
import { placePayloads, runPrefix } from '../records/payloads.js';
import { parseRun, type RunRecord, toRun } from '../records/run.js';
import { type Attrs, itemSize, keysOf } from '../table/codec.js';
import { commit } from './commit.js';
import { putEvent } from './conditions.js';
import {
  type CreateCall,
  type EventData,
  endedEarly,
  type Handled,
  type Outcome,
  RESTART,
  type Restart,
  restartable,
} from './create-call.js';
import { type Position, startPosition } from './position.js';
import { applyRetention, purgesOnFinish } from './retention.js';
import { assertSpec, HOLDS, mayHold, rereadRunOnGuard } from './run-guard.js';
import { releaseRun } from './run-release.js';

/** Each end's status, and the run field holding its payload: the output, the error, or none. */
const ENDS = {
  run_completed: { status: 'completed', field: 'output' },
  run_failed: { status: 'failed', field: 'error' },
  run_cancelled: { status: 'cancelled', field: undefined },
} as const;

type TerminalType = keyof typeof ENDS;

export function runTerminal(call: CreateCall, runId: string, data: EventData): Promise<Handled> {
  return restartable(String(data.eventType), () => runTerminalOnce(call, runId, data));
}

async function runTerminalOnce(call: CreateCall, runId: string, data: EventData): Promise<Outcome | Restart> {
  const { ctx, params } = call;
  const type = data.eventType as TerminalType;
  const start = startPosition(params);
  const callerTail = start.last;
  // Warm: the run view as this process last saw it, and the tail from memory (no read). The write
  // below is conditioned on what it decides from it (see ../memory/view-items.ts).
  const remembered =
    callerTail !== undefined || call.hints.get(runId) !== undefined ? call.runs.known(runId) : undefined;
  const read = remembered
    ? { run: remembered, events: [] as EventRecord[], tail: undefined }
    : await readRunTail(ctx, runId, callerTail);
  if (!read.run) throw new WorkflowRunNotFoundError(runId);
  const record = parseRun(read.run);
  assertSpec(record);
  const pos: Position = remembered
    ? start
    : { last: read.tail, collect: callerTail === undefined ? undefined : [...read.events] };

  if (isTerminalRun(record.status)) {
    if (type !== 'run_cancelled' || record.status !== 'cancelled') {
      throw new EntityConflictError(`Cannot transition run from terminal state "${record.status}"`);
    }
    return cancelAgain(call, runId, data, record, pos);
  }
  return finishRun(call, runId, data, { item: read.run, record, remembered: remembered !== undefined }, pos);
}

/** Idempotent cancel of a cancelled run: the event is appended, the run is returned unchanged. */
async function cancelAgain(
  call: CreateCall,
  runId: string,
  data: EventData,
  record: RunRecord,
  pos: Position,
): Promise<Outcome | Restart> {
  const { ctx } = call;
  const event = newEvent(call.stamp, runId, data, 'run_cancelled', data.eventData);
  const stillCancelled = expression().when(when.is('status', 'cancelled'));
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'run_cancelled',
    build: (slot) => ({
      items: [
        stillCancelled.toConditionCheck(ctx.table, keysOf(keys.runMeta(runId))),
        putEvent(ctx, eventItem(atSlot(event, slot))),
      ],
      eventIdx: 1,
    }),
    onGuard: () => RESTART,
  });
  if (endedEarly(done)) return done;
  return { own: [atSlot(event, done.slot)], pos, run: await toRun(ctx, record, call.resolveData) };
}

/** A run that is not terminal takes its end; `run` as read: its item, parsed, and whether it came from memory. */
async function finishRun(
  call: CreateCall,
  runId: string,
  data: EventData,
  run: { readonly item: Attrs; readonly record: RunRecord; readonly remembered: boolean },
  pos: Position,
): Promise<Outcome | Restart> {
  const { ctx } = call;
  const type = data.eventType as TerminalType;
  const eventData: EventData = data.eventData ?? {};
  const { record } = run;
  const { status, field } = ENDS[type];
  const value = field === undefined ? undefined : eventData[field];
  // `$retention: '0'`: the run view loses its payloads and gains `expiredAt` in the terminal
  // write itself, and the terminal event is stored without its output/error (retention.ts).
  const purge = purgesOnFinish(record.attributes);
  let stored: unknown;
  if (field && !purge) {
    const rest = { ...run.item };
    delete rest.output;
    delete rest.error;
    stored = (await placePayloads(ctx, { [field]: value }, `${runPrefix(runId)}/run`, itemSize(rest) + 512))[field];
  }
  const next: RunRecord = {
    ...record,
    status,
    input: purge ? undefined : record.input,
    output: field === 'output' ? stored : undefined,
    error: field === 'error' ? stored : undefined,
    errorCode: type === 'run_failed' ? eventData.errorCode : undefined,
    expiredAt: purge ? call.now : record.expiredAt,
    completedAt: call.now,
    updatedAt: call.now,
  };
  // A run that never held a hook or wait has nothing to release; the update's condition makes the
  // transition re-read if one was created since this read.
  const release = mayHold(run.item);
  const now = call.now.getTime();
  const endRun = expression().set({ status, completedAt: now, updatedAt: now }).when(when.present, runNotTerminal);
  if (!release) endRun.when(when.is(HOLDS, false));
  // The attributes decide retention and are returned: they must be the ones remembered.
  if (run.remembered) endRun.when(when.is('attrVer', record.attrVer));
  if (field && stored !== undefined) endRun.set({ [field]: stored });
  endRun.set({
    errorCode: type === 'run_failed' && typeof eventData.errorCode === 'string' ? eventData.errorCode : undefined,
  });
  if (purge) endRun.set({ expiredAt: now }).remove('input', 'output', 'error');
  const event = newEvent(call.stamp, runId, data, type, data.eventData);
  const storedEvent = !field
    ? event
    : { ...event, eventData: purge ? omit(eventData, field) : { ...eventData, [field]: stored } };
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: type,
    build: (slot) => ({
      items: [
        endRun.toUpdate(ctx.table, keysOf(keys.runMeta(runId))),
        putEvent(ctx, eventItem(atSlot(storedEvent, slot))),
      ],
      eventIdx: 1,
    }),
    onGuard: rereadRunOnGuard(call, runId),
  });
  if (endedEarly(done)) return done;
  call.runs.forget(runId);
  if (release) await releaseRun(ctx, runId, purge);
  await applyRetention(ctx, runId, record.attributes, call.now);
  const answer = await toRun(
    ctx,
    purge
      ? next
      : { ...next, output: field === 'output' ? value : undefined, error: field === 'error' ? value : undefined },
    call.resolveData,
  );
  return { own: [atSlot(event, done.slot)], pos, run: answer };
}

function omit(o: EventData, field: string): EventData {
  const { [field]: _, ...rest } = o;
  return rest;
}
