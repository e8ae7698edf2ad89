/**
 * The backstop's wake of a run: re-open the dispatch keys of its stranded steps, then send a plain run continuation
 * (`{ runId }`) to the run's workflow queue, as core's own continuations are: the queue its last acknowledged workflow
 * delivery came on (the DUE item's `wq`, `ackTurn` in src/storage/write/due-moves.ts), else the queue of the configured
 * namespace (`config.queueNamespace`, WORKFLOW_QUEUE_NAMESPACE, as core reads it), for the run's own deployment
 * (`{ deploymentId }`: with affinity on, the message names it and only that deployment's consumers run it; a plain
 * continuation is never refused for a retired one, whose consumers' guard then settles the run,
 * src/deployment/targets.ts). Core's replay then does what the run owes: re-queues a pending step, completes an elapsed
 * wait, replays a received hook; a run that owes nothing replays and suspends again.
 *
 * Core (5.0.0-beta) re-queues a pending step under `${stepId}:${fnv1a32Hex(stepName)}` (`stepDispatchIdempotencyKey` in
 * @workflow/core's runtime helpers), the key of its first dispatch. If that message was lost, the key is still used
 * (`QKEY#` `sent`, kept for `idempotencyTtlSeconds`) and the re-queue would be dropped as a duplicate; so the wake
 * re-opens it first (src/queue/idempotency.ts, `reopenSentIdempotencyKey`). Concurrent replays then claim the key
 * afresh and exactly one of them sends.
 */
import { getQueueTopicPrefix, resolveQueueNamespace, type ValidQueueName } from '@workflow/world';
import type { WorldContext } from '../context/world-context.js';
import { reopenSentIdempotencyKey } from '../queue/idempotency.js';
import type { QueueSender } from '../queue/index.js';
import type { WakeRun } from './check.js';

/** FNV-1a 32-bit of a string's UTF-16 code units, 8 hex digits: core's `fnv1a32Hex`. */
function fnv1a32Hex(value: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) {
    hash ^= value.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

export function createWake(ctx: WorldContext, sender: Pick<QueueSender, 'queue'>): WakeRun {
  return async (run, stranded) => {
    for (const s of stranded) await reopenSentIdempotencyKey(ctx, `${s.stepId}:${fnv1a32Hex(s.stepName)}`);
    const queueName =
      run.queueName ??
      `${getQueueTopicPrefix('workflow', resolveQueueNamespace(ctx.config.queueNamespace))}${run.workflowName}`;
    await sender.queue(
      queueName as ValidQueueName,
      { runId: run.runId, requestedAt: new Date() },
      run.deploymentId ? { deploymentId: run.deploymentId } : undefined,
    );
  };
}
