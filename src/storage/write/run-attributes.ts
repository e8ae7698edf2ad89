/**
 * attr_set: the run's attributes change under an optimistic version (`attrVer`). Reads the run and
 * the tail, validates the changes against the attributes as read, and commits the merged attributes
 * conditioned on that version; a moved version is decided again ({@link restartable}). A workflow's
 * own change carries a claim item on its correlation id, so a replayed change is refused
 * (`EntityConflictError`) instead of applied twice.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { EntityConflictError, WorkflowRunNotFoundError } from '@workflow/errors';
import type { AttributeChange } from '@workflow/world';
import { applyAttributeChanges, validateAttributeChanges, validateAttributeEventDataSize } from '@workflow/world';
import { expression, when } from '../../aws/expression.js';
import { formatStamp } from '../../schema/formats.js';
import { keys } from '../../schema/keys.js';
import { readRunTail } from '../read/log-tail.js';
import { atSlot, eventItem, newEvent } from '../records/event.js';
import { isTerminalRun, runNotTerminal } from '../records/lifecycle.js';
import { parseRun, toRun } from '../records/run.js';
import { keysOf, str } from '../table/codec.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent, putNew } from './conditions.js';
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
import { assertSpec, runGuardError } from './run-guard.js';

const terminalConflict = (s: string) =>
  new EntityConflictError(`Cannot set attributes on run in terminal state "${s}"`);

export function attrSet(call: CreateCall, runId: string, data: EventData): Promise<Handled> {
  const eventData: EventData = data.eventData ?? {};
  const changes: AttributeChange[] = Array.isArray(eventData.changes) ? eventData.changes : [];
  const allowReservedAttributes = eventData.allowReservedAttributes === true;
  validateAttributeEventDataSize(eventData as never);
  validateAttributeChanges(changes, { allowReservedAttributes });
  return restartable('attr_set', async (): Promise<Outcome | Restart> => {
    const { ctx, params } = call;
    const callerTail = startPosition(params).last;
    const read = await readRunTail(ctx, runId, callerTail);
    if (!read.run) throw new WorkflowRunNotFoundError(runId);
    const record = parseRun(read.run);
    assertSpec(record);
    if (isTerminalRun(record.status)) throw terminalConflict(record.status);
    // Post-merge key count, exact against the attributes this transaction is conditioned on.
    validateAttributeChanges(changes, { existingKeys: Object.keys(record.attributes), allowReservedAttributes });
    const merged = applyAttributeChanges(record.attributes, changes);
    const claim =
      data.correlationId && eventData.writer?.type === 'workflow' ? (data.correlationId as string) : undefined;
    const pos: Position = { last: read.tail, collect: callerTail === undefined ? undefined : [...read.events] };
    const event = newEvent(call.stamp, runId, data, 'attr_set', eventData);
    const setAttributes = expression()
      .set({ attributes: merged, attrVer: record.attrVer + 1, updatedAt: call.now.getTime() })
      .when(when.present, runNotTerminal, when.is('attrVer', record.attrVer));
    const done = await commit(ctx, call.hints, pos, {
      runId,
      what: 'attr_set',
      build: (slot) => {
        const items: TransactWriteItem[] = [
          setAttributes.toUpdate(ctx.table, keysOf(keys.runMeta(runId))),
          putEvent(ctx, eventItem(atSlot(event, slot))),
        ];
        if (claim)
          items.push(
            putNew(ctx, {
              ...keysOf(keys.attrClaim(runId, claim)),
              ...formatStamp('records'),
              slot: { N: String(slot) },
            }),
          );
        return { items, eventIdx: 1 };
      },
      onGuard: (c) => {
        if (claim && failedCondition(c, 2)) throw new EntityConflictError(`Attribute event "${claim}" already exists`);
        const old = oldItem(c, 0);
        if (!old) throw new WorkflowRunNotFoundError(runId);
        if (isTerminalRun(str(old, 'status'))) throw runGuardError(runId, old, terminalConflict);
        return RESTART; // another attr_set moved the version: re-validate against it
      },
    });
    if (endedEarly(done)) return done;
    call.runs.forget(runId);
    const run = await toRun(
      ctx,
      { ...record, attributes: merged, attrVer: record.attrVer + 1, updatedAt: call.now },
      call.resolveData,
    );
    return { own: [atSlot(event, done.slot)], pos, run };
  });
}
