/**
 * The deployment registry: one item per deployment this table has seen (`DEPLOY#` / `DEP#<id>`,
 * src/schema/keys.ts `keys.deployment`), in one partition that one Query lists. What it answers: which
 * deployments exist, whether each is `active` or `retired`, when it was first and last seen.
 *
 * Invariants:
 * - A process with affinity on registers its deployment before its first write or send
 *   (src/index.ts), so no run is pinned to a deployment the registry does not know; it refreshes
 *   `lastSeen` while it runs. Registering is one UpdateItem that keeps `firstSeen` and `status`:
 *   safe when applied twice, and it never revives a retired deployment.
 * - One id, one build: registering stores the build's fingerprint (`fp`, src/deployment/fingerprint.ts)
 *   beside the id, conditionally on the item having none or the same one, in that same UpdateItem.
 *   A process whose build differs from the one that registered its id (two builds given one
 *   EVE_WORLD_AWS_DEPLOYMENT_ID) is refused before its first write ({@link DeploymentClashError}):
 *   its runs would replay on the other build's code and the other's on its own. A process with no
 *   fingerprint (an id set by hand and no build found) registers without one, and is warned.
 * - `retired` is final (only `retire` writes it, conditionally on the item existing); a retired
 *   deployment's messages fail their runs with `DEPLOYMENT_MISMATCH` (src/queue/index.ts throws
 *   DeploymentUnavailableError on core's re-route), never loop, never reach the DLQ.
 * - Reads that decide a run's fate (`retired` before throwing) are strongly consistent; reads that
 *   only route (the consumer's hold) may be cached.
 */
import { GetItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import { ConfigError } from '../config/index.js';
import type { WorldContext } from '../context/world-context.js';
import { FORMAT_ATTR, RECORD_FORMAT } from '../schema/formats.js';
import { keys } from '../schema/keys.js';
import type { DeploymentIdentity, DeploymentShape } from './id.js';

export type DeploymentStatus = 'active' | 'retired';

/** How often a running World with deployment affinity refreshes its deployment's `lastSeen`. */
export const DEPLOYMENT_HEARTBEAT_MS = 60_000;

export interface DeploymentRecord {
  id: string;
  shape: DeploymentShape;
  status: DeploymentStatus;
  /** Epoch ms of its first registration. */
  firstSeen: number;
  /** Epoch ms of its last registration or heartbeat. */
  lastSeen: number;
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
    ...(typeof r.retiredAt === 'number' ? { retiredAt: r.retiredAt } : {}),
    ...(typeof r.reason === 'string' ? { reason: r.reason } : {}),
    ...(typeof r.fp === 'string' ? { fingerprint: r.fp } : {}),
  };
}

/**
 * Registers (or refreshes `lastSeen` of) deployment `id`; keeps its `firstSeen` and `status`. With
 * `fingerprint`, stores it when the item has none and refuses ({@link DeploymentClashError}) when
 * it holds another (see the invariants).
 */
export async function registerDeployment(
  ctx: WorldContext,
  id: string,
  shape: DeploymentShape,
  now = Date.now(),
  fingerprint?: string,
): Promise<void> {
  const set = [
    '#id = :id',
    '#shape = :shape',
    '#first = if_not_exists(#first, :now)',
    '#last = :now',
    '#status = if_not_exists(#status, :active)',
    '#fv = :fv',
    ...(fingerprint === undefined ? [] : ['#fp = if_not_exists(#fp, :fp)']),
  ];
  try {
    await ctx.clients.ddb.send(
      new UpdateItemCommand({
        TableName: ctx.config.tableName,
        Key: marshall(keys.deployment(id)),
        UpdateExpression: `SET ${set.join(', ')}`,
        ...(fingerprint === undefined ? {} : { ConditionExpression: 'attribute_not_exists(#fp) OR #fp = :fp' }),
        ExpressionAttributeNames: {
          '#id': 'id',
          '#shape': 'shape',
          '#first': 'firstSeen',
          '#last': 'lastSeen',
          '#status': 'status',
          '#fv': FORMAT_ATTR,
          ...(fingerprint === undefined ? {} : { '#fp': 'fp' }),
        },
        ExpressionAttributeValues: marshall({
          ':id': id,
          ':shape': shape,
          ':now': now,
          ':active': 'active',
          ':fv': RECORD_FORMAT,
          ...(fingerprint === undefined ? {} : { ':fp': fingerprint }),
        }),
      }),
    );
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
 * Registers this process's deployment with its build's fingerprint; `warn` is told once when an id
 * set by hand has none (see the invariants).
 */
export async function registerIdentity(
  ctx: WorldContext,
  identity: DeploymentIdentity,
  warn: (line: string) => void,
  now = Date.now(),
): Promise<void> {
  const [id, fingerprint] = await Promise.all([identity.id(), identity.fingerprint()]);
  if (fingerprint.note && !warned.has(identity)) {
    warned.add(identity);
    warn(
      `[eve-world-aws] deployment ${id} is registered without a build fingerprint: ${fingerprint.note}. ` +
        'A second build given the same EVE_WORLD_AWS_DEPLOYMENT_ID cannot be told apart from this one; ' +
        'set the buildDir option to the folder `wf build` ran in (or the `.output` of `eve build`) so it can.',
    );
  }
  await registerDeployment(ctx, id, identity.shape, now, fingerprint.value);
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
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
        ExpressionAttributeValues: marshall({ ':pk': keys.deployment('').PK, ':sk': 'DEP#' }),
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
      new UpdateItemCommand({
        TableName: ctx.config.tableName,
        Key: marshall(keys.deployment(id)),
        UpdateExpression:
          'SET #status = :retired, #at = if_not_exists(#at, :now), #reason = if_not_exists(#reason, :reason)',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeNames: { '#status': 'status', '#at': 'retiredAt', '#reason': 'reason' },
        ExpressionAttributeValues: marshall({ ':retired': 'retired', ':now': now, ':reason': reason }),
      }),
    );
    return true;
  } catch (err) {
    if (isConditionalCheckFailed(err)) return false;
    throw err;
  }
}

/**
 * The newest active deployment of `shape` (core's `deploymentId: 'latest'`): the one registered
 * last. `self` when none other is (this process is registered before it starts runs).
 */
export async function latestDeployment(ctx: WorldContext, shape: DeploymentShape, self: string): Promise<string> {
  const active = (await listDeployments(ctx)).filter((d) => d.status === 'active' && d.shape === shape);
  return active.at(-1)?.id ?? self;
}
