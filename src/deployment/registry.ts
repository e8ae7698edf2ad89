/**
 * The deployment registry: one item per deployment this table has seen (`DEPLOY#` / `DEP#<id>`,
 * src/schema/keys.ts `keys.deployment`), in one partition that one Query lists. What it answers:
 * which deployments exist, whether each is `active` or `retired`, when it was first and last seen.
 *
 * Invariants:
 * - Registering (before a process's first write or send: src/deployment/membership.ts) is one
 *   UpdateItem that keeps `firstSeen` and `status` and adds 1 to `beats`: it never revives a
 *   retired deployment, and applied twice it only counts one more beat. Each running process
 *   repeats it every {@link DEPLOYMENT_HEARTBEAT_MS} (its heartbeat) and reads the deployment's
 *   status in the answer.
 * - `beats` is the liveness signal: another process judges this deployment alive only by seeing
 *   `beats` change on its own monotonic clock (src/deployment/liveness.ts), never by comparing its
 *   clock with `lastSeen`, which is the writer's clock and kept for people.
 * - One id, one build: registering stores the build's fingerprint (`fp`,
 *   src/deployment/fingerprint.ts) beside the id, conditionally on the item having none or the same
 *   one, in that same UpdateItem. A process whose build differs from the one that registered its id
 *   (two builds given one EVE_WORLD_AWS_DEPLOYMENT_ID) is refused before its first write ({@link
 *   DeploymentClashError}): its runs would replay on the other build's code and the other's on its
 *   own. A process with no fingerprint (an id set by hand and no build found) registers without
 *   one, and is warned.
 * - `retired` is final (only `retire` writes it, conditionally on the item existing); what becomes
 *   of a retired deployment's messages: ./targets.ts.
 * - Reads that decide a run's fate (`retired` before throwing) are strongly consistent; reads that
 *   only route (the consumer's hold) may be cached.
 */
import { GetItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { expression, readInput, when } from '../aws/expression.js';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import { ConfigError } from '../config/index.js';
import type { WorldContext } from '../context/world-context.js';
import { FORMAT_ATTR, RECORD_FORMAT } from '../schema/formats.js';
import { keys } from '../schema/keys.js';
import type { DeploymentIdentity, DeploymentShape } from './id.js';

/**
 * How often a running World on a table with deployment affinity counts a heartbeat on its
 * deployment's item (one UpdateItem: 518,400 writes per process per 30-day month, 1 WRU each).
 * Short, so a retired deployment's process learns it within this long, and an observer judges a
 * dead one within {@link LIVENESS_WINDOW_MS} (src/deployment/liveness.ts).
 */
export const DEPLOYMENT_HEARTBEAT_MS = 5_000;
/**
 * How long an observer watches a deployment's `beats` before it calls it silent (no live process):
 * two heartbeats and 2 s for a slow write or a busy event loop.
 */
export const LIVENESS_WINDOW_MS = 2 * DEPLOYMENT_HEARTBEAT_MS + 2_000;

export interface DeploymentRecord {
  id: string;
  shape: DeploymentShape;
  status: 'active' | 'retired';
  /** Epoch ms of its first registration. */
  firstSeen: number;
  /** Epoch ms of its last registration or heartbeat, on the writer's clock (for people). */
  lastSeen: number;
  /** Heartbeats counted so far by every process of it: live while it changes. */
  beats: number;
  retiredAt?: number;
  reason?: string;
  /** The fingerprint of the build registered under this id (none before it was first stored). */
  fingerprint?: string;
}

/**
 * A second build under an id another build registered: the process refuses to start. A
 * ConfigError of EVE_WORLD_AWS_DEPLOYMENT_ID, since only an id set by hand can clash.
 */
export class DeploymentClashError extends ConfigError {
  override name = 'DeploymentClashError';
}

function fromItem(item: Record<string, unknown>): DeploymentRecord {
  const r = unmarshall(item as never) as Record<string, unknown>;
  return {
    id: String(r.id),
    shape: r.shape === 'lambda' ? 'lambda' : 'node',
    status: r.status === 'retired' ? 'retired' : 'active',
    firstSeen: Number(r.firstSeen),
    lastSeen: Number(r.lastSeen),
    beats: typeof r.beats === 'number' ? r.beats : 0,
    ...(typeof r.retiredAt === 'number' ? { retiredAt: r.retiredAt } : {}),
    ...(typeof r.reason === 'string' ? { reason: r.reason } : {}),
    ...(typeof r.fp === 'string' ? { fingerprint: r.fp } : {}),
  };
}

/**
 * Registers deployment `id`, or counts one heartbeat of it: keeps its `firstSeen` and `status`,
 * adds 1 to `beats`, sets `lastSeen`. With `fingerprint`, stores it when the item has none and
 * refuses ({@link DeploymentClashError}) when it holds another (see the invariants). Returns the
 * record as it is after the write (its status is how a retired deployment's process learns it).
 */
export async function registerDeployment(
  ctx: WorldContext,
  id: string,
  shape: DeploymentShape,
  now = Date.now(),
  fingerprint?: string,
): Promise<DeploymentRecord> {
  const beat = expression()
    .set({ id, shape })
    .setIfAbsent({ firstSeen: now })
    .set({ lastSeen: now })
    .setIfAbsent({ status: 'active' })
    .set({ [FORMAT_ATTR]: RECORD_FORMAT })
    .setIfAbsent({ fp: fingerprint })
    .add({ beats: 1 });
  if (fingerprint !== undefined) beat.when(when.any(when.lacks('fp'), when.is('fp', fingerprint)));
  try {
    const out = await ctx.clients.ddb.send(
      new UpdateItemCommand({
        ...beat.toUpdateItem(ctx.config.tableName, marshall(keys.deployment(id)), { returnOld: false }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return fromItem(out.Attributes ?? {});
  } catch (err) {
    if (fingerprint === undefined || !isConditionalCheckFailed(err)) throw err;
    const other = await readDeployment(ctx, id, true);
    throw new DeploymentClashError(
      'EVE_WORLD_AWS_DEPLOYMENT_ID',
      `is ${id}, which another build registered on table ${ctx.config.tableName} (build ${other?.fingerprint ?? '?'}, ` +
        `first seen ${other ? new Date(other.firstSeen).toISOString() : '?'}); this process runs build ${fingerprint}. ` +
        "Two builds under one id would run each other's runs on their own code: give each build its own id " +
        `(a release tag or commit), or unset it to derive build:${fingerprint}`,
      `${id}-${fingerprint.slice(0, 8)}`,
    );
  }
}

const warned = new WeakSet<DeploymentIdentity>();

/**
 * Registers this process's deployment with its build's fingerprint (or counts its heartbeat);
 * `warn` is told once when an id set by hand has none (see the invariants). Returns the record.
 */
export async function registerIdentity(
  ctx: WorldContext,
  identity: DeploymentIdentity,
  warn: (line: string) => void,
  now = Date.now(),
): Promise<DeploymentRecord> {
  const [id, fingerprint] = await Promise.all([identity.id(), identity.fingerprint()]);
  if (fingerprint.note && !warned.has(identity)) {
    warned.add(identity);
    warn(
      `[eve-world-aws] deployment ${id} is registered without a build fingerprint: ${fingerprint.note}. ` +
        'A second build given the same EVE_WORLD_AWS_DEPLOYMENT_ID cannot be told apart from this one; ' +
        'set the buildDir option to the folder `wf build` ran in (or the `.output` of `eve build`) so it can.',
    );
  }
  return registerDeployment(ctx, id, identity.shape, now, fingerprint.value);
}

/** The record of deployment `id`, or undefined when it was never registered. */
export async function readDeployment(
  ctx: WorldContext,
  id: string,
  consistent = false,
): Promise<DeploymentRecord | undefined> {
  const out = await ctx.clients.ddb.send(
    new GetItemCommand({
      TableName: ctx.config.tableName,
      Key: marshall(keys.deployment(id)),
      ConsistentRead: consistent,
    }),
  );
  return out.Item ? fromItem(out.Item) : undefined;
}

/** Every registered deployment, oldest first. */
export async function listDeployments(ctx: WorldContext): Promise<DeploymentRecord[]> {
  const out: DeploymentRecord[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ctx.clients.ddb.send(
      new QueryCommand({
        TableName: ctx.config.tableName,
        ...readInput({ key: [when.is('PK', keys.deployment('').PK), when.beginsWith('SK', 'DEP#')] }),
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start as never } : {}),
      }),
    );
    for (const item of page.Items ?? []) out.push(fromItem(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return out.sort((a, b) => a.firstSeen - b.firstSeen || a.id.localeCompare(b.id));
}

/**
 * Marks deployment `id` retired. Conditional on it being registered; retiring a retired one again
 * changes nothing (its first `retiredAt` stays). Returns false when `id` is not registered.
 */
export async function markRetired(ctx: WorldContext, id: string, reason: string, now = Date.now()): Promise<boolean> {
  try {
    await ctx.clients.ddb.send(
      new UpdateItemCommand(
        expression()
          .set({ status: 'retired' })
          .setIfAbsent({ retiredAt: now, reason })
          .when(when.present)
          .toUpdateItem(ctx.config.tableName, marshall(keys.deployment(id)), { returnOld: false }),
      ),
    );
    return true;
  } catch (err) {
    if (isConditionalCheckFailed(err)) return false;
    throw err;
  }
}
