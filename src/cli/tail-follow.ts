/**
 * The follow loop of `tail`: reads a run's records (src/cli/tail-rows.ts) from the World, once
 * (a snapshot) or until the run is terminal and its streams are closed.
 *
 * The loop only uses the public World API (runs/events/steps/streams), so it shows exactly what
 * the runtime and `wf inspect` see. It polls: the event log is append-only with a slot cursor, and
 * stream chunks are paged with their own cursors, so each round reads only what is new.
 */
import { type Event, eventIdToSlot, isTerminalWorkflowRunStatus, type Step, type World } from '@workflow/world';
import { sleep } from '../aws/sleep.js';
import { encodeEventCursor } from '../storage/index.js';
import { RunWaits } from './run-waits.js';
import { chunkRow, eventRow, runRow, stepRow, type TailRow } from './tail-rows.js';

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
  const streams = new Map<string, { cursor?: string; done: boolean }>();
  let terminalSince: number | undefined;
  const waits = new RunWaits();
  let sleepMs = fastMs;
  let firstRound = true;

  while (!opts.signal?.aborted) {
    let activity = false;

    const rec = runRow(await world.runs.get(runId, { resolveData: 'none' }));

    // Events since the cursor (all pages). resolveData 'all' shows inline payloads; whether S3
    // pointers are followed is decided by how the World was opened (--data).
    if (firstRound && eventCursor !== undefined) {
      // What the run waits for needs the events before --since too (read, not shown).
      for (const e of (await allEvents(world, runId, undefined, opts.since)).events) waits.apply(e);
    }
    const read = await allEvents(world, runId, eventCursor);
    const fresh = read.events;
    eventCursor = read.cursor;
    for (const e of fresh) waits.apply(e);
    if (!isTerminalWorkflowRunStatus(rec.status)) rec.waiting = waits.describe();
    const runKey = `${rec.status}|${rec.startedAt ?? ''}|${rec.completedAt ?? ''}|${rec.waiting?.join(',') ?? ''}`;
    if (runKey !== lastRun) {
      lastRun = runKey;
      activity = true;
      yield rec;
    }
    // Steps: the first round lists them all; later rounds read only the steps whose events are new
    // (at most MAX_STEP_READS per round, the rest next round): a round costs what changed.
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
    for (const name of await world.streams.list(runId)) {
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
