/**
 * What the step writers share: a step's S3 prefix, and the transition of an existing step
 * (step_started on a created step, step_completed, step_failed, step_retrying).
 *
 * A transition reads the step once (the result must carry state the write cannot return; a step
 * this process remembers is used instead, and a refusal decided on it is decided again on a fresh
 * read) and writes it back conditioned on its `ver`, so the decision made on the read is exactly
 * the state the transaction replaces; a moved version re-decides from ALL_OLD. A leased start adds
 * the lease's fence to that condition (./step-lease.ts). A transition that hands the step back
 * clears its lease ({@link handedBack}).
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { EntityConflictError } from '@workflow/errors';
import { type Cond, type Expression, expression, when } from '../../aws/expression.js';
import { isS3Pointer } from '../../context/payload-store.js';
import { keys } from '../../schema/keys.js';
import { eventItem, newEvent } from '../records/event.js';
import { isTerminalStep } from '../records/lifecycle.js';
import { placePayloads, runPrefix } from '../records/payloads.js';
import { parseStep, type StepRecord, stepItem, toStep } from '../records/step.js';
import { type Attrs, itemSize } from '../table/codec.js';
import { getItem } from '../table/reads.js';
import { notFound } from '../table/world-errors.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent } from './conditions.js';
import type { CreateCall, EventData, Outcome } from './create-call.js';
import { advance, startPosition } from './position.js';
import { runGuard, runGuardError } from './run-guard.js';
import { noteFinished } from './step-lease.js';

export const stepPrefix = (runId: string, stepId: string) => `${runPrefix(runId)}/steps/${stepId}`;

export interface Transition {
  /** The new step, in stored form. */
  next: StepRecord;
  /** The event's data in stored form (large fields as pointers). */
  eventData: EventData | undefined;
  /** Include a run guard, and the error its terminal state maps to. */
  runTerminal?: (status: string) => Error;
  /** A condition the stored step must also meet, besides its `ver` (a leased start's fence). */
  fence?: Cond;
}

/**
 * Decides a transition from the step as read; `fresh`: read from the table by this call (a
 * remembered item is not, and a decision that needs a fresh sight, like a lease takeover, refuses
 * on it and is decided again on a fresh read).
 */
export type Decide = (s: StepRecord, raw: Attrs, fresh: boolean) => Transition | Promise<Transition>;

/**
 * The condition of a transition's put: the step is still at the version the decision was made on
 * (`ver`) and, for a leased start, still meets the lease's fence.
 */
export function stepUnmoved(cur: StepRecord, t: Transition): Expression {
  return expression().when(when.is('ver', cur.ver), ...(t.fence ? [t.fence] : []));
}

/**
 * Read the step, decide, and commit the decision with the event (see the header); `plain` turns
 * the stored step into the one answered (payloads as the caller gave them).
 */
export async function transition(
  call: CreateCall,
  runId: string,
  data: EventData,
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
    t = await decide(cur, item, !known);
  } catch (err) {
    // A refusal is final only on the stored item: the remembered one may be stale (a lease
    // released or extended by a plain UpdateItem, a change by another process).
    if (!known) throw err;
    const fresh = await getItem(ctx, keys.step(runId, stepId));
    if (!fresh) throw notFound(`Step "${stepId}" not found`);
    cur = parseStep(fresh);
    t = await decide(cur, fresh, true);
  }
  const ev = newEvent(call.stamp, runId, data, data.eventType, undefined);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: data.eventType,
    build: (slot) => {
      const items: TransactWriteItem[] = [
        stepUnmoved(cur, t).toPut(ctx.table, stepItem(t.next), { returnOld: true }),
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
      t = await decide(cur, old, true);
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
export function handedBack(s: StepRecord, now: Date, changes: Partial<StepRecord>): StepRecord {
  return {
    ...s,
    ...changes,
    updatedAt: now,
    ver: s.ver + 1,
    leaseToken: undefined,
    leaseUntil: undefined,
    leaseBeat: undefined,
    leaseTtl: undefined,
  };
}

export function assertLive(s: StepRecord): void {
  if (isTerminalStep(s.status)) throw new EntityConflictError(`Cannot modify step in terminal state "${s.status}"`);
}

/**
 * Place one new payload field of a step: inline if the step item still fits with it, else S3.
 * An object already uploaded for this call is reused when the decision is taken again.
 */
export function payloadPlacer(call: CreateCall, runId: string, stepId: string, field: string, value: unknown) {
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
