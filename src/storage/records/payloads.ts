/**
 * Where a payload field lives: inline on its item, or in S3 behind a `{__s3}` pointer.
 *
 * Invariants:
 * - Write side: a field above the configured threshold always goes to S3; then, while the item
 *   would exceed {@link ITEM_BUDGET}, the largest inline field goes too. The S3 put happens before
 *   the DynamoDB write that publishes the pointer, so a reader never sees a dangling pointer.
 * - Deterministic keys: `runs/<runId>/<entity>/<field>-<sha256 of the bytes>`. A redelivered create
 *   overwrites its own object instead of leaving a copy; the content hash keeps two *different*
 *   values for one field (e.g. two racing completions, only one of which commits) from overwriting
 *   the object the committed pointer names.
 * - Guard first: when something is about to be uploaded, `guard` runs before the upload (the
 *   create's run guard, read ahead), so a create the run guard will refuse uploads nothing.
 * - Read side: a pointer is followed only for `resolveData: 'all'`; `'none'` never reads S3.
 */

import { createHash } from 'node:crypto';
import type { ResolveData } from '@workflow/world';
import { getEventDataRefFields } from '@workflow/world';
import { isS3Pointer, PayloadStore } from '../../context/payload-store.js';
import { valueSize } from '../table/codec.js';
import type { StorageCtx } from '../table/storage-ctx.js';

/** Largest item we write, leaving room under DynamoDB's 400 KB for names and rounding. */
const ITEM_BUDGET = 390_000;

/** Bytes an S3 pointer takes on an item. */
const POINTER_BYTES = 120;

export const runPrefix = (runId: string) => `runs/${runId}`;

/** Decide, per field, between inline and S3 (see the invariants above); uploads what goes to S3. */
export async function placePayloads(
  ctx: StorageCtx,
  fields: Record<string, unknown>,
  keyPrefix: string,
  otherBytes: number,
  guard?: () => Promise<void>,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { ...fields };
  const toS3 = new Set<string>();
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined && v !== null && !isS3Pointer(v) && PayloadStore.sizeOf(v) > ctx.payloads.thresholdBytes)
      toS3.add(k);
  }
  const sizeOf = (k: string) => (toS3.has(k) ? POINTER_BYTES : valueSize(out[k]));
  let total = otherBytes + Object.keys(out).reduce((s, k) => s + k.length + sizeOf(k), 0);
  while (total > ITEM_BUDGET) {
    const inline = Object.keys(out).filter(
      (k) => !toS3.has(k) && out[k] !== undefined && out[k] !== null && !isS3Pointer(out[k]),
    );
    if (inline.length === 0) break;
    const largest = inline.reduce((a, b) => (sizeOf(a) >= sizeOf(b) ? a : b));
    total -= sizeOf(largest) - POINTER_BYTES;
    toS3.add(largest);
  }
  if (toS3.size === 0) return out;
  await guard?.();
  await Promise.all(
    [...toS3].map(async (k) => {
      out[k] = await ctx.payloads.putBlob(`${keyPrefix}/${k}-${contentHash(fields[k])}`, fields[k]);
    }),
  );
  return out;
}

/** SHA-256 (hex, first 32 chars) of the value's stored bytes. */
function contentHash(value: unknown): string {
  const bytes = value instanceof Uint8Array ? value : Buffer.from(JSON.stringify(value), 'utf8');
  return createHash('sha256').update(bytes).digest('hex').slice(0, 32);
}

/**
 * Offload an event's large data fields. Known payload ("ref") fields above the threshold go to
 * S3; any other field only when the item would not fit otherwise.
 */
export async function placeEventData(
  ctx: StorageCtx,
  runId: string,
  eventType: string,
  data: Record<string, unknown> | undefined,
  guard?: () => Promise<void>,
): Promise<Record<string, unknown> | undefined> {
  if (data === undefined || data === null || typeof data !== 'object') return data;
  const refs = new Set<string>(getEventDataRefFields(eventType));
  const large = Object.keys(data).filter((k) => refs.has(k) || valueSize(data[k]) > ctx.payloads.thresholdBytes);
  if (large.length === 0) return data;
  const rest = Object.fromEntries(Object.entries(data).filter(([k]) => !large.includes(k)));
  const placed = await placePayloads(
    ctx,
    Object.fromEntries(large.map((k) => [k, data[k]])),
    `${runPrefix(runId)}/events/${eventType}`,
    512 + valueSize(rest),
    guard,
  );
  return { ...data, ...placed };
}

/** A stored field's value: the pointer followed, or the inline value as is. */
export async function loadPayload(ctx: StorageCtx, v: unknown): Promise<unknown> {
  return isS3Pointer(v) ? ctx.payloads.resolve(v) : v;
}

/** A payload field as returned: resolved for 'all', omitted for 'none'. */
export const payloadFor = (ctx: StorageCtx, v: unknown, resolveData: ResolveData) =>
  resolveData === 'none' ? undefined : loadPayload(ctx, v);

/** An error as returned: 'none' keeps an inline error (as world-local does), not one in S3. */
export const errorFor = (ctx: StorageCtx, v: unknown, resolveData: ResolveData) =>
  resolveData === 'none' && isS3Pointer(v) ? undefined : loadPayload(ctx, v);
