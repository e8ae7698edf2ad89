/**
 * `events.create`: validate, route to the event's handler, and assemble the `EventResult`.
 *
 * Result assembly owns the three "delta" producers, which share `events/cursor/hasMore`:
 * - `sinceCursor`: everything after the cursor up to this write's own events, i.e. what
 *   `events.list({cursor})` returns right after the write (collected during the bump, so a write
 *   that did not race needs no read at all);
 * - the run_started preload (and `preloadEvents` on hook_received): the whole log;
 * - bump and report: with `eventCount` only, the events on the slots the write skipped over.
 */
import { WorkflowWorldError } from '@workflow/errors';
import type { CreateEventParams, EventResult } from '@workflow/world';
import { getMaxEventsPerRun } from '@workflow/world';
import { noteReadTail } from '../../context/delivery-scope.js';
import { type CoreEventType, eventKind, eventTypesWhere } from '../../schema/event-kinds.js';
import { countMetric } from '../../telemetry/metrics.js';
import { withStorageWriteSpan } from '../../telemetry/spans.js';
import type { SlotHints } from '../memory/slot-hints.js';
import type { StepItemCache } from '../memory/view-items.js';
import { RunItemCache } from '../memory/view-items.js';
import { cursorAt, type EventRecord, toEvent } from '../records/event.js';
import { dropUndefined } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { assertId, invalidArgument } from '../table/world-errors.js';
import { type CreateCall, type EventData, endedEarly, type Handled, type Outcome } from './create-call.js';
import { hookCreated, hookDisposed, hookReceived } from './hook-events.js';
import { attrSet } from './run-attributes.js';
import { runCreated } from './run-created.js';
import { runStarted } from './run-started.js';
import { runTerminal } from './run-terminal.js';
import { stepFinished, stepRetrying } from './step-finished.js';
import { stepCreated, stepStartedBare, stepStartedLazy } from './step-started.js';
import { waitCompleted, waitCreated } from './wait-events.js';

type Handler = (call: CreateCall, runId: string, data: EventData) => Promise<Handled>;

/**
 * The writer of each event type a core creates (src/schema/event-kinds.ts: `writer: 'core'`), but
 * run_created, which has no run id yet (its own path below): typed from the table, so a core event
 * type without a writer, or a writer for any other type, is a compile error.
 */
const HANDLERS: { readonly [T in Exclude<CoreEventType, 'run_created'>]: Handler } = {
  run_started: runStarted,
  run_completed: runTerminal,
  run_failed: runTerminal,
  run_cancelled: runTerminal,
  attr_set: attrSet,
  step_created: stepCreated,
  step_started: (call, runId, data) =>
    typeof data.eventData?.stepName === 'string' && data.eventData.input !== undefined
      ? stepStartedLazy(call, runId, data)
      : stepStartedBare(call, runId, data),
  step_completed: stepFinished,
  step_failed: stepFinished,
  step_retrying: stepRetrying,
  hook_created: hookCreated,
  hook_received: hookReceived,
  hook_disposed: hookDisposed,
  wait_created: waitCreated,
  wait_completed: waitCompleted,
};

/** Event types a core creates whose entity is named by `correlationId`. */
const NEEDS_CORRELATION = eventTypesWhere((k) => k.writer === 'core' && k.correlated);

/**
 * Runs `fn` after every earlier create for the same run in this process has settled.
 *
 * Why: a fan-out runs its steps inline in one process, and their creates would all claim the same
 * next slot; every loser then pays a cancelled transaction (billed) plus a tail Query and retries,
 * so attempts grow with the square of the parallelism. Queued behind each other, each create starts
 * from the slot the previous one committed (the in-process hint) and lands first time. Creates from
 * other processes still race, which bump-and-report handles.
 */
function perRunQueue() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(runId: string, fn: () => Promise<T>): Promise<T> => {
    const prev = tails.get(runId);
    const next = prev ? prev.then(fn, fn) : fn();
    tails.set(runId, next);
    const clear = () => {
      if (tails.get(runId) === next) tails.delete(runId);
    };
    next.then(clear, clear);
    return next;
  };
}

export function createEvents(ctx: StorageCtx, hints: SlotHints, steps: StepItemCache, runs = new RunItemCache()) {
  const queue = perRunQueue();
  const createOne = (runId: string | null, data: EventData, params?: CreateEventParams): Promise<EventResult> =>
    withStorageWriteSpan({ eventType: String(data?.eventType), runId: runId ?? undefined }, () =>
      create(runId, data, params),
    );
  return (runId: string | null, data: EventData, params?: CreateEventParams): Promise<EventResult> =>
    typeof runId === 'string' && runId !== ''
      ? queue(runId, () => createOne(runId, data, params))
      : createOne(runId, data, params);

  async function create(runId: string | null, data: EventData, params?: CreateEventParams): Promise<EventResult> {
    if (!data || typeof data !== 'object' || typeof data.eventType !== 'string') {
      throw invalidArgument('eventType', 'event request must have an eventType');
    }
    const now = new Date();
    const call: CreateCall = {
      ctx,
      hints,
      steps,
      runs,
      params,
      resolveData: params?.resolveData ?? 'all',
      now,
      stamp: { createdAt: now, occurredAt: params?.occurredAt },
    };
    const type = data.eventType;
    if (NEEDS_CORRELATION.has(type)) assertId('correlationId', data.correlationId);
    if (data.correlationId !== undefined && data.correlationId !== null) assertId('correlationId', data.correlationId);
    if (type === 'run_created') {
      const out = await runCreated(call, runId, data);
      return assemble(call, out.runId, out);
    }
    assertId('runId', runId);
    // Own properties only: a core may not create an inherited one (`toString`).
    const handler = Object.hasOwn(HANDLERS, type) ? HANDLERS[type as keyof typeof HANDLERS] : undefined;
    if (!handler) throw invalidArgument('eventType', `Unsupported event type "${type}"`);
    const handled = await handler(call, runId, data);
    // Resolved: answered from the state as it is, without a write (and without a metric).
    if (endedEarly(handled)) return withMaxEvents(handled.result);
    const result = await assemble(call, runId, handled);
    // Terminal (and start) events are counted as metrics once committed (src/telemetry/metrics.ts).
    const metric = eventKind(type)?.metric;
    if (metric) countMetric(metric);
    return result;
  }
}

function withMaxEvents(r: EventResult): EventResult {
  return r.run ? { ...r, maxEvents: getMaxEventsPerRun() } : r;
}

async function assemble(call: CreateCall, runId: string, out: Outcome): Promise<EventResult> {
  const { ctx, resolveData, params } = call;
  const own = out.own;
  if (own.length === 0) throw new WorkflowWorldError(`events.create committed nothing for run "${runId}"`);
  const last = own[own.length - 1];
  const events = (list: EventRecord[]) => Promise.all(list.map((e) => toEvent(ctx, e, resolveData)));
  const result: EventResult = dropUndefined({
    event: await toEvent(ctx, last, resolveData),
    run: out.run,
    step: out.step,
    hook: out.hook,
    wait: out.wait,
    ...(out.stepCreated ? { stepCreated: true as const } : {}),
  });
  const collected = out.pos.collect ?? [];
  let page: Pick<EventResult, 'events' | 'cursor' | 'hasMore'> | undefined;
  if (out.fullLog) {
    page = {
      events: await events([...(out.preload ?? []), ...collected, ...own]),
      cursor: cursorAt(last),
      hasMore: false,
    };
  } else if (typeof params?.sinceCursor === 'string') {
    page = { events: await events([...collected, ...own]), cursor: cursorAt(last), hasMore: false };
  } else if (collected.length > 0) {
    // Report: the skipped slots only; no cursor, it must not move the caller's read position.
    page = { events: await events(collected.filter((e) => e.slot < own[0].slot)), cursor: null, hasMore: false };
  }
  call.hints.note(runId, last.slot, [...(out.preload ?? []), ...collected, ...own]);
  // What the caller has now seen of the log, for the backstop's acknowledgement of its turn
  // (src/storage/write/due-moves.ts): up to its own event when it got the log up to there, or when
  // nothing it had not seen lay between this process's known tail and its write.
  if (page?.cursor || collected.length === 0) noteReadTail(runId, last.slot);
  return withMaxEvents(page ? ({ ...result, ...page } as EventResult) : result);
}
