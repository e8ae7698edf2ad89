/**
 * Whether a send may go to the deployment it names (`QueueOptions.deploymentId`), with affinity on.
 * The throw rules of `isDeploymentUnavailableError` (`@workflow/world`'s `Queue`: true only when
 * the target definitively cannot receive):
 *
 * - Only core's re-route of a misrouted delivery (a payload with `deploymentMismatchRetryCount`,
 *   core's deployment guard) and a start (`runInput`, core's `start()`) are refused, and only when
 *   the registry says, on a strongly consistent read, that the target is retired or was never
 *   registered. Core then fails the run with `DEPLOYMENT_MISMATCH` at once.
 * - Every other send goes out (a hook wake for a run of a retired deployment, for one): its
 *   delivery reaches a consumer of another deployment, whose guard re-routes it, and that re-route
 *   is refused here; the run never hangs and never loops.
 * - A registry read that fails is a plain error (core delivers the message again), never this one.
 */
import type { QueuePayload } from '@workflow/world';
import type { WorldContext } from '../context/world-context.js';
import { readDeployment } from './registry.js';
import { DeploymentUnavailableError } from './unavailable-error.js';

/** Why a send to `target` must be refused: throws DeploymentUnavailableError, else resolves. */
export async function assertTargetReachable(
  ctx: WorldContext,
  self: string | undefined,
  target: string,
  payload: QueuePayload,
): Promise<void> {
  if (target === self) return;
  const p = payload as { deploymentMismatchRetryCount?: unknown; runInput?: unknown };
  const decisive = typeof p.deploymentMismatchRetryCount === 'number' || p.runInput !== undefined;
  if (!decisive) return;
  const record = await readDeployment(ctx, target, true);
  if (record === undefined) throw new DeploymentUnavailableError(target, 'unknown');
  if (record.status === 'retired') throw new DeploymentUnavailableError(target, 'retired');
}
