/**
 * The step view item `RUN#<runId> / STEP#<stepId>` <-> `StepRecord` <-> the contract's `Step`.
 * `ver` is bumped by every write: the optimistic guard of the read-then-write transitions.
 */
import type { ResolveData, Step } from '@workflow/world';
import { assertItemFormat, formatStamp } from '../../schema/formats.js';
import { keys } from '../../schema/keys.js';
import { type Attrs, date, dropUndefined, epochMs, keysOf, num, str, toItem, val } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { errorFor, payloadFor } from './payloads.js';

export interface StepRecord {
  runId: string;
  stepId: string;
  stepName: string;
  status: Step['status'];
  input?: unknown;
  output?: unknown;
  error?: unknown;
  attempt: number;
  startedAt?: Date;
  completedAt?: Date;
  retryAfter?: Date;
  createdAt: Date;
  updatedAt: Date;
  specVersion?: number;
  /** Bumped by every write (header). */
  ver: number;
  // The step lease's fields, not in `Step` (../write/step-lease.ts says what each holds).
  leaseToken?: string;
  leaseUntil?: number;
  leaseBeat?: number;
  leaseTtl?: number;
  /**
   * The log slot of the step's `step_created` (the first event of its correlation): where
   * `listByCorrelationId` starts reading (../read/correlation.ts), so step events need no index
   * copy. Absent on steps written before it was recorded; their `step_created` is indexed instead.
   */
  firstSlot?: number;
}

export function stepItem(s: StepRecord): Attrs {
  return {
    ...formatStamp('records'),
    ...keysOf(keys.step(s.runId, s.stepId)),
    ...toItem({
      runId: s.runId,
      stepId: s.stepId,
      stepName: s.stepName,
      status: s.status,
      input: s.input,
      output: s.output,
      error: s.error,
      attempt: s.attempt,
      startedAt: epochMs(s.startedAt),
      completedAt: epochMs(s.completedAt),
      retryAfter: epochMs(s.retryAfter),
      createdAt: epochMs(s.createdAt),
      updatedAt: epochMs(s.updatedAt),
      specVersion: s.specVersion,
      ver: s.ver,
      leaseToken: s.leaseToken,
      leaseUntil: s.leaseUntil,
      leaseBeat: s.leaseBeat,
      leaseTtl: s.leaseTtl,
      fs: s.firstSlot,
    }),
  };
}

export function parseStep(it: Attrs): StepRecord {
  assertItemFormat(it, 'records', `step view ${str(it, 'PK') ?? '?'} / ${str(it, 'SK') ?? '?'}`);
  return {
    runId: str(it, 'runId')!,
    stepId: str(it, 'stepId')!,
    stepName: str(it, 'stepName') ?? '',
    status: str(it, 'status') as Step['status'],
    input: val(it, 'input'),
    output: val(it, 'output'),
    error: val(it, 'error'),
    attempt: num(it, 'attempt') ?? 0,
    startedAt: date(it, 'startedAt'),
    completedAt: date(it, 'completedAt'),
    retryAfter: date(it, 'retryAfter'),
    createdAt: date(it, 'createdAt')!,
    updatedAt: date(it, 'updatedAt')!,
    specVersion: num(it, 'specVersion'),
    ver: num(it, 'ver') ?? 0,
    leaseToken: str(it, 'leaseToken'),
    leaseUntil: num(it, 'leaseUntil'),
    leaseBeat: num(it, 'leaseBeat'),
    leaseTtl: num(it, 'leaseTtl'),
    firstSlot: num(it, 'fs'),
  };
}

export async function toStep(ctx: StorageCtx, s: StepRecord, resolveData: ResolveData): Promise<Step> {
  const [input, output, error] = await Promise.all([
    payloadFor(ctx, s.input, resolveData),
    payloadFor(ctx, s.output, resolveData),
    errorFor(ctx, s.error, resolveData),
  ]);
  return dropUndefined({
    runId: s.runId,
    stepId: s.stepId,
    stepName: s.stepName,
    status: s.status,
    input,
    output,
    error,
    attempt: s.attempt,
    startedAt: s.startedAt,
    completedAt: s.completedAt,
    retryAfter: s.retryAfter,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    specVersion: s.specVersion,
  }) as Step;
}
