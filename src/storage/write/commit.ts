/**
 * The one commit path: every `events.create` writes through {@link commit}, which allocates the
 * event's slot at commit ("bump and report"), and every transaction goes through {@link transact},
 * which turns AWS failures into the contract's errors.
 *
 * An event id is its dense 1-based position (`slotToEventId`). There is no counter item: the claim
 * on slot N *is* the conditional put of the log item `EVT#N` (`attribute_not_exists`), inside the
 * same `TransactWriteItems` as the view writes and their guards. A transaction writes one log item:
 * one event, or a pair (a synthetic event at N and its cause at N + 1, one item covering both;
 * ../records/event.ts). Invariants:
 *
 * - **Dense, tiled.** The items' covered slot ranges tile 1..last with no gap and no overlap. A
 *   write only ever tries `last + 1` where `last` is the last slot an item is known to *cover* (see
 *   `position.ts`): then every slot up to `last` is covered and `last + 1` is no item's second
 *   half, so the claim of `EVT#<last+1>` fails exactly when that slot is taken. (From a pair's
 *   first half N the put of `EVT#<N+1>` would succeed over the pair's second half; no writer holds
 *   such a position.)
 * - **No burned slots.** A cancelled transaction writes nothing, so a lost race leaves no hole.
 * - **Bump, never fail.** When the slot put is the failed condition, the tail is re-read (with data
 *   when the caller is collecting a report/delta) and the write retries one above it. A read that
 *   shows nothing past `last` (the refusing item was deleted since, e.g. by TTL) retries the same
 *   slot: never a guess that could land inside a pair.
 * - **Guards first.** A failed guard (any other condition) is the handler's to map to the exact
 *   `@workflow/errors` class, whatever slot the event would have taken.
 * - **Idempotent attempts.** Each attempt carries its own `ClientRequestToken`, so an SDK-level
 *   retry of an attempt that did commit returns success instead of bumping a second copy.
 * - **Contract errors.** Throttling that outlasts the SDK's retries (or contention that outlasts
 *   ours) is `ThrottleError`; an invalid write (e.g. an item over DynamoDB's 400 KB) is a 400
 *   `WorkflowWorldError` naming the field that made it too large.
 */

import { randomUUID } from 'node:crypto';
import { type TransactWriteItem, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { ThrottleError, WorkflowWorldError } from '@workflow/errors';
import { isThrottling, isValidation, toWorldError } from '../../aws/sdk-errors.js';
import { countMetric } from '../../telemetry/metrics.js';
import { noteCancellation, noteSlotBump, noteWriteRetry } from '../../telemetry/spans.js';
import type { SlotHints } from '../memory/slot-hints.js';
import { eventsAfter, tailSlot } from '../read/log-tail.js';
import { lastSlotOf, PAIR_ATTR } from '../records/event.js';
import { type Attrs, itemSize } from '../table/codec.js';
import { backoff } from '../table/contention-backoff.js';
import type { StorageCtx } from '../table/storage-ctx.js';
import { type Cancellation, cancellationOf, cancelledFor, failedCondition } from './conditions.js';
import { advance, type Position } from './position.js';

export interface Attempt {
  items: TransactWriteItem[];
  /** Index in `items` of the log item put (the slot claim): one event, or a pair. */
  eventIdx: number;
}

export interface CommitOptions<Stop = never> {
  runId: string;
  /** What is being written (the event type), for error messages. */
  what: string;
  build: (slot: number) => Attempt | Promise<Attempt>;
  /**
   * Called when a guard (a non-event condition) failed. Throws the contract error, returns
   * `'retry'` after refreshing the state `build` reads (e.g. an optimistic version moved), or
   * returns a `Stop` value (a `Restart` or `Resolved`, create-call.ts), which {@link commit}
   * returns instead of committing.
   */
  onGuard: (c: Cancellation) => 'retry' | Stop | Promise<'retry' | Stop>;
  /** Called instead of bumping when the slot is taken, for writes that must take a fixed slot. */
  onSlotTaken?: () => never;
}

export interface Committed {
  /** First slot this commit took (the synthetic event's, when there is one). */
  slot: number;
  /** Number of slots taken (2 for a pair item). */
  count: number;
}

const MAX_ATTEMPTS = 200;
/** DynamoDB's item size limit (names + values). */
const DYNAMODB_ITEM_LIMIT = 400 * 1024;

/**
 * One `TransactWriteItems` with its own `ClientRequestToken`. A cancellation for conditions or
 * contention is rethrown as is (the caller decides); anything AWS refuses after the SDK's retries
 * becomes the contract's error.
 */
async function transact(ctx: StorageCtx, items: TransactWriteItem[], what: string): Promise<void> {
  try {
    await ctx.ddb.send(new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: randomUUID() }));
  } catch (err) {
    const c = cancellationOf(err);
    if (c ? cancelledFor(c, 'validation') : isValidation(err)) throw invalidWrite(what, items, err);
    if (!c && isThrottling(err)) throw toWorldError(err, what);
    throw err;
  }
}

export async function commit<Stop = never>(
  ctx: StorageCtx,
  hints: SlotHints,
  pos: Position,
  o: CommitOptions<Stop>,
): Promise<Committed | Exclude<Stop, 'retry'>> {
  const start = await advance(ctx, hints, o.runId, pos);
  let last = start.last!;
  let transient = 0;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const slot = last + 1;
    const a = await o.build(slot);
    const covered = lastSlotOf(a.items[a.eventIdx].Put!.Item!); // `slot`, or `slot + 1` for a pair
    try {
      await transact(ctx, a.items, o.what);
      hints.note(o.runId, covered);
      return { slot, count: covered - slot + 1 };
    } catch (err) {
      const c = cancellationOf(err);
      if (!c) throw err;
      noteCancellation(c.reasons.map((r) => r.Code ?? 'None'));
      // Guards first: a refused event is refused whatever slot it would have taken.
      const guardFailed = c.reasons.some((_, i) => failedCondition(c, i) && i !== a.eventIdx);
      if (guardFailed) {
        const next = await o.onGuard(c);
        if (next !== 'retry') return next as Exclude<Stop, 'retry'>;
        noteWriteRetry('guard');
        continue;
      }
      if (failedCondition(c, a.eventIdx)) {
        o.onSlotTaken?.();
        noteSlotBump(slot);
        countMetric('SlotBumps');
        // Lost the slot race: move above the current tail (the last slot an item covers).
        if (pos.collect) {
          const evs = await eventsAfter(ctx, o.runId, last);
          pos.collect.push(...evs);
          if (evs.length > 0) last = evs[evs.length - 1].slot;
          hints.note(o.runId, last, evs);
        } else {
          last = Math.max(last, await tailSlot(ctx, o.runId));
          hints.note(o.runId, last);
        }
        continue;
      }
      if (cancelledFor(c, 'transient')) {
        noteWriteRetry('transient');
        await backoff(transient++);
        continue;
      }
      throw err;
    }
  }
  countMetric('Throttles');
  throw new ThrottleError(`${o.what}: DynamoDB kept cancelling the transaction (contention or throttling)`, {
    retryAfter: 1,
  });
}

/**
 * Items and their fields as the message names them: the event's data by key, views by attribute.
 * A pair item's second event (`e2`) is named like the first: both come from the caller's request.
 */
const FIELD_NAMES: Record<string, string> = { ed: 'eventData', xt: 'event', attributes: 'attributes' };

/**
 * The 400 for a write DynamoDB refused as invalid. When an item is over DynamoDB's 400 KB, the
 * error names the item and its largest field (what the caller can shrink or offload).
 */
function invalidWrite(what: string, items: TransactWriteItem[], err: unknown): WorkflowWorldError {
  const puts = items.map((i) => i.Put?.Item).filter((i): i is Attrs => i !== undefined);
  const largest = puts.map((item) => ({ item, size: itemSize(item) })).sort((a, b) => b.size - a.size)[0];
  const awsMessage = (err as { message?: string }).message ?? 'request rejected';
  if (!largest || largest.size < DYNAMODB_ITEM_LIMIT * 0.9) {
    return new WorkflowWorldError(`${what}: DynamoDB refused the write: ${awsMessage}`, {
      status: 400,
      code: 'INVALID_ARGUMENT',
    });
  }
  const field = largestField(largest.item);
  const kb = (n: number) => `${Math.round(n / 1024)} KB`;
  return new WorkflowWorldError(
    `${what}: ${field.name} makes the ${itemKind(largest.item)} item ${kb(largest.size)}, over DynamoDB's 400 KB item limit ` +
      `(${field.name} is ${kb(field.size)}). Send a smaller value, or lower the payloadThresholdBytes tuning option so payload fields go to S3.`,
    { status: 400, code: 'INVALID_ARGUMENT', field: field.name },
  );
}

function largestField(item: Attrs): { name: string; size: number } {
  let best = { name: '', size: -1 };
  for (const [k, v] of Object.entries(item)) {
    if (k === 'PK' || k === 'SK') continue;
    if (k === PAIR_ATTR && v.M) {
      const inner = largestField(v.M);
      if (inner.size > best.size) best = inner;
      continue;
    }
    if ((k === 'ed' || k === 'xt') && v.M) {
      for (const [f, x] of Object.entries(v.M)) {
        const size = itemSize({ [f]: x });
        if (size > best.size) best = { name: `${FIELD_NAMES[k]}.${f}`, size };
      }
      continue;
    }
    const size = itemSize({ [k]: v });
    if (size > best.size) best = { name: FIELD_NAMES[k] ?? k, size };
  }
  return best;
}

function itemKind(item: Attrs): string {
  const sk = item.SK?.S ?? '';
  if (sk.startsWith('EVT#')) return 'event';
  if (sk.startsWith('STEP#')) return 'step';
  if (sk === 'RUN#meta') return 'run';
  if (sk.startsWith('HOOK#')) return 'hook';
  return 'view';
}
