/**
 * Step ends and retries: step_completed, step_failed (the step becomes terminal) and step_retrying
 * (back to pending), each a transition from a live step only that hands the step back, its new
 * output or error placed by `payloadPlacer` (all three: ./step-transition.ts).
 */
import { RunExpiredError } from '@workflow/errors';
import type { CreateCall, EventData, Outcome } from './create-call.js';
import { assertLive, handedBack, payloadPlacer, transition } from './step-transition.js';

/**
 * step_completed / step_failed: only from a live step. The run is not checked for a running step
 * (it may finish after its run ended); a step that is not running needs a live run. So a terminal
 * run's step prefix stays writable until the step is terminal (assertLive): the orphan sweep keeps
 * objects under non-terminal steps (src/sweep/run-payloads.ts).
 */
export function stepFinished(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const completed = data.eventType === 'step_completed';
  const eventData: EventData = data.eventData ?? {};
  const eventField = completed ? 'result' : 'error';
  const field = completed ? 'output' : 'error';
  const place = payloadPlacer(call, runId, data.correlationId, field, eventData[eventField]);
  return transition(
    call,
    runId,
    data,
    async (s, raw) => {
      assertLive(s);
      const stored = await place(raw);
      return {
        next: handedBack(s, call.now, {
          status: completed ? 'completed' : 'failed',
          [field]: stored,
          completedAt: call.now,
        }),
        eventData: { ...eventData, [eventField]: stored },
        runTerminal:
          s.status === 'running'
            ? undefined
            : (st) => new RunExpiredError(`Cannot modify non-running step on run in terminal state "${st}"`, runId, st),
      };
    },
    (n) => ({ ...n, [field]: eventData[eventField] }),
  );
}

/** step_retrying: back to pending with the error and an optional retryAfter. */
export function stepRetrying(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const eventData: EventData = data.eventData ?? {};
  const retryAfter =
    eventData.retryAfter === undefined || eventData.retryAfter === null ? undefined : new Date(eventData.retryAfter);
  const place = payloadPlacer(call, runId, data.correlationId, 'error', eventData.error);
  return transition(
    call,
    runId,
    data,
    async (s, raw) => {
      assertLive(s);
      const stored = await place(raw);
      return {
        next: handedBack(s, call.now, { status: 'pending', error: stored, retryAfter }),
        eventData: { ...eventData, error: stored },
      };
    },
    (n) => ({ ...n, error: eventData.error }),
  );
}
