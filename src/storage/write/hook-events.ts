/**
 * Hook events: hook_created (global token claim, hook_conflict), hook_received (with `(runId,
 * resumeId)` dedupe), hook_disposed. Waits are wait-events.ts.
 *
 * The hook item `HOOK#<token>` *is* the token claim: created with `attribute_not_exists` in the
 * same transaction as the `hook_created` event, deleted (conditioned on its owner) by
 * `hook_disposed` and by the terminal run's release. A claim whose owning run is terminal or gone
 * is taken over by the next claimant (conditioned on the stale owner), so a release the terminal
 * path missed can never block a token forever.
 */
import { EntityConflictError, HookNotFoundError, RunExpiredError } from '@workflow/errors';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { type Expression, expression, readInput, when } from '../../aws/expression.js';
import { formatStamp } from '../../schema/formats.js';
import { ATTR, GSI1, keys, storageKeys } from '../../schema/keys.js';
import { correlationEvents } from '../read/correlation.js';
import { eventAt, readRunTail } from '../read/log-tail.js';
import { dueOnHookReceived } from '../records/due.js';
import { type EventRecord, eventItem, newEvent, toEvent } from '../records/event.js';
import { type HookRecord, hookItem, parseHook, resumeContextOf, toHook, tokenOfHookPk } from '../records/hook.js';
import { isTerminalRun } from '../records/lifecycle.js';
import { placeEventData, placePayloads, runPrefix } from '../records/payloads.js';
import { parseRun, type RunRecord, toRun } from '../records/run.js';
import { keysOf, num, str } from '../table/codec.js';
import { getItem, queryOnce } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { assertId } from '../table/world-errors.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent, putNew } from './conditions.js';
import { type CreateCall, type EventData, endedEarly, type Handled, type Outcome, resolved } from './create-call.js';
import { type Position, startPosition } from './position.js';
import { checkRunGuard, HOLDS, holdingRunGuard, runGuard, runGuardError, terminalRunConflict } from './run-guard.js';

/** The hook item is still the claim of `runId`'s hook `hookId`. */
const hookOwnedBy = (runId: string, hookId: string): Expression =>
  expression().when(when.is('runId', runId), when.is('hookId', hookId));

/** The token of a run's hook when the event did not carry it (GSI1 `RUNHOOKS#<runId>`). */
async function tokenOf(ctx: StorageCtx, runId: string, hookId: string): Promise<string | undefined> {
  const [key] = await queryOnce(ctx, {
    IndexName: GSI1,
    ...readInput({ key: [when.is(ATTR.gsi1pk, keys.runHooksGsi(runId)), when.is(ATTR.gsi1sk, hookId)] }),
  });
  const pk = key?.PK?.S;
  return pk === undefined ? undefined : tokenOfHookPk(pk);
}

/** A claim may be taken over once its run is terminal (or gone) and its retention has passed. */
async function claimReleasable(ctx: StorageCtx, holder: HookRecord, now: Date): Promise<boolean> {
  if (holder.tokenRetentionUntil && holder.tokenRetentionUntil.getTime() > now.getTime()) return false;
  const run = await getItem(ctx, keys.runMeta(holder.runId));
  return !run || isTerminalRun(str(run, 'status'));
}

export async function hookCreated(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const { ctx } = call;
  const hookId: string = data.correlationId;
  const eventData: EventData = data.eventData ?? {};
  const token = eventData.token;
  assertId('token', token);
  const placed = await placePayloads(
    ctx,
    { metadata: eventData.metadata },
    `${runPrefix(runId)}/hooks/${hookId}`,
    4096,
    () => checkRunGuard(ctx, runId, terminalRunConflict),
  );
  const known = call.runs.known(runId);
  const rec: HookRecord = {
    runId,
    hookId,
    token,
    metadata: placed.metadata,
    createdAt: call.now,
    specVersion: data.specVersion ?? SPEC_VERSION_CURRENT,
    isWebhook: eventData.isWebhook ?? false,
    isSystem: eventData.isSystem ?? false,
    tokenRetentionUntil:
      eventData.tokenRetentionUntil === undefined ? undefined : new Date(eventData.tokenRetentionUntil),
    // From the run this process remembers (a delivery's run_started put it there), not a read.
    resumeContext: known ? resumeContextOf(parseRun(known)) : undefined,
  };
  const created = newEvent(call.stamp, runId, data, 'hook_created', eventData);
  let takeover: HookRecord | undefined;
  let conflictWith: string | undefined;
  const pos = startPosition(call.params);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'hook_created',
    build: (slot) => {
      if (conflictWith !== undefined) {
        const ev = newEvent(call.stamp, runId, data, 'hook_conflict', { token, conflictingRunId: conflictWith });
        return { items: [runGuard(ctx, runId), putEvent(ctx, eventItem({ ...ev, slot }))], eventIdx: 1 };
      }
      const claim = takeover
        ? hookOwnedBy(takeover.runId, takeover.hookId).toPut(ctx.table, hookItem(rec), { returnOld: true })
        : putNew(ctx, hookItem(rec));
      return {
        items: [
          claim,
          holdingRunGuard(ctx, runId),
          putEvent(ctx, eventItem({ ...created, slot, eventData: { ...eventData, metadata: placed.metadata } })),
        ],
        eventIdx: 2,
      };
    },
    onGuard: async (c) => {
      const runIdx = conflictWith !== undefined ? 0 : 1;
      if (failedCondition(c, runIdx)) throw runGuardError(runId, oldItem(c, runIdx), terminalRunConflict);
      const old = oldItem(c, 0);
      if (!old) {
        takeover = undefined; // the stale claim went away meanwhile: claim it fresh
        return 'retry' as const;
      }
      const holder = parseHook(old);
      if (holder.runId === runId && holder.hookId === hookId)
        throw new EntityConflictError(`Hook "${hookId}" already created`);
      if (await claimReleasable(ctx, holder, call.now)) takeover = holder;
      else conflictWith = holder.runId;
      return 'retry' as const;
    },
  });
  if (conflictWith !== undefined) {
    const ev = newEvent(call.stamp, runId, data, 'hook_conflict', { token, conflictingRunId: conflictWith });
    return { own: [{ ...ev, slot: done.slot }], pos, hook: undefined };
  }
  call.runs.update(runId, { [HOLDS]: { BOOL: true } });
  return {
    own: [{ ...created, slot: done.slot }],
    pos,
    hook: await toHook(ctx, { ...rec, metadata: eventData.metadata }, call.resolveData),
  };
}

export async function hookReceived(call: CreateCall, runId: string, data: EventData): Promise<Handled> {
  const { ctx, params } = call;
  const hookId: string = data.correlationId;
  const eventData: EventData = data.eventData ?? {};
  const token = typeof eventData.token === 'string' ? eventData.token : await tokenOf(ctx, runId, hookId);
  if (!token) throw new HookNotFoundError(hookId);
  const resumeId = typeof params?.resumeId === 'string' && params.resumeId !== '' ? params.resumeId : undefined;
  const digest = typeof params?.resumePayloadDigest === 'string' ? params.resumePayloadDigest : undefined;
  const expired = (s: string) =>
    new RunExpiredError(`Workflow run "${runId}" is already in terminal state "${s}"`, runId, s);
  const stored = await placeEventData(ctx, runId, 'hook_received', eventData, () => checkRunGuard(ctx, runId, expired));
  const ev: EventRecord = { ...newEvent(call.stamp, runId, data, 'hook_received', eventData), resumeId };

  let pos: Position = startPosition(params);
  let preload: EventRecord[] | undefined;
  let run: RunRecord | undefined;
  if (params?.preloadEvents === true) {
    // Read the whole log with the run; the write then lands right after it (or reports the bump).
    const read = await readRunTail(ctx, runId, 0);
    if (read.run) {
      const r = parseRun(read.run);
      if (r.startedAt && !isTerminalRun(r.status)) {
        preload = read.events;
        run = r;
      }
    }
    pos = { last: read.tail, collect: [] };
  }
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'hook_received',
    build: (slot) => {
      const items = [
        hookOwnedBy(runId, hookId).toConditionCheck(ctx.table, keysOf(keys.hook(token))),
        runGuard(ctx, runId),
        putEvent(ctx, eventItem({ ...ev, slot, eventData: stored })),
      ];
      if (resumeId) {
        const claim = {
          ...keysOf(storageKeys.resumeClaim(runId, resumeId)),
          ...formatStamp('records'),
          hookId: { S: hookId },
          slot: { N: String(slot) },
        };
        if (digest) Object.assign(claim, { digest: { S: digest } });
        items.push(putNew(ctx, claim));
      }
      items.push(dueOnHookReceived(ctx, runId, Date.now() + ctx.config.backstopSeconds * 1000, slot));
      return { items, eventIdx: 2 };
    },
    onGuard: async (c) => {
      if (resumeId && failedCondition(c, 3)) {
        // This resume is already committed (or the id was reused): converge or refuse.
        const claim = oldItem(c, 3)!;
        if (str(claim, 'hookId') !== hookId)
          throw new EntityConflictError(`hook_received resumeId "${resumeId}" already recorded for a different hook`);
        const had = str(claim, 'digest');
        if (digest && had && had !== digest)
          throw new EntityConflictError(
            `hook_received resumeId "${resumeId}" already recorded with a different payload`,
          );
        const committed = await eventAt(ctx, runId, num(claim, 'slot')!);
        return resolved({ event: await toEvent(ctx, committed!, call.resolveData) });
      }
      if (failedCondition(c, 0)) throw new HookNotFoundError(hookId);
      throw runGuardError(runId, oldItem(c, 1), expired);
    },
  });
  if (endedEarly(done)) return done;
  const own = [{ ...ev, slot: done.slot }];
  // `run` and `preload` are set together: the whole log with a started run, answered in full.
  if (!run) return { own, pos };
  return { own, pos, run: await toRun(ctx, run, call.resolveData), preload, fullLog: true };
}

export async function hookDisposed(call: CreateCall, runId: string, data: EventData): Promise<Outcome> {
  const { ctx } = call;
  const hookId: string = data.correlationId;
  const eventData: EventData | undefined = data.eventData;
  const token = typeof eventData?.token === 'string' ? eventData.token : await tokenOf(ctx, runId, hookId);
  const gone = async (): Promise<never> => {
    const q = { runId, correlationId: hookId, ascending: true, limit: 1, eventType: 'hook_disposed' };
    if ((await correlationEvents(ctx, q)).length > 0)
      throw new EntityConflictError(`Hook "${hookId}" already disposed`);
    throw new HookNotFoundError(hookId);
  };
  if (!token) return gone();
  const ev = newEvent(call.stamp, runId, data, 'hook_disposed', eventData);
  const pos = startPosition(call.params);
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'hook_disposed',
    build: (slot) => ({
      items: [
        hookOwnedBy(runId, hookId).toDelete(ctx.table, keysOf(keys.hook(token)), { returnOld: false }),
        putEvent(ctx, eventItem({ ...ev, slot })),
      ],
      eventIdx: 1,
    }),
    onGuard: gone,
  });
  return { own: [{ ...ev, slot: done.slot }], pos };
}
