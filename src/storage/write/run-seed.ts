/**
 * A new run's record and the checks on the data it is created from: shared by run_created
 * (run-created.ts) and the resilient start, which creates a missing run from run_started's data
 * (run-started.ts).
 */
import { AttributeValidationError, validateAttributeChanges } from '@workflow/world';
import { placePayloads, runPrefix } from '../records/payloads.js';
import type { RunRecord } from '../records/run.js';
import { valueSize } from '../table/codec.js';
import type { CreateCall, EventData } from './create-call.js';

/** The seed attributes a new run is created with are a record of valid attribute changes. */
export function validateSeedAttributes(eventData: EventData): void {
  if (eventData.attributes === undefined || eventData.attributes === null) return;
  if (typeof eventData.attributes !== 'object')
    throw new AttributeValidationError('attributes must be a record of strings');
  const changes = Object.entries(eventData.attributes).map(([key, value]) => ({ key, value: value as string }));
  validateAttributeChanges(changes, { allowReservedAttributes: eventData.allowReservedAttributes === true });
}

/** A new run's input as stored: inline, or in S3 under the run's prefix (`guard` runs first). */
export async function placeRunInput(
  call: CreateCall,
  runId: string,
  eventData: EventData,
  guard?: () => Promise<void>,
) {
  const otherBytes = 1024 + valueSize({ ...eventData, input: undefined });
  return (await placePayloads(call.ctx, { input: eventData.input }, `${runPrefix(runId)}/run`, otherBytes, guard))
    .input;
}

/** A new run record (pending) from run_created / resilient run_started data. */
export function newRun(
  call: CreateCall,
  runId: string,
  eventData: EventData,
  specVersion: number,
  input: unknown,
): RunRecord {
  return {
    runId,
    status: 'pending',
    deploymentId: eventData.deploymentId,
    workflowName: eventData.workflowName,
    specVersion,
    executionContext: eventData.executionContext,
    input,
    attributes: { ...(eventData.attributes ?? {}) },
    encryptionPublicKey: eventData.encryptionPublicKey,
    createdAt: call.now,
    updatedAt: call.now,
    attrVer: 0,
  };
}
