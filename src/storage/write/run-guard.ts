/**
 * The run guard most child events carry: a ConditionCheck on `RUN#meta` that the run exists, is not
 * terminal and has a spec this World serves. Both the guard and every terminal transition touch
 * `RUN#meta`, so an event is ordered against the run's end. A failed guard maps to the exact
 * contract error through {@link runGuardError}.
 *
 * The orphan sweep (src/sweep/run-payloads.ts) relies on this: once `RUN#meta` is terminal, no
 * create that carries this guard can publish a pointer under `runs/<runId>/`. The creates that do
 * not carry it (a running step's completion, `step_retrying`, stream blocks) are listed there and
 * protected.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { EntityConflictError, RunNotSupportedError, WorkflowRunNotFoundError } from '@workflow/errors';
import { requiresNewerWorld, SPEC_VERSION_MAX_SUPPORTED } from '@workflow/world';
import { type Expression, expression, when } from '../../aws/expression.js';
import { keys } from '../../schema/keys.js';
import { isTerminalRun, runNotTerminal } from '../records/lifecycle.js';
import { type Attrs, keysOf, num, str } from '../table/codec.js';
import { getItem } from '../table/reads.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { type Cancellation, oldItem } from './conditions.js';
import { type CreateCall, RESTART, type Restart } from './create-call.js';

/** The run exists, is not terminal, and has a spec this World serves. */
const runServed = (): Expression =>
  expression().when(
    when.present,
    runNotTerminal,
    when.any(when.lacks('specVersion'), when.atMost('specVersion', SPEC_VERSION_MAX_SUPPORTED)),
  );

export function runGuard(ctx: StorageCtx, runId: string): TransactWriteItem {
  return runServed().toConditionCheck(ctx.table, keysOf(keys.runMeta(runId)), { returnOld: true });
}

/**
 * {@link runGuard} for an event that leaves something for the run's end to release (a hook or a
 * wait): the same condition as an Update that sets the run's `holds` flag, in the same transaction.
 * A run whose flag is still `false` at its terminal transition skips the release queries
 * (run-release.ts); the terminal transaction is conditioned on that value, so a hold that commits
 * in between forces a re-read instead of being missed.
 */
export function holdingRunGuard(ctx: StorageCtx, runId: string): TransactWriteItem {
  return runServed()
    .set({ [HOLDS]: true })
    .toUpdate(ctx.table, keysOf(keys.runMeta(runId)));
}

/** The run item's flag: `false` from creation, `true` once a hook or wait was created. */
export const HOLDS = 'holds';

/** Whether a run read before its terminal transition may hold hooks or waits (absent: a run from before the flag). */
export function mayHold(run: Attrs): boolean {
  return run[HOLDS]?.BOOL !== false;
}

/** The error a create on a terminal run maps to. */
export const terminalRunConflict = (s: string) =>
  new EntityConflictError(`Cannot create new entities on run in terminal state "${s}"`);

/** The error a failed {@link runGuard} stands for. */
export function runGuardError(runId: string, old: Attrs | undefined, onTerminal: (status: string) => Error): Error {
  if (!old) return new WorkflowRunNotFoundError(runId);
  const specVersion = num(old, 'specVersion');
  if (requiresNewerWorld(specVersion)) return new RunNotSupportedError(specVersion!, SPEC_VERSION_MAX_SUPPORTED);
  return onTerminal(str(old, 'status') ?? 'unknown');
}

/**
 * The run guard read ahead (strongly consistent): throws what the guard would. Used before an
 * upload to S3, so a create the guard will refuse leaves no object behind.
 */
export async function checkRunGuard(
  ctx: StorageCtx,
  runId: string,
  onTerminal: (status: string) => Error,
): Promise<void> {
  const run = await getItem(ctx, keys.runMeta(runId));
  if (!run || isTerminalRun(str(run, 'status')) || requiresNewerWorld(num(run, 'specVersion')))
    throw runGuardError(runId, run, onTerminal);
}

/** The same check on a run already read. */
export function assertSpec(run: { specVersion?: number }): void {
  if (requiresNewerWorld(run.specVersion)) throw new RunNotSupportedError(run.specVersion!, SPEC_VERSION_MAX_SUPPORTED);
}

/**
 * The `onGuard` of a write conditioned on the run item as this process remembers it (run_started,
 * a terminal event): the remembered run is dropped; a run that is gone is not found; any other
 * change (started or ended concurrently, remembered attributes or `holds` moved) is answered by
 * reading the run again and deciding from that state ({@link RESTART}).
 */
export function rereadRunOnGuard(call: Pick<CreateCall, 'runs'>, runId: string): (c: Cancellation) => Restart {
  return (c) => {
    call.runs.forget(runId);
    if (!oldItem(c, 0)) throw new WorkflowRunNotFoundError(runId);
    return RESTART;
  };
}
