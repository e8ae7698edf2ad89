/**
 * Early deliveries across processes: what a consumer does with the SQS copy of a message that
 * another process delivered early (./early-deliveries.ts), and the small DynamoDB record through
 * which that process reports on it.
 *
 * Why: core takes a copy that carries the message id of a step's inline owner for that owner's
 * crash-redelivery. Dispatched in a second process while the early delivery still runs, the copy
 * is handled (steps handed to delayed step messages) and acked, and the early delivery is left
 * with no SQS copy behind it: if its process then dies, the steps it started afterwards have no
 * message to bring them back. So a copy is never dispatched elsewhere while its early delivery
 * may still be running.
 *
 * The copy of an early delivery carries its mark (`eve.early`: the owner, one id per consumer
 * process, and `until`, the owner's clock + the consumer visibility). A consumer that is not the
 * owner (another process, a Lambda, the same process after a restart):
 * - before `until`: holds the copy until then, unread and undispatched (a hold replaces the copy by
 *   one delayed that long, so it never raises the attempt: ./pipeline.ts);
 * - from `until`: reads the record (`EARLY#<messageId>`):
 *   - `running` with a lease in the future: hides the copy until the lease ends;
 *   - `done` `ack`: the early delivery acked the message; the copy is deleted (settled by it);
 *   - `done` `later` with `resumeAt` in the future: hides the copy until then (its `timeoutSeconds`);
 *   - no record, a lease that ended, `retry`, or a `resumeAt` that passed: dispatched as usual.
 *
 * The owner writes the record only when the copy has not reached it: `running` once its delivery
 * has run for half of the hold, with a lease of {@link EARLY_LEASE_HOLDS} holds renewed every hold
 * while it runs, and `done` when it ends. With one consumer process per queue the copy is back
 * within milliseconds and nothing is written.
 *
 * Invariants:
 * - A record is written only by its owner (conditional on the owner), so a retried write is the
 *   same write, and no process can take over another's record.
 * - An owner that dies stops renewing: its copy is dispatched at most one lease after its last
 *   renewal (at most the hold when it died first), like a crashed delivery's copy after its visibility.
 * - A mark is advisory and bounded: a hold is never longer than {@link MAX_HOLD_SECONDS}, and an
 *   unreadable mark is ignored (the copy is dispatched as usual); a message id of any length
 *   makes a valid key (../ddb.ts).
 */
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.js';
import type { WorldContext } from '../context.js';
import { ATTR, keys } from '../ddb.js';
import { assertItemFormat, FORMAT_ATTR, FORMATS } from '../formats.js';
import type { EarlyMark } from '../queue/encoding.js';

/** How long one `running` record vouches for its owner, in holds; renewed every hold. */
export const EARLY_LEASE_HOLDS = 2;
/** Longest hide of a copy for another process's early delivery (s). */
export const MAX_HOLD_SECONDS = 900;
/** How long a record is kept after it was last written (s). */
const RECORD_TTL_SECONDS = 3600;

export type EarlyOutcome = { verdict: 'ack' } | { verdict: 'later'; resumeAt: number } | { verdict: 'retry' };

type StoredRecord =
  | { state: 'running'; owner: string; until: number }
  | ({ state: 'done'; owner: string } & EarlyOutcome);

/** What to do with a copy of another process's early delivery. */
export type Held =
  /** Hide the copy for this long, undispatched. */
  | { kind: 'hold'; seconds: number; detail: string }
  /** The early delivery acked it: delete the copy. */
  | { kind: 'ack' }
  /** The early delivery asked to be delivered again at `resumeAt`. */
  | { kind: 'later'; seconds: number };

function holdSeconds(ms: number): number {
  return Math.min(MAX_HOLD_SECONDS, Math.max(1, Math.ceil(ms / 1000)));
}

/**
 * For a copy marked by another owner: how to settle it without dispatching, or undefined to
 * dispatch it as usual. Reads DynamoDB only once the mark's hold has passed.
 */
export async function heldForOwner(
  ctx: WorldContext,
  messageId: string,
  mark: EarlyMark,
  now: () => number,
): Promise<Held | undefined> {
  const t = now();
  if (mark.until > t) {
    return {
      kind: 'hold',
      seconds: holdSeconds(mark.until - t),
      detail: `delivered early by consumer ${mark.owner}; held while that delivery may run`,
    };
  }
  const out = await ctx.clients.ddb.send(
    new GetItemCommand({
      TableName: ctx.config.tableName,
      Key: marshall(keys.earlyDelivery(messageId)),
      ConsistentRead: true,
    }),
  );
  const record = out.Item ? (unmarshall(out.Item) as StoredRecord) : undefined;
  if (!record) return undefined;
  // A record of a newer format is refused (the copy is held, see the pipeline), never misread.
  assertItemFormat(record as unknown as Record<string, unknown>, 'records', `early-delivery record EARLY#${messageId}`);
  const at = now();
  if (record.state === 'running') {
    return typeof record.until === 'number' && record.until > at
      ? {
          kind: 'hold',
          seconds: holdSeconds(record.until - at),
          detail: `early delivery by consumer ${record.owner} still running`,
        }
      : undefined;
  }
  if (record.state === 'done' && record.verdict === 'ack') return { kind: 'ack' };
  if (record.state === 'done' && record.verdict === 'later' && typeof record.resumeAt === 'number') {
    return record.resumeAt > at ? { kind: 'later', seconds: Math.ceil((record.resumeAt - at) / 1000) } : undefined;
  }
  return undefined;
}

async function putRecord(ctx: WorldContext, messageId: string, owner: string, fields: object): Promise<void> {
  try {
    await ctx.clients.ddb.send(
      new PutItemCommand({
        TableName: ctx.config.tableName,
        Item: marshall({
          ...keys.earlyDelivery(messageId),
          [FORMAT_ATTR]: FORMATS.records.current,
          owner,
          ...fields,
          [ATTR.ttl]: Math.floor(Date.now() / 1000) + RECORD_TTL_SECONDS,
        }),
        ConditionExpression: 'attribute_not_exists(#pk) OR #owner = :owner',
        ExpressionAttributeNames: { '#pk': ATTR.pk, '#owner': 'owner' },
        ExpressionAttributeValues: marshall({ ':owner': owner }),
      }),
    );
  } catch (err) {
    // Another owner's record for this id (a message id minted twice is not ours to report on).
    if (!isConditionalCheckFailed(err)) throw err;
  }
}

/** The owner: its early delivery of `messageId` is still running, vouched for until `until`. */
export function recordRunning(ctx: WorldContext, messageId: string, owner: string, until: number): Promise<void> {
  return putRecord(ctx, messageId, owner, { state: 'running', until });
}

/** The owner: its early delivery of `messageId` ended so. */
export function recordDone(ctx: WorldContext, messageId: string, owner: string, outcome: EarlyOutcome): Promise<void> {
  return putRecord(ctx, messageId, owner, { state: 'done', ...outcome });
}
