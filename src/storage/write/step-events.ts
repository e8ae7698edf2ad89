/**
 * Step events: step_created, step_started (bare and lazy), step_completed, step_failed,
 * step_retrying.
 *
 * Creates are blind: the `STEP#` put with `attribute_not_exists` is the exactly-once claim, so
 * a duplicate (or the loser of two lazy starts) gets `EntityConflictError` from the ALL_OLD
 * reason without any read. Transitions read the step once (the result must carry state the
 * write cannot return) and write it back conditioned on its `ver`, so the decision made on the
 * read is exactly the state the transaction replaces; a moved version re-decides from ALL_OLD.
 *
 * Starts inside a delivery are leased (./step-lease.ts, where the invariants are stated): every
 * `step_started` stamps the step with the delivery's lease in the same transaction, and a start
 * that finds another delivery's live lease is refused with `TooEarlyError` (the lazy create needs
 * no check: its `attribute_not_exists` claim already admits one starter). Terminal transitions and
 * step_retrying clear the lease.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { EntityConflictError, RunExpiredError, TooEarlyError } from '@workflow/errors';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { isS3Pointer } from '../../context/payload-store.js';
import { keys } from '../../schema/keys.js';
import { eventItem, newEvent, pairEvents } from '../records/event.js';
import { isTerminalStep } from '../records/lifecycle.js';
import { placePayloads, runPrefix } from '../records/payloads.js';
import { parseStep, type StepRecord, stepItem, toStep } from '../records/step.js';
import { type Attrs, itemSize, valueSize } from '../table/codec.js';
import { getItem } from '../table/reads.js';
import { notFound } from '../table/world-errors.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent, putNew } from './conditions.js';
import type { CreateCall, Outcome } from './create-call.js';
import { advance, startPosition } from './position.js';
import { checkRunGuard, runGuard, runGuardError } from './run-guard.js';
import {
  assertNoForeignLease,
  currentStepLease,
  type LeaseFence,
  leaseFence,
  noteFinished,
  noteStarted,
} from './step-lease.js';

type Data = Record<string, any>;

const stepPrefix = (runId: string, stepId: string) => `${runPrefix(runId)}/steps/${stepId}`;

const terminalRunConflict = (s: string) =>
  new EntityConflictError(`Cannot create new entities on run in terminal state "${s}"`);

// ---------------------------------------------------------------- creates

export async function stepCreated(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const { ctx } = call;
  const stepId: string = data.correlationId;
  const eventData: Data = data.eventData ?? {};
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
export async function stepStartedLazy(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const { ctx } = call;
  const stepId: string = data.correlationId;
  const { input, ...startedData } = data.eventData as Data;
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
    leaseToken: lease?.token,
    leaseUntil: lease ? call.now.getTime() + lease.ttlMs : undefined,
  };
  const createdData: Data = { stepName: startedData.stepName, input };
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

// ---------------------------------------------------------------- transitions

interface Transition {
  /** The new step, in stored form. */
  next: StepRecord;
  /** The event's data in stored form (large fields as pointers). */
  eventData: Data | undefined;
  /** Include a run guard, and the error its terminal state maps to. */
  runTerminal?: (status: string) => Error;
  /** A condition the stored step must also meet, besides its `ver` (a leased start's fence). */
  fence?: LeaseFence;
}

type Decide = (s: StepRecord, raw: Attrs) => Transition | Promise<Transition>;

async function transition(
  call: CreateCall,
  runId: string,
  data: Data,
  decide: Decide,
  plain: (next: StepRecord) => StepRecord,
): Promise<Outcome> {
  const { ctx } = call;
  const stepId: string = data.correlationId;
  const known = call.steps.known(runId, stepId);
  const [item, pos] = await Promise.all([
    known ?? getItem(ctx, keys.step(runId, stepId)),
    advance(call.ctx, call.hints, runId, startPosition(call.params)),
  ]);
  if (!item) throw notFound(`Step "${stepId}" not found`);
  let cur = parseStep(item);
  let t: Transition;
  try {
    t = await decide(cur, item);
  } catch (err) {
    // A refusal is final only on the stored item: the remembered one may be stale (a lease
    // released or extended by a plain UpdateItem, a change by another process).
    if (!known) throw err;
    const fresh = await getItem(ctx, keys.step(runId, stepId));
    if (!fresh) throw notFound(`Step "${stepId}" not found`);
    cur = parseStep(fresh);
    t = await decide(cur, fresh);
  }
  const ev = newEvent(call.stamp, runId, data, data.eventType, undefined);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: data.eventType,
    build: (slot) => {
      const items: TransactWriteItem[] = [
        {
          Put: {
            TableName: ctx.table,
            Item: stepItem(t.next),
            ConditionExpression: t.fence ? `ver = :v AND (${t.fence.expr})` : 'ver = :v',
            ExpressionAttributeValues: { ':v': { N: String(cur.ver) }, ...t.fence?.values },
            ...(t.fence ? { ExpressionAttributeNames: t.fence.names } : {}),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem({ ...ev, slot, eventData: t.eventData })),
      ];
      if (t.runTerminal) items.push(runGuard(ctx, runId));
      return { items, eventIdx: 1 };
    },
    onGuard: async (c) => {
      if (t.runTerminal && failedCondition(c, 2)) throw runGuardError(runId, oldItem(c, 2), t.runTerminal);
      const old = oldItem(c, 0);
      if (!old) throw notFound(`Step "${stepId}" not found`);
      cur = parseStep(old); // another writer moved the step: decide again from its state
      t = await decide(cur, old);
      return 'retry' as const;
    },
  });
  call.steps.remember(runId, stepId, stepItem(t.next));
  // Finished or handed back (no lease on it now): the delivery's heartbeat lets go of it.
  if (t.next.leaseToken === undefined) noteFinished(runId, stepId);
  return {
    own: [{ ...ev, slot: done.slot, eventData: data.eventData }],
    pos,
    step: await toStep(ctx, plain(t.next), call.resolveData),
  };
}

/**
 * The step after a transition that hands it back (step_completed, step_failed, step_retrying):
 * the changes, a new version, and no lease, so the delivery's heartbeat lets go of it.
 */
function handedBack(s: StepRecord, now: Date, changes: Partial<StepRecord>): StepRecord {
  return { ...s, ...changes, updatedAt: now, ver: s.ver + 1, leaseToken: undefined, leaseUntil: undefined };
}

function assertLive(s: StepRecord): void {
  if (isTerminalStep(s.status)) throw new EntityConflictError(`Cannot modify step in terminal state "${s.status}"`);
}

/**
 * Place one new payload field of a step: inline if the step item still fits with it, else S3.
 * An object already uploaded for this call is reused when the decision is taken again.
 */
function payloadPlacer(call: CreateCall, runId: string, stepId: string, field: string, value: unknown) {
  let pointer: unknown;
  return async (raw: Attrs): Promise<unknown> => {
    if (pointer !== undefined) return pointer;
    const rest = { ...raw };
    delete rest[field];
    const placed = (await placePayloads(call.ctx, { [field]: value }, stepPrefix(runId, stepId), itemSize(rest) + 512))[
      field
    ];
    if (isS3Pointer(placed)) pointer = placed;
    return placed;
  };
}

/**
 * Bare start: attempt += 1, `startedAt ??= now`, retryAfter cleared; refused before retryAfter.
 * Inside a delivery with a lease: refused (TooEarlyError) while another delivery's lease is live,
 * and stamped with this delivery's lease; outside one, the start is not leased.
 */
export async function stepStartedBare(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const now = call.now;
  const lease = currentStepLease();
  const out = await transition(
    call,
    runId,
    data,
    (s) => {
      assertLive(s);
      if (s.retryAfter && s.retryAfter.getTime() > now.getTime()) {
        throw new TooEarlyError(`Cannot start step "${s.stepId}": retryAfter timestamp has not been reached yet`, {
          retryAfter: Math.max(1, Math.ceil((s.retryAfter.getTime() - now.getTime()) / 1000)),
        });
      }
      if (lease) assertNoForeignLease(lease, s, now.getTime());
      return {
        next: {
          ...s,
          status: 'running',
          attempt: s.attempt + 1,
          startedAt: s.startedAt ?? now,
          retryAfter: undefined,
          updatedAt: now,
          ver: s.ver + 1,
          leaseToken: lease?.token,
          leaseUntil: lease ? now.getTime() + lease.ttlMs : undefined,
        },
        eventData: data.eventData,
        runTerminal: (st) => new RunExpiredError(`Cannot start step on run in terminal state "${st}"`, runId, st),
        fence: lease ? leaseFence(lease, now.getTime()) : undefined,
      };
    },
    (n) => n,
  );
  noteStarted(lease, runId, data.correlationId);
  return out;
}

/**
 * step_completed / step_failed: only from a live step. The run is not checked for a running
 * step (it may finish after its run ended); a step that is not running needs a live run. So a
 * terminal run's step prefix stays writable until the step is terminal (assertLive): the orphan
 * sweep keeps objects under non-terminal steps (src/sweep/run-payloads.ts).
 */
export function stepFinished(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const completed = data.eventType === 'step_completed';
  const eventData: Data = data.eventData ?? {};
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
export function stepRetrying(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const eventData: Data = data.eventData ?? {};
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
