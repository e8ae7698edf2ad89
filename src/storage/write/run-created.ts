/**
 * run_created: the run item (`RUN#meta`, an exclusive create) and its first event at slot 1, in one
 * transaction. Either claim failing means the run exists (`EntityConflictError`); a redelivered
 * create uploads nothing.
 */
import { EntityConflictError, WorkflowWorldError } from '@workflow/errors';
import { SPEC_VERSION_CURRENT, validateUlidTimestamp } from '@workflow/world';
import { ulid } from 'ulid';
import { keys } from '../../schema/keys.js';
import { dueOnCreate } from '../records/due.js';
import { atSlot, eventItem, newEvent } from '../records/event.js';
import { runItem, toRun } from '../records/run.js';
import { getItem } from '../table/reads.js';
import { commit } from './commit.js';
import { putEvent, putNew } from './conditions.js';
import type { CreateCall, EventData, Outcome } from './create-call.js';
import { newRun, placeRunInput, validateSeedAttributes } from './run-seed.js';

export async function runCreated(
  call: CreateCall,
  requestedRunId: string | null,
  data: EventData,
): Promise<Outcome & { runId: string }> {
  const { ctx } = call;
  const runId = newRunId(requestedRunId);
  const eventData: EventData = data.eventData ?? {};
  if (typeof eventData.deploymentId !== 'string' || typeof eventData.workflowName !== 'string') {
    throw new WorkflowWorldError('run_created requires eventData.deploymentId and eventData.workflowName', {
      status: 400,
    });
  }
  validateSeedAttributes(eventData);
  const specVersion = data.specVersion ?? SPEC_VERSION_CURRENT;
  const exists = (): never => {
    throw new EntityConflictError(`Workflow run "${runId}" already exists`);
  };
  const unclaimed = async () => {
    if (await getItem(ctx, keys.runMeta(runId))) exists();
  };
  const input = await placeRunInput(call, runId, eventData, unclaimed);
  const run = newRun(call, runId, eventData, specVersion, input);
  const event = atSlot(newEvent(call.stamp, runId, data, 'run_created', eventData), 1);
  await commit(
    ctx,
    call.hints,
    { last: 0 },
    {
      runId,
      what: 'run_created',
      build: (slot) => ({
        items: [
          putNew(ctx, runItem(run)),
          putEvent(ctx, eventItem({ ...atSlot(event, slot), eventData: { ...eventData, input } })),
          dueOnCreate(ctx, runId, Date.now() + ctx.config.backstopSeconds * 1000, slot),
        ],
        eventIdx: 1,
      }),
      onGuard: exists,
      onSlotTaken: exists,
    },
  );
  call.runs.remember(runId, runItem(run));
  return {
    runId,
    own: [event],
    pos: {},
    run: await toRun(ctx, { ...run, input: eventData.input }, call.resolveData),
  };
}

/** The caller's run id, checked, or a new one. */
function newRunId(requested: string | null): string {
  if (requested === null || requested === undefined || requested === '') return `wrun_${ulid()}`;
  const problem = validateUlidTimestamp(requested, 'wrun_');
  if (problem) throw new WorkflowWorldError(problem, { status: 400, code: 'INVALID_ARGUMENT', field: 'runId' });
  return requested;
}
