/**
 * This process's part in the fleet that shares its table (deployment affinity, docs/operations.md
 * "Deployment affinity"). Whether runs finish on the deployment that started them is the table's
 * decision (its format item, src/preflight/format-check.ts), never a per-process setting: one
 * process left without a setting would run other builds' messages and fail their runs.
 *
 * Invariants:
 * - Until `join()` has read the table, `affinity` is false, and nothing is written or sent: the
 *   World awaits `join()` before its first write or send and before a delivery reaches core
 *   (src/preflight/write-gate.ts), so core's guard never runs against an unread table.
 * - On a table with affinity a deployment process takes part (its id names its build,
 *   src/deployment/id.ts; it is registered before its first write; its consumer filters by
 *   `eve.dep`, src/consumer/delivery/affinity.ts), or `join()` rejects with one error naming the
 *   fix (a Lambda `$LATEST`, an id the worker cannot invoke, an id it cannot derive, a table that
 *   still admits readers older than affinity); then nothing is written or sent.
 * - A client (the CLI) never registers, heartbeats or consumes: on a table with affinity its new
 *   runs go to `target`, else to the newest deployment with a live consumer
 *   (src/deployment/liveness.ts).
 * - The heartbeat (started by `world.start()`, every DEPLOYMENT_HEARTBEAT_MS): with affinity it
 *   counts a beat on the deployment's item and reads its status in the answer; without, it reads
 *   the format item again, so a table that `init --deployment-affinity` turned while this process
 *   runs is joined within one heartbeat (or the process refuses, as `join()` would).
 * - Retired (learnt from the heartbeat's answer, or from the strongly consistent read every start
 *   makes): no run starts here any more (`assertMayStart` throws {@link DeploymentRetiredError}
 *   before anything is written or sent), and the consumer stops dispatching this deployment's
 *   messages (a consumer of another deployment takes them, and core's guard fails their runs).
 * - EVE_WORLD_AWS_DEPLOYMENT_AFFINITY decides nothing here: `on` asks the first process on a table
 *   that no `init` recorded and that holds no run to record affinity (a new CDK stack); a value
 *   that disagrees with the table is named once per process and ignored.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { WorldConfig } from '../config/index.js';
import type { WorldContext } from '../context/world-context.js';
import {
  affinityFormatProblem,
  readTableFormat,
  recordNewTableAffinity,
  type TableFormat,
  TableFormatError,
} from '../preflight/format-check.js';
import type { Logger } from '../telemetry/log.js';
import { affinityEnabled, type DeploymentIdentity, deploymentIdentity } from './id.js';
import { newestLiveDeployment } from './liveness.js';
import { DEPLOYMENT_HEARTBEAT_MS, LIVENESS_WINDOW_MS, readDeployment, registerIdentity } from './registry.js';
import { DeploymentRetiredError } from './retired-error.js';

export type FleetRole = 'deployment' | 'client';

/** The identity queue and consumer read, with what the table decided for this process. */
export interface Membership extends DeploymentIdentity {
  readonly role: FleetRole;
  /** The table said this deployment is retired. */
  readonly retired: boolean;
  /** Settle this process's part from the table's format (once; again after a refusal). */
  join(format: TableFormat): Promise<void>;
  /** Throws the refusal a heartbeat met after `join()` (the table turned to affinity, and this process cannot take part). */
  assertUsable(): void;
  /**
   * A run is about to be created for, or a start message sent to, `deploymentId`: throws
   * {@link DeploymentRetiredError} when that is this process's own deployment and it is retired
   * (a strongly consistent read, shared by the calls of one start).
   */
  assertMayStart(deploymentId: string | undefined): Promise<void>;
  /**
   * core's `deploymentId: 'latest'`: the newest deployment of this shape with a live consumer, else
   * this one (a client: its target, else the newest live deployment of any shape).
   */
  latest(): Promise<string>;
  /** One heartbeat now (the timer calls it; tests too). */
  beat(): Promise<void>;
  startHeartbeat(): void;
  stop(): void;
}

/**
 * `events.create` that first awaits `before` (the World's write gate), then refuses a new run on a
 * retired deployment before it is written (`assertMayStart`; its start message is refused the same
 * way by the queue).
 */
export function refuseRetiredStarts<A extends unknown[], R>(
  membership: Pick<Membership, 'assertMayStart'>,
  before: () => Promise<void>,
  create: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    await before();
    const event = args[1] as { eventType?: string; eventData?: { deploymentId?: string } } | undefined;
    if (event?.eventType === 'run_created') await membership.assertMayStart(event.eventData?.deploymentId);
    return create(...args);
  };
}

export interface MembershipOptions {
  role?: FleetRole;
  /**
   * A client's target on a table with affinity: an id, or what chooses one when the first run is
   * started (the CLI's `start`); default the newest deployment with a live consumer.
   */
  target?: string | (() => Promise<string>);
  logger: Logger;
  /** Whether the table holds a run (the World's run listing): a table with one is never recorded by a process. */
  hasRuns: () => Promise<boolean>;
  /** The entry script a plain Node host's build is found by (default: the process's). */
  entryScript?: string;
}

/** Why a process of this config cannot take part in affinity on a table of format `tf`, or undefined. */
export function fleetProblem(config: WorldConfig, tf: TableFormat, role: FleetRole = 'deployment'): string | undefined {
  if (!tf.affinity) return undefined;
  const format = affinityFormatProblem(config.tableName, tf);
  if (format) return format;
  if (role === 'client') return undefined;
  try {
    affinityEnabled({ ...config, deploymentAffinity: 'on' });
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The warning for a variable that disagrees with the table (named once per process), or undefined. */
export function variableDisagreement(config: WorldConfig, tf: TableFormat): string | undefined {
  if (config.deploymentAffinity === 'on' && !tf.affinity)
    return `[eve-world-aws] EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on is ignored: table ${config.tableName} does not pin runs to their deployment, and the table decides (it is recorded only on a new table with no run). To turn it on: \`eve-world-aws init --deployment-affinity\` (docs/operations.md, "Deployment affinity").`;
  if (config.deploymentAffinity === 'off' && tf.affinity)
    return `[eve-world-aws] EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=off is ignored: table ${config.tableName} pins runs to their deployment, so this process takes part (docs/operations.md, "Deployment affinity"); unset it.`;
  return undefined;
}

const warned = new Set<string>();

export function createMembership(ctx: WorldContext, opts: MembershipOptions): Membership {
  const { config } = ctx;
  const role = opts.role ?? 'deployment';
  const logger = opts.logger;
  let identity = deploymentIdentity({ ...config, deploymentAffinity: 'off' }, opts.entryScript);
  const { shape } = identity;
  let affinity = false;
  let retired = false;
  let refusal: Error | undefined;
  let joining: Promise<void> | undefined;
  let joined = false;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> | undefined;
  let chosen: Promise<string> | undefined;
  let ownRead: Promise<void> | undefined;

  const learnStatus = (record?: { id: string; status: string }) => {
    if (record?.status !== 'retired' || retired) return;
    retired = true;
    logger.error(
      `[eve-world-aws] deployment ${record.id} is retired: this process starts no more runs and no longer takes its deployment's messages (consumers of other deployments fail them). Stop it (docs/operations.md, "Deployment affinity").`,
    );
  };

  const takePart = async (tf: TableFormat): Promise<void> => {
    const problem = fleetProblem(config, tf, role);
    if (problem) throw new TableFormatError(problem);
    if (role === 'client') {
      affinity = tf.affinity;
      return;
    }
    if (!tf.affinity) return;
    const next = deploymentIdentity({ ...config, deploymentAffinity: 'on' }, opts.entryScript);
    // Registered, with its build's fingerprint, before the first run is pinned to it
    // (src/deployment/registry.ts: a second build under a hand-set id is refused here).
    learnStatus(await registerIdentity(ctx, next, (line) => logger.warn(line)));
    identity = next;
    affinity = true;
  };

  const doJoin = async (given: TableFormat): Promise<void> => {
    let tf = given;
    if (!tf.recorded && config.deploymentAffinity === 'on' && role === 'deployment' && !(await opts.hasRuns()))
      tf = await recordNewTableAffinity(ctx.clients.ddb as DynamoDBClient, config.tableName);
    const disagreement = variableDisagreement(config, tf);
    if (disagreement && !warned.has(disagreement)) {
      warned.add(disagreement);
      logger.warn(disagreement);
    }
    await takePart(tf);
    refusal = undefined;
    joined = true;
  };

  const selfId = () => identity.id();
  const newestLive = async (): Promise<string> => {
    const id = await newestLiveDeployment(ctx);
    if (id !== undefined) return id;
    throw new Error(
      `no deployment on table ${config.tableName} has a live consumer to run a new run (none counted a heartbeat within ${LIVENESS_WINDOW_MS / 1000} s): start your app, or name one (\`eve-world-aws deployments\` lists them)`,
    );
  };

  const membership: Membership = {
    role,
    shape,
    get affinity() {
      return affinity;
    },
    get retired() {
      return retired;
    },
    fingerprint: () => identity.fingerprint(),
    id: () => {
      if (role === 'client' && affinity) {
        chosen ??= (async () => {
          if (typeof opts.target === 'function') return opts.target();
          return opts.target ?? newestLive();
        })().catch((err) => {
          chosen = undefined;
          throw err;
        });
        return chosen;
      }
      return selfId();
    },
    join(format) {
      if (joined) return Promise.resolve();
      joining ??= doJoin(format).finally(() => {
        joining = undefined;
      });
      return joining;
    },
    assertUsable() {
      if (refusal) throw refusal;
    },
    async assertMayStart(deploymentId) {
      if (!affinity || role === 'client' || deploymentId === undefined) return;
      const self = await selfId();
      if (deploymentId !== self) return;
      if (!retired) {
        ownRead ??= readDeployment(ctx, self, true)
          .then(learnStatus)
          .finally(() => {
            ownRead = undefined;
          });
        await ownRead;
      }
      if (retired) throw new DeploymentRetiredError(self);
    },
    async latest() {
      if (role === 'client') return affinity ? newestLive() : selfId();
      const self = await selfId();
      if (!affinity) return self;
      return (await newestLiveDeployment(ctx, { shape, self })) ?? self;
    },
    beat() {
      beating ??= (async () => {
        if (!joined || role === 'client') return;
        if (affinity) {
          learnStatus(await registerIdentity(ctx, identity, (line) => logger.warn(line)));
          return;
        }
        const tf = await readTableFormat(ctx.clients.ddb as DynamoDBClient, config.tableName);
        if (!tf.affinity) return;
        try {
          await takePart(tf);
          logger.warn(
            `[eve-world-aws] table ${config.tableName} now pins runs to their deployment: this process takes part as ${await selfId()}.`,
          );
        } catch (err) {
          refusal = err as Error;
          logger.error(
            `[eve-world-aws] table ${config.tableName} now pins runs to their deployment, and this process cannot take part: it writes and sends nothing more. ${String((err as Error).message)}`,
          );
        }
      })()
        .catch((err) => logger.warn(`[eve-world-aws] heartbeat: ${String(err)}`))
        .finally(() => {
          beating = undefined;
        });
      return beating;
    },
    startHeartbeat() {
      if (timer || role === 'client') return;
      timer = setInterval(() => void membership.beat(), DEPLOYMENT_HEARTBEAT_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
  return membership;
}
