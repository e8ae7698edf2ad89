/**
 * Deployment affinity on the receive side of a plain Node host (src/deployment/): whether this
 * consumer may dispatch a received message, by the deployment it names (`eve.dep`).
 *
 * Invariants (on a table with affinity, which this process joins before its consumer starts or at a
 * heartbeat: src/deployment/membership.ts; the filter asks at every message):
 * - A message for another deployment that is active is never dispatched here: the pipeline holds it
 *   (`hold` cause `other-deployment`), replacing the copy without a dispatch, so it spends none of
 *   its receive budget and never reaches the DLQ here, however long its deployment's consumers take
 *   (./replace.ts). While the target's consumers are alive (its heartbeat counter seen changing, on
 *   this process's clock: src/deployment/liveness.ts; or not yet watched long enough) the hold
 *   stays 1-2 s, so a message bounced here reaches them again at once; otherwise it doubles per
 *   message in this process, 1 s to `deploymentHoldMaxSeconds` (src/config/tuning.ts), with jitter
 *   (src/util/jitter.ts), so a silent deployment's messages cost little. Liveness only decides how
 *   soon a message is shown again, never where it is dispatched.
 * - A message for this process's own deployment once it is retired is held the same way (up to
 *   `retiredHoldMaxSeconds`), never dispatched here: a consumer of another deployment dispatches
 *   it, and core's guard fails its run there (retired means no more work here,
 *   src/deployment/membership.ts).
 * - A message for a retired or never-registered deployment, for this one, or with no deployment
 *   (sent before affinity was on) is dispatched here: core's guard then runs before any workflow
 *   code; for a run of another deployment it re-routes the message and src/deployment/targets.ts
 *   refuses that re-route, so the run fails with `DEPLOYMENT_MISMATCH` in that one delivery.
 * - A registry read that fails holds the message (`deployment-registry-unreadable`, for
 *   `registryUnreadableHoldSeconds`), never dispatches it: whether it belongs here is unknown.
 */
import type { WorldContext } from '../../context/world-context.js';
import type { DeploymentIdentity } from '../../deployment/id.js';
import { HeartbeatWatch } from '../../deployment/liveness.js';
import { DEPLOYMENT_HEARTBEAT_MS, type DeploymentRecord, readDeployment } from '../../deployment/registry.js';
import type { Envelope } from '../../queue/encoding.js';
import { jittered } from '../../util/jitter.js';

/** How long a registry answer is reused for routing (ms): one heartbeat, so a live target's counter moves between reads. */
const RECORD_TTL_MS = DEPLOYMENT_HEARTBEAT_MS;
/** Messages whose hold count is remembered (oldest forgotten first). */
const REMEMBERED = 10_000;

export type AffinityDecision =
  /** Dispatch here: for this deployment, for none, or for one that cannot take it (retired, unknown). */
  | { kind: 'here'; why: 'own' | 'unstamped' | 'retired' | 'unknown' }
  /** Another active deployment's: never dispatched here. */
  | { kind: 'elsewhere'; target: string };

/** The decision for a message naming `target`, given this process's id and the target's record. */
export function decideDeployment(
  target: string | undefined,
  self: string,
  record: Pick<DeploymentRecord, 'status'> | undefined,
): AffinityDecision {
  if (target === undefined) return { kind: 'here', why: 'unstamped' };
  if (target === self) return { kind: 'here', why: 'own' };
  if (record === undefined) return { kind: 'here', why: 'unknown' };
  if (record.status === 'retired') return { kind: 'here', why: 'retired' };
  return { kind: 'elsewhere', target };
}

export type AffinityHoldCause = 'other-deployment' | 'deployment-registry-unreadable';

/** A hold the pipeline applies instead of a dispatch. */
export interface AffinityHold {
  seconds: number;
  detail: string;
  cause: AffinityHoldCause;
}

/** The consumer's filter: a hold for a message this process must not dispatch, else undefined. */
export interface DeploymentFilter {
  holdFor(envelope: Envelope): Promise<AffinityHold | undefined>;
}

/**
 * The filter of a consumer of deployment `identity`: holds nothing while the table has no affinity
 * (`identity.affinity` is asked at every message: a process joins when the table turns).
 */
export function createDeploymentFilter(
  ctx: WorldContext,
  identity: DeploymentIdentity & { readonly retired?: boolean },
  random: () => number = Math.random,
): DeploymentFilter {
  const { deploymentHoldMaxSeconds, retiredHoldMaxSeconds, registryUnreadableHoldSeconds } = ctx.config;
  const records = new Map<string, { record: DeploymentRecord | undefined; at: number }>();
  const watch = new HeartbeatWatch();
  const holds = new Map<string, number>();
  const recordOf = async (id: string): Promise<DeploymentRecord | undefined> => {
    const cached = records.get(id);
    if (cached && performance.now() - cached.at < RECORD_TTL_MS) return cached.record;
    const record = await readDeployment(ctx, id);
    records.set(id, { record, at: performance.now() });
    if (records.size > REMEMBERED) records.delete(records.keys().next().value as string);
    if (record) watch.observe([record]);
    return record;
  };
  // The hold of a message this process must not dispatch (see the header).
  const hold = (
    messageId: string,
    live: boolean,
    detail: (s: number) => string,
    max = deploymentHoldMaxSeconds,
  ): AffinityHold => {
    const n = holds.get(messageId) ?? 0;
    holds.delete(messageId);
    holds.set(messageId, n + 1);
    if (holds.size > REMEMBERED) holds.delete(holds.keys().next().value as string);
    const seconds = jittered(live ? 1 : Math.min(max, 2 ** n), random);
    return { seconds, cause: 'other-deployment', detail: detail(seconds) };
  };
  return {
    async holdFor(envelope) {
      if (!identity.affinity) return undefined;
      const target = envelope.deploymentId;
      const self = await identity.id();
      if (target === undefined) return undefined;
      if (target === self) {
        if (!identity.retired) return undefined;
        // Backing off to retiredHoldMaxSeconds only: another deployment's consumer, which fails the
        // run at once, should meet it soon.
        return hold(
          envelope.messageId,
          false,
          (s) =>
            `for deployment ${target}, this consumer's own, which is retired: left for a consumer of another deployment (core's guard fails its run there); shown again in ${s} s`,
          retiredHoldMaxSeconds,
        );
      }
      let record: DeploymentRecord | undefined;
      try {
        record = await recordOf(target);
      } catch (err) {
        return {
          seconds: registryUnreadableHoldSeconds,
          cause: 'deployment-registry-unreadable',
          detail: `for deployment ${target}; the registry could not be read, asked again in ${registryUnreadableHoldSeconds} s: ${String(err)}`,
        };
      }
      const decision = decideDeployment(target, self, record);
      if (decision.kind === 'here') {
        holds.delete(envelope.messageId);
        return undefined;
      }
      // Silent only once watched long enough to tell; a target not yet watched may be live.
      const live = watch.state(target) !== 'silent';
      return hold(
        envelope.messageId,
        live,
        (s) => `for deployment ${target} (this consumer is ${self}); shown again in ${s} s`,
      );
    },
  };
}
