/**
 * Deployment affinity on the receive side of a plain Node host (src/deployment/): whether this
 * consumer may dispatch a received message, by the deployment it names (`eve.dep`).
 *
 * Invariants (with affinity on):
 * - A message for another deployment that is active is never dispatched here: the pipeline holds
 *   it (`hold` cause `other-deployment`), which replaces the copy without a dispatch, so it spends
 *   none of its receive budget and never reaches the DLQ here, however long its deployment's
 *   consumers take to receive it (src/consumer/delivery/replace.ts). While the target's
 *   consumers are alive (`lastSeen` within {@link LIVE_MS}) the hold stays 1-2 s, so a message
 *   bounced here reaches them again at once; otherwise it doubles per message in this process,
 *   1 s to {@link MAX_HOLD_SECONDS}, with jitter, so a silent deployment's messages cost little.
 *   Liveness only decides how soon a message is shown again, never where it is dispatched.
 * - A message for a retired or never-registered deployment, for this one, or with no deployment
 *   (sent before affinity was on) is dispatched here: core's guard then runs before any workflow
 *   code; for a run of another deployment it re-routes the message and src/deployment/targets.ts
 *   refuses that re-route, so the run fails with `DEPLOYMENT_MISMATCH` in that one delivery.
 * - A registry read that fails holds the message (`deployment-registry-unreadable`), never
 *   dispatches it: whether it belongs here is unknown.
 */
import type { WorldContext } from '../context/world-context.js';
import type { DeploymentIdentity } from '../deployment/id.js';
import { DEPLOYMENT_HEARTBEAT_MS, type DeploymentRecord, readDeployment } from '../deployment/registry.js';
import type { Envelope } from '../queue/encoding.js';

/** Longest hold of another deployment's message (s, before jitter). */
export const MAX_HOLD_SECONDS = 60;
/** A deployment whose `lastSeen` is this recent has a live consumer (three missed heartbeats: not). */
export const LIVE_MS = 3 * DEPLOYMENT_HEARTBEAT_MS;
/** How long a registry answer is reused for routing (ms). */
const RECORD_TTL_MS = 30_000;
/** Hold after a failed registry read (s). */
const UNREADABLE_HOLD_SECONDS = 5;
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

/** The filter of a consumer of deployment `identity` (undefined with affinity off: no filter). */
export function createDeploymentFilter(
  ctx: WorldContext,
  identity: DeploymentIdentity,
  random: () => number = Math.random,
): DeploymentFilter | undefined {
  if (!identity.affinity) return undefined;
  const records = new Map<string, { record: DeploymentRecord | undefined; at: number }>();
  const holds = new Map<string, number>();
  const recordOf = async (id: string): Promise<DeploymentRecord | undefined> => {
    const cached = records.get(id);
    if (cached && Date.now() - cached.at < RECORD_TTL_MS) return cached.record;
    const record = await readDeployment(ctx, id);
    records.set(id, { record, at: Date.now() });
    return record;
  };
  return {
    async holdFor(envelope) {
      const target = envelope.deploymentId;
      const self = await identity.id();
      if (target === undefined || target === self) return undefined;
      let record: DeploymentRecord | undefined;
      try {
        record = await recordOf(target);
      } catch (err) {
        return {
          seconds: UNREADABLE_HOLD_SECONDS,
          cause: 'deployment-registry-unreadable',
          detail: `for deployment ${target}; the registry could not be read, asked again in ${UNREADABLE_HOLD_SECONDS} s: ${String(err)}`,
        };
      }
      const decision = decideDeployment(target, self, record);
      if (decision.kind === 'here') {
        holds.delete(envelope.messageId);
        return undefined;
      }
      const n = holds.get(envelope.messageId) ?? 0;
      holds.delete(envelope.messageId);
      holds.set(envelope.messageId, n + 1);
      if (holds.size > REMEMBERED) holds.delete(holds.keys().next().value as string);
      const live = record !== undefined && Date.now() - record.lastSeen < LIVE_MS;
      const base = live ? 1 : Math.min(MAX_HOLD_SECONDS, 2 ** n);
      const seconds = base + Math.floor(random() * (Math.ceil(base / 2) + 1));
      return {
        seconds,
        cause: 'other-deployment',
        detail: `for deployment ${target} (this consumer is ${self}); shown again in ${seconds} s`,
      };
    },
  };
}
