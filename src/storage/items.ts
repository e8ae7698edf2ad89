/**
 * Entity <-> item mapping for the single table, and the large-value rules.
 *
 * Records (`RunRecord`, `StepRecord`, ...) are the *stored* form: payload fields hold either the
 * value or an S3 pointer `{__s3}`. Turning a record into a contract entity is the only place a
 * pointer is followed, and only for `resolveData: 'all'`, so `'none'` never reads S3.
 *
 * Times are stored as epoch-ms numbers on entity items (comparable in conditions, e.g.
 * `retryAfter`); inside opaque event data they use the codec's tagged form.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Event, Hook, ResolveData, Step, Wait, WorkflowRun } from '@workflow/world';
import { getEventDataRefFields, slotToEventId, stripEventDataRefs } from '@workflow/world';
import { ulid } from 'ulid';
import type { WorldConfig } from '../config.js';
import { ATTR, GSI1, GSI2, keys, storageKeys } from '../ddb.js';
import { isS3Pointer, PayloadStore } from '../payloads.js';
import { type Attrs, bool, date, fromAttr, itemSize, num, str, toAttr, toItem, val, valueSize } from './codec.js';

export interface StorageCtx {
  readonly config: WorldConfig;
  readonly ddb: DynamoDBClient;
  readonly payloads: PayloadStore;
  readonly table: string;
}

export { GSI1, GSI2 };

/** Largest item we write, leaving room under DynamoDB's 400 KB for names and rounding. */
export const ITEM_BUDGET = 390_000;

export const TERMINAL_RUN = ['completed', 'failed', 'cancelled'] as const;
export const TERMINAL_STEP = ['completed', 'failed', 'cancelled'] as const;
export const isTerminal = (s: string | undefined) => s === 'completed' || s === 'failed' || s === 'cancelled';

const ms = (d: Date | undefined) => (d === undefined ? undefined : d.getTime());
const iso = (d: Date) => d.toISOString();

// ---------------------------------------------------------------- payloads

/**
 * Decide, per payload field, between inline and S3. A field above the configured threshold
 * always goes to S3; then, while the item would exceed {@link ITEM_BUDGET}, the largest inline
 * field goes too. The S3 put happens before the DynamoDB write that publishes the pointer.
 */
export async function placePayloads(
  ctx: StorageCtx,
  fields: Record<string, unknown>,
  keyPrefix: string,
  otherBytes: number,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { ...fields };
  const toS3 = new Set<string>();
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined && v !== null && !isS3Pointer(v) && PayloadStore.sizeOf(v) > ctx.payloads.thresholdBytes) toS3.add(k);
  }
  const sizeOf = (k: string) => (toS3.has(k) ? 120 : valueSize(out[k]));
  let total = otherBytes + Object.keys(out).reduce((s, k) => s + k.length + sizeOf(k), 0);
  while (total > ITEM_BUDGET) {
    const inline = Object.keys(out).filter((k) => !toS3.has(k) && out[k] !== undefined && out[k] !== null && !isS3Pointer(out[k]));
    if (inline.length === 0) break;
    const largest = inline.reduce((a, b) => (sizeOf(a) >= sizeOf(b) ? a : b));
    total -= sizeOf(largest) - 120;
    toS3.add(largest);
  }
  const stamp = ulid();
  await Promise.all(
    [...toS3].map(async (k) => {
      out[k] = await ctx.payloads.putBlob(`${keyPrefix}/${stamp}-${k}`, fields[k]);
    }),
  );
  return out;
}

async function load(ctx: StorageCtx, v: unknown): Promise<unknown> {
  return isS3Pointer(v) ? ctx.payloads.resolve(v) : v;
}

/** Payload field as returned: resolved for 'all', omitted for 'none'. */
const payload = (ctx: StorageCtx, v: unknown, rd: ResolveData) => (rd === 'none' ? undefined : load(ctx, v));

export const runPrefix = (runId: string) => `runs/${runId}`;

// ---------------------------------------------------------------- runs

export interface RunRecord {
  runId: string;
  status: WorkflowRun['status'];
  deploymentId: string;
  workflowName: string;
  specVersion?: number;
  executionContext?: Record<string, unknown>;
  input?: unknown;
  output?: unknown;
  error?: unknown;
  errorCode?: string;
  attributes: Record<string, string>;
  encryptionPublicKey?: string;
  expiredAt?: Date;
  startedAt?: Date;
  completedAt?: Date;
  createdAt: Date;
  updatedAt: Date;
  /** Bumped by every attr_set: the optimistic guard for the post-merge key count. */
  attrVer: number;
}

export function runItem(r: RunRecord): Attrs {
  const sortKey = `${iso(r.createdAt)}#${r.runId}`;
  return {
    ...keysOf(keys.runMeta(r.runId)),
    ...toItem({
      runId: r.runId,
      status: r.status,
      deploymentId: r.deploymentId,
      workflowName: r.workflowName,
      specVersion: r.specVersion,
      executionContext: r.executionContext,
      input: r.input,
      output: r.output,
      error: r.error,
      errorCode: r.errorCode,
      encryptionPublicKey: r.encryptionPublicKey,
      expiredAt: ms(r.expiredAt),
      startedAt: ms(r.startedAt),
      completedAt: ms(r.completedAt),
      createdAt: ms(r.createdAt),
      updatedAt: ms(r.updatedAt),
      attrVer: r.attrVer,
      [ATTR.gsi1pk]: storageKeys.workflowRunsGsi(r.workflowName),
      [ATTR.gsi1sk]: sortKey,
      [ATTR.gsi2pk]: keys.runsGsi,
      [ATTR.gsi2sk]: sortKey,
    }),
    attributes: { M: Object.fromEntries(Object.entries(r.attributes).map(([k, v]) => [k, { S: v }])) },
  };
}

export function parseRun(it: Attrs): RunRecord {
  const attrs: Record<string, string> = {};
  for (const [k, v] of Object.entries(it.attributes?.M ?? {})) if (v.S !== undefined) attrs[k] = v.S;
  return {
    runId: str(it, 'runId')!,
    status: str(it, 'status') as RunRecord['status'],
    deploymentId: str(it, 'deploymentId') ?? '',
    workflowName: str(it, 'workflowName') ?? '',
    specVersion: num(it, 'specVersion'),
    executionContext: val(it, 'executionContext') as Record<string, unknown> | undefined,
    input: val(it, 'input'),
    output: val(it, 'output'),
    error: val(it, 'error'),
    errorCode: str(it, 'errorCode'),
    attributes: attrs,
    encryptionPublicKey: str(it, 'encryptionPublicKey'),
    expiredAt: date(it, 'expiredAt'),
    startedAt: date(it, 'startedAt'),
    completedAt: date(it, 'completedAt'),
    createdAt: date(it, 'createdAt')!,
    updatedAt: date(it, 'updatedAt')!,
    attrVer: num(it, 'attrVer') ?? 0,
  };
}

/** The contract shape: `output` only when completed, `error` only when failed. */
export async function toRun(ctx: StorageCtx, r: RunRecord, rd: ResolveData): Promise<WorkflowRun> {
  const [input, output] = await Promise.all([
    payload(ctx, r.input, rd),
    r.status === 'completed' ? payload(ctx, r.output, rd) : undefined,
  ]);
  // 'none' keeps the error (as world-local does) unless it lives in S3.
  const error = r.status !== 'failed' ? undefined : rd === 'none' && isS3Pointer(r.error) ? undefined : await load(ctx, r.error);
  return dropUndefined({
    runId: r.runId,
    status: r.status,
    deploymentId: r.deploymentId,
    workflowName: r.workflowName,
    specVersion: r.specVersion,
    executionContext: r.executionContext,
    input,
    output,
    error,
    errorCode: r.status === 'failed' ? r.errorCode : undefined,
    attributes: { ...r.attributes },
    encryptionPublicKey: r.encryptionPublicKey,
    expiredAt: r.expiredAt,
    startedAt: r.startedAt,
    completedAt: r.completedAt,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  }) as WorkflowRun;
}

// ---------------------------------------------------------------- steps

export interface StepRecord {
  runId: string;
  stepId: string;
  stepName: string;
  status: Step['status'];
  input?: unknown;
  output?: unknown;
  error?: unknown;
  attempt: number;
  startedAt?: Date;
  completedAt?: Date;
  retryAfter?: Date;
  createdAt: Date;
  updatedAt: Date;
  specVersion?: number;
  /** Bumped by every write: the optimistic guard of the read-then-write transitions. */
  ver: number;
}

export function stepItem(s: StepRecord): Attrs {
  return {
    ...keysOf(keys.step(s.runId, s.stepId)),
    ...toItem({
      runId: s.runId,
      stepId: s.stepId,
      stepName: s.stepName,
      status: s.status,
      input: s.input,
      output: s.output,
      error: s.error,
      attempt: s.attempt,
      startedAt: ms(s.startedAt),
      completedAt: ms(s.completedAt),
      retryAfter: ms(s.retryAfter),
      createdAt: ms(s.createdAt),
      updatedAt: ms(s.updatedAt),
      specVersion: s.specVersion,
      ver: s.ver,
    }),
  };
}

export function parseStep(it: Attrs): StepRecord {
  return {
    runId: str(it, 'runId')!,
    stepId: str(it, 'stepId')!,
    stepName: str(it, 'stepName') ?? '',
    status: str(it, 'status') as Step['status'],
    input: val(it, 'input'),
    output: val(it, 'output'),
    error: val(it, 'error'),
    attempt: num(it, 'attempt') ?? 0,
    startedAt: date(it, 'startedAt'),
    completedAt: date(it, 'completedAt'),
    retryAfter: date(it, 'retryAfter'),
    createdAt: date(it, 'createdAt')!,
    updatedAt: date(it, 'updatedAt')!,
    specVersion: num(it, 'specVersion'),
    ver: num(it, 'ver') ?? 0,
  };
}

export async function toStep(ctx: StorageCtx, s: StepRecord, rd: ResolveData): Promise<Step> {
  const [input, output] = await Promise.all([payload(ctx, s.input, rd), payload(ctx, s.output, rd)]);
  const error = rd === 'none' && isS3Pointer(s.error) ? undefined : await load(ctx, s.error);
  return dropUndefined({
    runId: s.runId,
    stepId: s.stepId,
    stepName: s.stepName,
    status: s.status,
    input,
    output,
    error,
    attempt: s.attempt,
    startedAt: s.startedAt,
    completedAt: s.completedAt,
    retryAfter: s.retryAfter,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    specVersion: s.specVersion,
  }) as Step;
}

// ---------------------------------------------------------------- hooks

export interface HookRecord {
  runId: string;
  hookId: string;
  token: string;
  metadata?: unknown;
  createdAt: Date;
  specVersion?: number;
  isWebhook?: boolean;
  isSystem?: boolean;
  tokenRetentionUntil?: Date;
}

/** Single-tenant World: no owner/project/environment dimension (as world-postgres). */
const TENANT = { ownerId: '', projectId: '', environment: '' };

export function hookItem(h: HookRecord): Attrs {
  return {
    ...keysOf(keys.hook(h.token)),
    ...toItem({
      runId: h.runId,
      hookId: h.hookId,
      token: h.token,
      metadata: h.metadata,
      createdAt: ms(h.createdAt),
      specVersion: h.specVersion,
      isWebhook: h.isWebhook,
      isSystem: h.isSystem,
      tokenRetentionUntil: ms(h.tokenRetentionUntil),
      [ATTR.gsi1pk]: keys.runHooksGsi(h.runId),
      [ATTR.gsi1sk]: h.hookId,
      [ATTR.gsi2pk]: keys.hookIdGsi(h.hookId),
      [ATTR.gsi2sk]: storageKeys.hookIdGsiSk,
    }),
  };
}

export function parseHook(it: Attrs): HookRecord {
  return {
    runId: str(it, 'runId')!,
    hookId: str(it, 'hookId')!,
    token: str(it, 'token')!,
    metadata: val(it, 'metadata'),
    createdAt: date(it, 'createdAt')!,
    specVersion: num(it, 'specVersion'),
    isWebhook: bool(it, 'isWebhook'),
    isSystem: bool(it, 'isSystem'),
    tokenRetentionUntil: date(it, 'tokenRetentionUntil'),
  };
}

export async function toHook(ctx: StorageCtx, h: HookRecord, rd: ResolveData): Promise<Hook> {
  return dropUndefined({
    runId: h.runId,
    hookId: h.hookId,
    token: h.token,
    ...TENANT,
    metadata: await payload(ctx, h.metadata, rd),
    createdAt: h.createdAt,
    specVersion: h.specVersion,
    isWebhook: h.isWebhook,
    isSystem: h.isSystem,
    tokenRetentionUntil: h.tokenRetentionUntil,
  }) as Hook;
}

// ---------------------------------------------------------------- waits

export function waitItem(w: Wait & { correlationId: string }): Attrs {
  return {
    ...keysOf(keys.wait(w.runId, w.correlationId)),
    ...toItem({
      waitId: w.waitId,
      runId: w.runId,
      status: w.status,
      resumeAt: ms(w.resumeAt),
      completedAt: ms(w.completedAt),
      createdAt: ms(w.createdAt),
      updatedAt: ms(w.updatedAt),
      specVersion: w.specVersion,
    }),
  };
}

export function parseWait(it: Attrs): Wait {
  return dropUndefined({
    waitId: str(it, 'waitId')!,
    runId: str(it, 'runId')!,
    status: str(it, 'status') as Wait['status'],
    resumeAt: date(it, 'resumeAt'),
    completedAt: date(it, 'completedAt'),
    createdAt: date(it, 'createdAt')!,
    updatedAt: date(it, 'updatedAt')!,
    specVersion: num(it, 'specVersion'),
  }) as Wait;
}

// ---------------------------------------------------------------- events

/**
 * An event as stored. `eventData` is the request's data, kept opaque (unknown fields included),
 * with large fields replaced by S3 pointers; `extra` keeps unknown top-level request fields.
 */
export interface EventRecord {
  runId: string;
  slot: number;
  eventType: string;
  correlationId?: string;
  eventData?: Record<string, unknown>;
  createdAt: Date;
  occurredAt?: Date;
  specVersion?: number;
  resumeId?: string;
  extra?: Record<string, unknown>;
}

const KNOWN_REQUEST_FIELDS = new Set(['eventType', 'correlationId', 'eventData', 'specVersion']);

/** Unknown top-level fields of an event request (kept so newer cores round-trip). */
export function extraFields(data: Record<string, unknown>): Record<string, unknown> | undefined {
  const extra = Object.fromEntries(Object.entries(data).filter(([k, v]) => !KNOWN_REQUEST_FIELDS.has(k) && v !== undefined));
  return Object.keys(extra).length > 0 ? extra : undefined;
}

export function eventItem(e: EventRecord): Attrs {
  const item: Attrs = {
    ...keysOf(keys.event(e.runId, e.slot)),
    ...toItem({
      t: e.eventType,
      cid: e.correlationId,
      ca: ms(e.createdAt),
      oa: ms(e.occurredAt),
      sv: e.specVersion,
      rid: e.resumeId,
    }),
  };
  if (e.eventData !== undefined) item.ed = toAttr(e.eventData)!;
  if (e.extra !== undefined) item.xt = toAttr(e.extra)!;
  if (e.correlationId !== undefined) {
    item[ATTR.gsi1pk] = { S: keys.corrGsi(e.runId, e.correlationId) };
    item[ATTR.gsi1sk] = { S: keys.eventSk(e.slot) };
  }
  return item;
}

export function parseEvent(it: Attrs): EventRecord {
  return {
    runId: str(it, 'PK')!.slice(4),
    slot: keys.slotFromEventSk(str(it, 'SK')!),
    eventType: str(it, 't')!,
    correlationId: str(it, 'cid'),
    eventData: it.ed === undefined ? undefined : (fromAttr(it.ed) as Record<string, unknown>),
    createdAt: date(it, 'ca')!,
    occurredAt: date(it, 'oa'),
    specVersion: num(it, 'sv'),
    resumeId: str(it, 'rid'),
    extra: it.xt === undefined ? undefined : (fromAttr(it.xt) as Record<string, unknown>),
  };
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
): Promise<Record<string, unknown> | undefined> {
  if (data === undefined || data === null || typeof data !== 'object') return data;
  const refs = new Set<string>(getEventDataRefFields(eventType));
  const large = Object.keys(data).filter((k) => refs.has(k) || valueSize(data[k]) > ctx.payloads.thresholdBytes);
  if (large.length === 0) return data;
  const rest = Object.fromEntries(Object.entries(data).filter(([k]) => !large.includes(k)));
  const placed = await placePayloads(ctx, Object.fromEntries(large.map((k) => [k, data[k]])), `${runPrefix(runId)}/events`, 512 + valueSize(rest));
  return { ...data, ...placed };
}

/** The contract `Event`: ref fields stripped for 'none' (never read), pointers followed otherwise. */
export async function toEvent(ctx: StorageCtx, e: EventRecord, rd: ResolveData): Promise<Event> {
  let ev = dropUndefined({
    ...(e.extra ?? {}),
    eventType: e.eventType,
    correlationId: e.correlationId,
    eventData: e.eventData,
    runId: e.runId,
    eventId: slotToEventId(e.slot),
    createdAt: e.createdAt,
    occurredAt: e.occurredAt,
    specVersion: e.specVersion,
    resumeId: e.resumeId,
  }) as Event;
  ev = stripEventDataRefs(ev, rd);
  const data = (ev as { eventData?: Record<string, unknown> }).eventData;
  if (data && typeof data === 'object' && Object.values(data).some(isS3Pointer)) {
    const resolved: Record<string, unknown> = {};
    await Promise.all(Object.entries(data).map(async ([k, v]) => (resolved[k] = await load(ctx, v))));
    ev = { ...ev, eventData: resolved } as Event;
  }
  return ev;
}

// ---------------------------------------------------------------- helpers

export function keysOf(k: { PK: string; SK: string }): Attrs {
  return { PK: { S: k.PK }, SK: { S: k.SK } };
}

export function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

export { itemSize, valueSize };
