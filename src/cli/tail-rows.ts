/**
 * The records `tail` produces (one NDJSON line each with --json): run status changes, new events,
 * step changes, stream chunks and streams opening or closing, each built from what the World
 * returns (a chunk written through the runtime's `getWritable()` shown as its text). The loop that
 * reads them from the World is src/cli/tail-follow.ts.
 */

import type { WorkflowRun, WorkflowRunWithoutData } from '@workflow/world';
import { type Event, eventIdToSlot, isTerminalWorkflowRunStatus, type Step } from '@workflow/world';
import { messageIdOfDelivery } from '../queue/delivery-id.js';
import { errorText, fromDevalue, hex, jsonSafe, previewValue, stringField, truncate, utf8 } from './shared/format.js';

export interface RunRow {
  kind: 'run';
  runId: string;
  workflowName: string;
  status: WorkflowRun['status'];
  /** The deployment the run is pinned to (src/deployment/id.ts). */
  deploymentId?: string;
  createdAt: string;
  startedAt?: string;
  completedAt?: string;
  /** completedAt (or now, while running) minus startedAt. */
  durationMs?: number;
  error?: string;
  /** While not terminal: what the run waits for (src/cli/run-waits.ts), e.g. `hook order-42`. */
  waiting?: string[];
}

export interface EventRow {
  kind: 'event';
  runId: string;
  slot: number;
  eventId: string;
  eventType: string;
  correlationId?: string;
  stepName?: string;
  createdAt: string;
  messageId?: string; // a step_started's message, the id queue() returned (src/queue/delivery-id.ts)
  /** One-line preview of eventData (S3 pointers shown as `<s3 key>` unless --data). */
  preview: string;
  /** eventData as JSON (bytes as {bytes, text|base64}, pointers as {s3, size}). */
  data?: unknown;
}

export interface StepRow {
  kind: 'step';
  runId: string;
  stepId: string;
  stepName: string;
  status: Step['status'];
  attempt: number;
  startedAt?: string;
  completedAt?: string;
  durationMs?: number;
  error?: string;
}

export interface ChunkRow {
  kind: 'chunk';
  runId: string;
  stream: string;
  index: number;
  bytes: number;
  /** The chunk as text when it is valid UTF-8 ... */
  text?: string;
  /** ... else as hex. */
  hex?: string;
}

/** A stream appeared (`done: false`) or was closed (`done: true`). */
export interface StreamRow {
  kind: 'stream';
  runId: string;
  stream: string;
  done: boolean;
}

export type TailRow = RunRow | EventRow | StepRow | ChunkRow | StreamRow;

const iso = (d: Date | undefined) => (d === undefined ? undefined : new Date(d).toISOString());

export function runRow(run: WorkflowRun | WorkflowRunWithoutData, now = Date.now()): RunRow {
  const started = run.startedAt ? new Date(run.startedAt).getTime() : undefined;
  const end = run.completedAt
    ? new Date(run.completedAt).getTime()
    : isTerminalWorkflowRunStatus(run.status)
      ? undefined
      : now;
  return dropUndefined({
    kind: 'run',
    runId: run.runId,
    workflowName: run.workflowName,
    status: run.status,
    deploymentId: run.deploymentId,
    createdAt: new Date(run.createdAt).toISOString(),
    startedAt: iso(run.startedAt),
    completedAt: iso(run.completedAt),
    durationMs: started !== undefined && end !== undefined ? Math.max(0, end - started) : undefined,
    error: run.status === 'failed' ? errorText((run as { error?: unknown }).error) : undefined,
  } satisfies RunRow);
}

export function stepRow(step: Step): StepRow {
  const started = step.startedAt ? new Date(step.startedAt).getTime() : undefined;
  const ended = step.completedAt ? new Date(step.completedAt).getTime() : undefined;
  return dropUndefined({
    kind: 'step',
    runId: step.runId,
    stepId: step.stepId,
    stepName: step.stepName,
    status: step.status,
    attempt: step.attempt,
    startedAt: iso(step.startedAt),
    completedAt: iso(step.completedAt),
    durationMs: started !== undefined && ended !== undefined ? Math.max(0, ended - started) : undefined,
    error: step.status === 'failed' ? errorText(step.error) : undefined,
  } satisfies StepRow);
}

/**
 * Left out of the one-line preview (still in `data`): fields shown in their own column, and the
 * runtime's step-latency telemetry, which would crowd out the payload.
 */
const PREVIEW_SKIP = new Set([
  'stepName',
  'workflowName',
  'ttfs',
  'stso',
  'stepCount',
  'eventCount',
  'rsfs',
  'finalSchedulingReplay',
  'optimizations',
]);

export function eventRow(ev: Event, stepNames: ReadonlyMap<string, string>): EventRow {
  const data = (ev as { eventData?: unknown }).eventData;
  const stepName = stringField(data, 'stepName') ?? (ev.correlationId ? stepNames.get(ev.correlationId) : undefined);
  // A failure's `error` (serialized, often compressed) previews as `Name: message`.
  const shown =
    data && typeof data === 'object' && !Array.isArray(data) && !(data instanceof Uint8Array)
      ? Object.fromEntries(
          Object.entries(data as Record<string, unknown>)
            .filter(([k]) => !PREVIEW_SKIP.has(k))
            .map(([k, v]) => (k === 'error' && v instanceof Uint8Array ? [k, errorText(v)] : [k, v])),
        )
      : data;
  return dropUndefined({
    kind: 'event',
    runId: ev.runId,
    slot: eventIdToSlot(ev.eventId) ?? 0,
    eventId: ev.eventId,
    eventType: ev.eventType,
    correlationId: ev.correlationId,
    stepName,
    createdAt: new Date(ev.createdAt).toISOString(),
    messageId: messageIdOfDelivery(stringField(data, 'ownerMessageId')),
    preview: truncate(previewValue(shown), 120),
    data: data === undefined ? undefined : jsonSafe(data),
  } satisfies EventRow);
}

export function chunkRow(runId: string, stream: string, index: number, bytes: Uint8Array): ChunkRow {
  const text = framedText(bytes) ?? utf8(bytes);
  return text !== undefined
    ? { kind: 'chunk', runId, stream, index, bytes: bytes.byteLength, text }
    : { kind: 'chunk', runId, stream, index, bytes: bytes.byteLength, hex: hex(bytes) };
}

/** A chunk as display lines: its text (split on newlines), or hex. */
export function chunkLines(c: ChunkRow): string[] {
  if (c.text !== undefined) return c.text.replace(/\n$/, '').split('\n');
  return [`0x${c.hex}`];
}

function dropUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

/**
 * The text of a chunk written through the runtime's `getWritable()`: one or more frames of a 4-byte
 * big-endian length and a serialized value (`devl` + devalue). A `Uint8Array` value shows as its
 * UTF-8 text, a string as itself, anything else as compact JSON. Undefined when the chunk is not
 * framed that way (raw bytes written by another writer), so the caller falls back to UTF-8 / hex.
 */
export function framedText(bytes: Uint8Array): string | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: string[] = [];
  let at = 0;
  while (at < bytes.byteLength) {
    if (at + 8 > bytes.byteLength) return undefined;
    const len = view.getUint32(at);
    const end = at + 4 + len;
    if (len < 4 || end > bytes.byteLength) return undefined;
    const frame = bytes.subarray(at + 4, end);
    if (Buffer.from(frame.subarray(0, 4)).toString('latin1') !== 'devl') return undefined;
    const decoded = fromDevalue(Buffer.from(frame.subarray(4)).toString('utf8'));
    if (!decoded) return undefined;
    const v = decoded.value as { Uint8Array?: unknown } | string;
    if (typeof v === 'string') parts.push(v);
    else if (v && typeof v === 'object' && typeof v.Uint8Array === 'string') {
      const text = utf8(new Uint8Array(Buffer.from(v.Uint8Array, 'base64')));
      if (text === undefined) return undefined;
      parts.push(text);
    } else parts.push(JSON.stringify(v));
    at = end;
  }
  return parts.join('');
}
