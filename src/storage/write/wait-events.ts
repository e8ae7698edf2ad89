/**
 * Wait events: wait_created (the wait item, created once, and the run's `holds` flag, which the
 * terminal transition reads to know it has something to release) and wait_completed (the wait
 * item moves from `waiting` to `completed` once).
 */
import { EntityConflictError } from '@workflow/errors';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { expression, when } from '../../aws/expression.js';
import { keys } from '../../schema/keys.js';
import { eventItem, newEvent } from '../records/event.js';
import { parseWait, waitItem } from '../records/wait.js';
import { str } from '../table/codec.js';
import { getItem } from '../table/reads.js';
import { notFound } from '../table/world-errors.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent, putNew } from './conditions.js';
import type { CreateCall, EventData, Outcome } from './create-call.js';
import { advance, startPosition } from './position.js';
import { HOLDS, holdingRunGuard, runGuardError, terminalRunConflict } from './run-guard.js';

export async function waitCreated(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const { ctx } = call;
  const cid: string = data.correlationId;
  const eventData: EventData = data.eventData ?? {};
  const wait = {
    waitId: `${runId}-${cid}`,
    correlationId: cid,
    runId,
    status: 'waiting' as const,
    resumeAt: eventData.resumeAt === undefined ? undefined : new Date(eventData.resumeAt),
    createdAt: call.now,
    updatedAt: call.now,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
  };
  const ev = newEvent(call.stamp, runId, data, 'wait_created', eventData);
  const pos = startPosition(call.params);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'wait_created',
    build: (slot) => ({
      items: [putNew(ctx, waitItem(wait)), holdingRunGuard(ctx, runId), putEvent(ctx, eventItem({ ...ev, slot }))],
      eventIdx: 2,
    }),
    onGuard: (c) => {
      if (failedCondition(c, 1)) throw runGuardError(runId, oldItem(c, 1), terminalRunConflict);
      throw new EntityConflictError(`Wait "${cid}" already exists`);
    },
  });
  call.runs.update(runId, { [HOLDS]: { BOOL: true } });
  const { correlationId: _, ...w } = wait;
  return { own: [{ ...ev, slot: done.slot }], pos, wait: w };
}

export async function waitCompleted(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const { ctx } = call;
  const cid: string = data.correlationId;
  const [item, pos] = await Promise.all([
    getItem(ctx, keys.wait(runId, cid)),
    advance(call.ctx, call.hints, runId, startPosition(call.params)),
  ]);
  const check = (it: typeof item) => {
    if (!it) throw notFound(`Wait "${cid}" not found`);
    if (str(it, 'status') !== 'waiting') throw new EntityConflictError(`Wait "${cid}" already completed`);
    return parseWait(it);
  };
  const cur = check(item);
  const next = { ...cur, correlationId: cid, status: 'completed' as const, completedAt: call.now, updatedAt: call.now };
  const ev = newEvent(call.stamp, runId, data, 'wait_completed', data.eventData);
  // The wait moves from `waiting` once: a second completion finds it completed (ALL_OLD).
  const stillWaiting = expression().when(when.is('status', 'waiting'));
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'wait_completed',
    build: (slot) => ({
      items: [
        stillWaiting.toPut(ctx.table, waitItem(next), { returnOld: true }),
        putEvent(ctx, eventItem({ ...ev, slot })),
      ],
      eventIdx: 1,
    }),
    onGuard: (c) => {
      check(oldItem(c, 0));
      return 'retry' as const;
    },
  });
  const { correlationId: _, ...w } = next;
  return { own: [{ ...ev, slot: done.slot }], pos, wait: w };
}
