/**
 * Step creates and starts: step_created, and step_started, lazy (the step does not exist yet and
 * the start carries its input) or bare (on a created step).
 *
 * Creates are blind: the `STEP#` put with `attribute_not_exists` is the exactly-once claim, so a
 * duplicate (or the loser of two lazy starts) gets `EntityConflictError` from the ALL_OLD reason
 * without any read. A bare start is a transition (./step-transition.ts): read once, written back
 * conditioned on the step's `ver`.
 *
 * Starts inside a delivery are leased (./step-lease.ts states the rules); the lazy create needs no
 * lease check: its `attribute_not_exists` claim already admits one starter.
 */
import { EntityConflictError, RunExpiredError, TooEarlyError } from '@workflow/errors';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { eventItem, newEvent, pairEvents } from '../records/event.js';
import { placePayloads } from '../records/payloads.js';
import { type StepRecord, stepItem, toStep } from '../records/step.js';
import { valueSize } from '../table/codec.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent, putNew } from './conditions.js';
import type { CreateCall, EventData, Outcome } from './create-call.js';
import { startPosition } from './position.js';
import { checkRunGuard, runGuard, runGuardError, terminalRunConflict } from './run-guard.js';
import { currentStepLease, leaseStamp, noteStarted, startFence } from './step-lease.js';
import { assertLive, stepPrefix, transition } from './step-transition.js';

export async function stepCreated(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const { ctx } = call;
  const stepId: string = data.correlationId;
  const eventData: EventData = data.eventData ?? {};
  const placed = await placePayloads(
    ctx,
    { input: eventData.input },
    stepPrefix(runId, stepId),
    1024 + valueSize({ ...eventData, input: undefined }),
    () => checkRunGuard(ctx, runId, terminalRunConflict),
  );
  const rec: StepRecord = {
    runId,
    stepId,
    stepName: eventData.stepName,
    status: 'pending',
    input: placed.input,
    attempt: 0,
    createdAt: call.now,
    updatedAt: call.now,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
    ver: 1,
  };
  const ev = newEvent(call.stamp, runId, data, 'step_created', eventData);
  const pos = startPosition(call.params);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'step_created',
    build: (slot) => ({
      items: [
        putNew(ctx, stepItem({ ...rec, firstSlot: slot })),
        runGuard(ctx, runId),
        putEvent(ctx, eventItem({ ...ev, slot, eventData: { ...eventData, input: placed.input } })),
      ],
      eventIdx: 2,
    }),
    onGuard: (c) => {
      if (failedCondition(c, 1)) throw runGuardError(runId, oldItem(c, 1), terminalRunConflict);
      throw new EntityConflictError(`Step "${stepId}" already created`);
    },
  });
  rec.firstSlot = done.slot;
  call.steps.remember(runId, stepId, stepItem(rec));
  return {
    own: [{ ...ev, slot: done.slot }],
    pos,
    step: await toStep(ctx, { ...rec, input: eventData.input }, call.resolveData),
  };
}

/**
 * Lazy start: the step does not exist yet and this start carries its input. One transaction of
 * three actions creates the step (running, attempt 1), checks the run guard, and puts one pair
 * item (../records/event.ts) holding the synthetic step_created at the lower slot and the
 * step_started above it. Only the caller whose claim won gets `stepCreated: true`.
 */
export async function stepStartedLazy(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const { ctx } = call;
  const stepId: string = data.correlationId;
  const { input, ...startedData } = data.eventData as EventData;
  const placed = await placePayloads(ctx, { input }, stepPrefix(runId, stepId), 1024 + valueSize(startedData), () =>
    checkRunGuard(ctx, runId, terminalRunConflict),
  );
  const lease = currentStepLease();
  const rec: StepRecord = {
    runId,
    stepId,
    stepName: startedData.stepName,
    status: 'running',
    input: placed.input,
    attempt: 1,
    startedAt: call.now,
    createdAt: call.now,
    updatedAt: call.now,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
    ver: 1,
    ...leaseStamp(lease, call.now.getTime()),
  };
  const createdData: EventData = { stepName: startedData.stepName, input };
  if (startedData.workflowName !== undefined) createdData.workflowName = startedData.workflowName;
  const created = newEvent(
    call.stamp,
    runId,
    { correlationId: stepId, specVersion: data.specVersion },
    'step_created',
    createdData,
  );
  // The input rides the synthetic step_created; stepName stays for replay's divergence check.
  const started = newEvent(call.stamp, runId, data, 'step_started', startedData);
  const pos = startPosition(call.params);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'step_started',
    build: (slot) => ({
      items: [
        putNew(ctx, stepItem({ ...rec, firstSlot: slot })),
        runGuard(ctx, runId),
        putEvent(
          ctx,
          eventItem(
            { ...created, slot, eventData: { ...createdData, input: placed.input } },
            { ...started, slot: slot + 1 },
          ),
        ),
      ],
      eventIdx: 2,
    }),
    onGuard: (c) => {
      // The loser of the create claim must not run the body: EntityConflictError, never a start.
      if (failedCondition(c, 0)) throw new EntityConflictError(`Step "${stepId}" already created`);
      throw runGuardError(runId, oldItem(c, 1), terminalRunConflict);
    },
  });
  noteStarted(lease, runId, stepId);
  rec.firstSlot = done.slot;
  call.steps.remember(runId, stepId, stepItem(rec));
  return {
    own: pairEvents({ ...created, slot: done.slot }, { ...started, slot: done.slot + 1 }),
    pos,
    step: await toStep(ctx, { ...rec, input }, call.resolveData),
    stepCreated: true,
  };
}

/**
 * Bare start: attempt += 1, `startedAt ??= now`, retryAfter cleared; refused before retryAfter;
 * leased as ./step-lease.ts says ({@link startFence}).
 */
export async function stepStartedBare(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const now = call.now;
  const lease = currentStepLease();
  const out = await transition(
    call,
    runId,
    data,
    (s, _raw, fresh) => {
      assertLive(s);
      if (s.retryAfter && s.retryAfter.getTime() > now.getTime()) {
        throw new TooEarlyError(`Cannot start step "${s.stepId}": retryAfter timestamp has not been reached yet`, {
          retryAfter: Math.max(1, Math.ceil((s.retryAfter.getTime() - now.getTime()) / 1000)),
        });
      }
      const fence = lease ? startFence(lease, s, fresh) : undefined;
      return {
        next: {
          ...s,
          status: 'running',
          attempt: s.attempt + 1,
          startedAt: s.startedAt ?? now,
          retryAfter: undefined,
          updatedAt: now,
          ver: s.ver + 1,
          ...leaseStamp(lease, now.getTime()),
        },
        eventData: data.eventData,
        runTerminal: (st) => new RunExpiredError(`Cannot start step on run in terminal state "${st}"`, runId, st),
        fence,
      };
    },
    (n) => n,
  );
  noteStarted(lease, runId, data.correlationId);
  return out;
}
