/**
 * The records `tail` produces (one NDJSON line each with --json) and the follow loop that reads
 * them from the World: run status changes, new events, step changes, stream chunks.
 *
 * The loop only uses the public World API (runs/events/steps/streams), so it shows exactly what
 * the runtime and `wf inspect` see. It polls: the event log is append-only with a slot cursor, and
 * stream chunks are paged with their own cursors, so each round reads only what is new.
 */
import { type Event, eventIdToSlot, isTerminalWorkflowRunStatus, type Step, type World } from '@workflow/world';
import type { WorkflowRun, WorkflowRunWithoutData } from '@workflow/world';
import { sleep } from '../aws/sleep.js';
import { messageIdOfDelivery } from '../queue/delivery-id.js';
import { encodeEventCursor } from '../storage/index.js';
import { errorText, fromDevalue, hex, jsonSafe, previewValue, stringField, truncate, utf8 } from './format.js';
import { RunWaits } from './run-waits.js';

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
  const rec: RunRow = {
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
  };
  return dropUndefined(rec);
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

export interface FollowOptions {
  /** false: one snapshot round, then stop. */
  follow: boolean;
  /** First event slot to show (1-based). */
  since?: number;
  /** Only these streams (default: all of the run's streams). */
  streams?: string[];
  /** Fastest poll interval while data flows (ms); idle polling backs off to 1 s. */
  intervalMs?: number;
  /**
   * After the run is terminal, how long to keep waiting for streams that are still open (a
   * writer that died never closes its stream) before giving up on them (ms).
   */
  streamGraceMs?: number;
  signal?: AbortSignal;
  /** Told about streams abandoned after the grace period. */
  onNotice?: (message: string) => void;
}

export type TailWorld = Pick<World, 'runs' | 'events' | 'steps' | 'streams'>;

interface StreamCursor {
  cursor?: string;
  done: boolean;
}

/**
 * Yield records for `runId` until the run is terminal and its streams are closed (follow), or
 * after one round (snapshot). The caller has checked that the run exists.
 */
export async function* followRun(world: TailWorld, runId: string, opts: FollowOptions): AsyncGenerator<TailRow> {
  const idleMaxMs = 1000;
  const fastMs = opts.intervalMs ?? 200;
  const graceMs = opts.streamGraceMs ?? 10_000;
  let eventCursor: string | undefined =
    opts.since !== undefined && opts.since > 1 ? encodeEventCursor(opts.since - 1) : undefined;
  let lastRun: string | undefined;
  const stepSeen = new Map<string, string>();
  const stepNames = new Map<string, string>();
  /** Steps with events not yet reflected in a step record (insertion order). */
  const dirtySteps = new Set<string>();
  const streams = new Map<string, StreamCursor>();
  let terminalSince: number | undefined;
  const waits = new RunWaits();
  let sleepMs = fastMs;
  let firstRound = true;

  while (!opts.signal?.aborted) {
    let activity = false;

    const run = await world.runs.get(runId, { resolveData: 'none' });
    const rec = runRow(run);

    // Events since the cursor (all pages). resolveData 'all' shows inline payloads; whether S3
    // pointers are followed is decided by how the World was opened (--data).
    const fresh: Event[] = [];
    if (firstRound && eventCursor !== undefined) {
      // What the run waits for needs the events before --since too (read, not shown).
      for (const e of (await allEvents(world, runId, undefined, opts.since)).events) waits.apply(e);
    }
    const read = await allEvents(world, runId, eventCursor);
    fresh.push(...read.events);
    eventCursor = read.cursor;
    for (const e of fresh) waits.apply(e);
    if (!isTerminalWorkflowRunStatus(rec.status)) rec.waiting = waits.describe();
    const runKey = `${rec.status}|${rec.startedAt ?? ''}|${rec.completedAt ?? ''}|${rec.waiting?.join(',') ?? ''}`;
    if (runKey !== lastRun) {
      lastRun = runKey;
      activity = true;
      yield rec;
    }
    // Steps: the first round lists them all; later rounds read only the steps whose events are
    // new (at most MAX_STEP_READS per round, the rest next round), so a round costs what changed,
    // never the size of the run.
    let changed: Step[] = [];
    if (firstRound) {
      let cursor: string | undefined;
      do {
        const page = await world.steps.list({
          runId,
          pagination: { cursor, limit: 1000, sortOrder: 'asc' },
          resolveData: 'none',
        });
        changed.push(...page.data);
        cursor = page.hasMore ? (page.cursor ?? undefined) : undefined;
      } while (cursor);
    } else {
      for (const e of fresh) if (e.eventType.startsWith('step_') && e.correlationId) dirtySteps.add(e.correlationId);
      const ids = [...take(dirtySteps, MAX_STEP_READS)];
      const got = await Promise.all(
        ids.map((id) => world.steps.get(runId, id, { resolveData: 'none' }).catch(() => undefined)),
      );
      changed = got.filter((s) => s !== undefined) as Step[];
      if (dirtySteps.size > 0) activity = true;
    }
    for (const s of changed) stepNames.set(s.stepId, s.stepName);
    const stepRecords = changed.map(stepRow).filter((s) => {
      const key = `${s.status}|${s.attempt}|${s.completedAt ?? ''}`;
      if (stepSeen.get(s.stepId) === key) return false;
      stepSeen.set(s.stepId, key);
      return true;
    });
    for (const e of fresh) {
      if (e.eventType === 'step_created' && e.correlationId) {
        const name = (e as { eventData?: { stepName?: string } }).eventData?.stepName;
        if (name) stepNames.set(e.correlationId, name);
      }
      activity = true;
      yield eventRow(e, stepNames);
    }
    for (const s of stepRecords) {
      activity = true;
      yield s;
    }

    // Streams: discover new ones, then page each open one from its cursor.
    const names = await world.streams.list(runId);
    for (const name of names) {
      if (streams.has(name) || (opts.streams && !opts.streams.includes(name))) continue;
      streams.set(name, { done: false });
      activity = true;
      yield { kind: 'stream', runId, stream: name, done: false };
    }
    for (const [name, st] of streams) {
      if (st.done) continue;
      for (;;) {
        const page = await world.streams.getChunks(runId, name, { cursor: st.cursor, limit: 1000 });
        for (const c of page.data) {
          activity = true;
          yield chunkRow(runId, name, c.index, c.data);
        }
        if (page.cursor) st.cursor = page.cursor;
        if (page.done) {
          st.done = true;
          activity = true;
          yield { kind: 'stream', runId, stream: name, done: true };
          break;
        }
        if (!page.hasMore) break;
      }
    }
    firstRound = false;

    if (!opts.follow) return;
    if (isTerminalWorkflowRunStatus(rec.status)) {
      const open = [...streams].filter(([, s]) => !s.done).map(([n]) => n);
      if (open.length === 0) return;
      terminalSince ??= Date.now();
      if (Date.now() - terminalSince >= graceMs) {
        opts.onNotice?.(
          `the run is ${rec.status} but stream${open.length === 1 ? '' : 's'} ${open.join(', ')} never closed; stopped waiting after ${graceMs} ms`,
        );
        return;
      }
    }
    sleepMs = activity ? fastMs : Math.min(idleMaxMs, sleepMs * 2);
    await sleep(sleepMs, opts.signal);
  }
}

/** Events of a run after `cursor` (all pages), stopping before slot `before` when given. */
async function allEvents(
  world: TailWorld,
  runId: string,
  cursor: string | undefined,
  before?: number,
): Promise<{ events: Event[]; cursor: string | undefined }> {
  const events: Event[] = [];
  for (;;) {
    const page = await world.events.list({ runId, pagination: { cursor, limit: 1000 }, resolveData: 'all' });
    for (const e of page.data) {
      if (before !== undefined && (eventIdToSlot(e.eventId) ?? 0) >= before) return { events, cursor };
      events.push(e);
    }
    if (page.cursor) cursor = page.cursor;
    if (!page.hasMore || page.data.length === 0) return { events, cursor };
  }
}

/** Steps re-read per follow round; more changes wait for the next round. */
export const MAX_STEP_READS = 25;

/** Remove and return up to `n` members of `set`, oldest first. */
function* take<T>(set: Set<T>, n: number): Generator<T> {
  for (const v of set) {
    if (n-- <= 0) return;
    set.delete(v);
    yield v;
  }
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
