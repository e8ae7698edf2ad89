/**
 * The deployment registry: one item per deployment this table has seen (`DEPLOY#` / `DEP#<id>`,
 * src/schema/keys.ts `keys.deployment`), in one partition that one Query lists. What it answers: which
 * deployments exist, whether each is `active` or `retired`, when it was first and last seen.
 *
 * Invariants:
 * - A process of a table with affinity registers its deployment before its first write or send
 *   (src/deployment/membership.ts), so no run is pinned to a deployment the registry does not
 *   know. Registering is one UpdateItem that keeps `firstSeen` and `status` and adds 1 to `beats`:
 *   it never revives a retired deployment, and applied twice it only counts one more beat. Each
 *   running process repeats it every {@link DEPLOYMENT_HEARTBEAT_MS} (its heartbeat) and reads the
 *   deployment's status in the answer.
 * - `beats` is the liveness signal: another process judges this deployment alive only by seeing
 *   `beats` change on its own monotonic clock (src/deployment/liveness.ts), never by comparing its
 *   clock with `lastSeen`, which is the writer's clock and kept for people.
 * - `retired` is final (only `retire` writes it, conditionally on the item existing); a retired
 *   deployment's messages fail their runs with `DEPLOYMENT_MISMATCH` (src/queue/index.ts throws
 *   DeploymentUnavailableError on core's re-route), never loop, never reach the DLQ.
 * - Reads that decide a run's fate (`retired` before throwing) are strongly consistent; reads that
 *   only route (the consumer's hold) may be cached.
 */
import { GetItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import type { WorldContext } from '../context/world-context.js';
import { FORMAT_ATTR, RECORD_FORMAT } from '../schema/formats.js';
import { keys } from '../schema/keys.js';
import type { DeploymentShape } from './id.js';

export type DeploymentStatus = 'active' | 'retired';

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
  status: DeploymentStatus;
  /** Epoch ms of its first registration. */
  firstSeen: number;
  /** Epoch ms of its last registration or heartbeat, on the writer's clock (for people). */
  lastSeen: number;
  /** Heartbeats counted so far by every process of it: live while it changes. */
  beats: number;
  retiredAt?: number;
  reason?: string;
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
  };
}

/**
 * Registers deployment `id`, or counts one heartbeat of it: keeps its `firstSeen` and `status`,
 * adds 1 to `beats`, sets `lastSeen`. Returns the record as it is after the write (its status is
 * how a retired deployment's process learns it).
 */
export async function registerDeployment(
  ctx: WorldContext,
  id: string,
  shape: DeploymentShape,
  now = Date.now(),
): Promise<DeploymentRecord> {
  const out = await ctx.clients.ddb.send(
    new UpdateItemCommand({
      TableName: ctx.config.tableName,
      Key: marshall(keys.deployment(id)),
      UpdateExpression:
        'SET #id = :id, #shape = :shape, #first = if_not_exists(#first, :now), #last = :now, #status = if_not_exists(#status, :active), #fv = :fv ADD #beats :one',
      ExpressionAttributeNames: {
        '#id': 'id',
        '#shape': 'shape',
        '#first': 'firstSeen',
        '#last': 'lastSeen',
        '#status': 'status',
        '#fv': FORMAT_ATTR,
        '#beats': 'beats',
      },
      ExpressionAttributeValues: marshall({
        ':id': id,
        ':shape': shape,
        ':now': now,
        ':active': 'active',
        ':fv': RECORD_FORMAT,
        ':one': 1,
      }),
      ReturnValues: 'ALL_NEW',
    }),
  );
  return fromItem(out.Attributes ?? {});
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
