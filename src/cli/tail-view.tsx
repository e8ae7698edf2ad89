/**
 * The live `tail` view (ink): Header, EventLog, StepsTable and Streams, rendered from a
 * {@link TailState} that {@link reduceTail} folds records into. The view is a pure function of
 * (state, now, size), so tests render it with ink-testing-library from real records.
 */
import { Box, Text } from 'ink';
import { formatClock, formatDuration, plural, shortName, truncate } from './shared/format.js';
import { Header, Label, STATUS_COLOR, type Style, waitingLines } from './tail-header.js';
import { type ChunkRow, chunkLines, type EventRow, type RunRow, type StepRow, type TailRow } from './tail-rows.js';

export interface StreamState {
  name: string;
  done: boolean;
  chunks: ChunkRow[];
  /** The chunks' display lines, appended as chunks arrive (the view never re-splits them). */
  lines: string[];
}

export interface TailState {
  run?: RunRow;
  events: EventRow[];
  /** By step id, in first-seen order. */
  steps: Map<string, StepRow>;
  streams: Map<string, StreamState>;
  /** The follow loop has ended. */
  finished: boolean;
  notice?: string;
}

export function emptyTailState(): TailState {
  return { events: [], steps: new Map(), streams: new Map(), finished: false };
}

function streamOf(state: TailState, name: string): StreamState {
  let cur = state.streams.get(name);
  if (!cur) {
    cur = { name, done: false, chunks: [], lines: [] };
    state.streams.set(name, cur);
  }
  return cur;
}

/**
 * Fold one record into the state in O(1) (plus the chunk's own lines): the lists, maps and stream
 * states are owned by the state and appended in place, and a new top-level object is returned so
 * React sees a change: following n records is O(n), never O(n^2). The state passed in is consumed.
 */
export function reduceTail(state: TailState, rec: TailRow): TailState {
  switch (rec.kind) {
    case 'run':
      return { ...state, run: rec };
    case 'event':
      state.events.push(rec);
      return { ...state };
    case 'step':
      state.steps.set(rec.stepId, rec);
      return { ...state };
    case 'stream': {
      const cur = streamOf(state, rec.stream);
      cur.done = rec.done || cur.done;
      return { ...state };
    }
    case 'chunk': {
      const cur = streamOf(state, rec.stream);
      cur.chunks.push(rec);
      for (const line of chunkLines(rec)) cur.lines.push(line);
      return { ...state };
    }
  }
}

/**
 * Event log columns for a terminal `width` columns wide. Fixed: slot, event type (the longest,
 * `step_completed`/`wait_completed`, is 14), time of day (`12:34:56.789`, 12). Correlation ids
 * from the runtime are `step_`/`wait_`/`hook_` + a 26-character ULID (31 columns) and get their
 * full width when there is room; on a narrow terminal the id (cut from the left: its tail is the
 * unique part) and the step name give way first, so the data keeps at least DATA_MIN columns.
 */
export function eventColumns(width: number) {
  const fixed = { slot: 5, type: 14, time: 12 };
  const gaps = 5;
  const rest = width - fixed.slot - fixed.type - fixed.time - gaps;
  let corr = 31;
  let step = 18;
  let deficit = DATA_MIN - (rest - corr - step);
  const give = (have: number, min: number) => {
    const d = Math.max(0, Math.min(deficit, have - min));
    deficit -= d;
    return have - d;
  };
  corr = give(corr, 12);
  step = give(step, 10);
  return { ...fixed, corr, step, data: Math.max(1, rest - corr - step) };
}
const DATA_MIN = 20;

function EventLog({ events, max, width, color }: { events: EventRow[]; max: number; width: number } & Style) {
  const shown = events.length > max ? events.slice(events.length - max) : events;
  const hidden = events.length - shown.length;
  const COL = eventColumns(width);
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">
        {'#'.padStart(COL.slot)} {'event'.padEnd(COL.type)} {'correlation id'.slice(0, COL.corr).padEnd(COL.corr)}{' '}
        {'step'.padEnd(COL.step)} {'time'.padEnd(COL.time)} data
      </Text>
      {hidden > 0 ? (
        <Label color={color}>{`${''.padStart(COL.slot)} … ${plural(hidden, 'earlier event')}`}</Label>
      ) : null}
      {events.length === 0 ? <Label color={color}>{''.padStart(COL.slot)} (no events yet)</Label> : null}
      {shown.map((e) => (
        <Text key={e.slot} wrap="truncate">
          {String(e.slot).padStart(COL.slot)}{' '}
          <Text color={color ? eventColor(e.eventType) : undefined}>{cell(e.eventType, COL.type)}</Text>{' '}
          {cell(e.correlationId ?? '-', COL.corr)} {nameCell(e.stepName ? shortName(e.stepName) : '-', COL.step)}{' '}
          {cell(formatClock(e.createdAt), COL.time)} {truncate(e.preview, COL.data)}
        </Text>
      ))}
    </Box>
  );
}

function eventColor(type: string): string | undefined {
  if (/failed|conflict/.test(type)) return 'red';
  if (/retrying|cancelled/.test(type)) return 'yellow';
  if (/completed/.test(type)) return 'green';
  if (type.startsWith('run_')) return 'cyan';
  return undefined;
}

/** Pad or cut to exactly `n` columns (cut from the left for ids: their tail is the unique part). */
function cell(s: string, n: number): string {
  if (s.length <= n) return s.padEnd(n);
  return `…${s.slice(s.length - n + 1)}`;
}

/** Pad or cut to exactly `n` columns, keeping the start (names read from the left). */
function nameCell(s: string, n: number): string {
  return s.length <= n ? s.padEnd(n) : `${s.slice(0, n - 1)}…`;
}

function StepsTable({ steps, max, width, color }: { steps: StepRow[]; max: number; width: number } & Style) {
  if (steps.length === 0) return null;
  const shown = steps.length > max ? steps.slice(steps.length - max) : steps;
  // The step id (31 columns) is cut from the left on a narrow terminal, as in the event log.
  const id = width >= 100 ? 31 : 12;
  const w = { name: Math.min(28, Math.max(4, ...shown.map((s) => shortName(s.stepName).length))), id, status: 10 };
  const errorWidth = Math.max(10, width - (w.name + w.id + w.status + 7 + 8 + 5));
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">
        {'step'.padEnd(w.name)} {'id'.padEnd(w.id)} {'status'.padEnd(w.status)} {'attempt'.padEnd(7)} duration
      </Text>
      {steps.length > shown.length ? <Label color={color}>… {steps.length - shown.length} earlier steps</Label> : null}
      {shown.map((s) => (
        <Text key={s.stepId} wrap="truncate">
          {nameCell(shortName(s.stepName), w.name)} {cell(s.stepId, w.id)}{' '}
          <Text color={color ? STATUS_COLOR[s.status] : undefined}>{s.status.padEnd(w.status)}</Text>{' '}
          {String(s.attempt).padEnd(7)} {formatDuration(s.durationMs).padEnd(8)}
          {s.error ? ` ${truncate(s.error, errorWidth)}` : ''}
        </Text>
      ))}
    </Box>
  );
}

export function Streams({ streams, maxLines, color }: { streams: StreamState[]; maxLines: number[] } & Style) {
  if (streams.length === 0) return null;
  return (
    <Box flexDirection="column">
      {streams.map((s, at) => {
        const max = maxLines[at] ?? Number.POSITIVE_INFINITY;
        // The newest lines: a stream's end is what is happening now.
        const shown = s.lines.length > max ? s.lines.slice(s.lines.length - max) : s.lines;
        return (
          <Box key={s.name} flexDirection="column">
            <Text wrap="truncate">
              <Text bold>stream {s.name}</Text>
              <Label color={color}>
                {' '}
                ({s.chunks.length} chunk{s.chunks.length === 1 ? '' : 's'}, {s.done ? 'closed' : 'open'})
              </Label>
            </Text>
            {s.lines.length > shown.length ? (
              <Label color={color}> … {s.lines.length - shown.length} earlier lines</Label>
            ) : null}
            {shown.map((l, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: lines have no identity beyond their position
              <Text key={i} wrap="truncate">
                {'  '}
                {l}
              </Text>
            ))}
          </Box>
        );
      })}
    </Box>
  );
}

/** How many rows of each part the view shows (see {@link tailLayout}). */
export interface TailLayout {
  events: number;
  steps: number;
  /** Per stream, in the state's order. */
  streamLines: number[];
}

/** Lines a list of `n` items takes when `shown` of them are shown (plus "… earlier" when cut). */
const listLines = (n: number, shown: number) => shown + (shown < n ? 1 : 0);

/**
 * Rows per part for a view at most `rows - 1` lines tall (the cursor's line stays free, so the
 * terminal never scrolls and ink can redraw in place), keeping the newest of everything: the last
 * events, the last steps, each stream's last lines. Every rendered line is one terminal line (they
 * are cut, never wrapped), so counting lines is exact. While it does not fit, the event log gives
 * way down to 3 rows, then the steps down to 2, the streams down to 2 lines each, then all down to
 * 1. `rows: Infinity` shows everything.
 */
export function tailLayout(
  state: Pick<TailState, 'run' | 'events' | 'steps' | 'streams' | 'notice' | 'finished'>,
  rows: number,
  follow: boolean,
  columns = Number.POSITIVE_INFINITY,
): TailLayout {
  const nEvents = state.events.length;
  const nSteps = state.steps.size;
  const nLines = [...state.streams.values()].map((s) => s.lines.length);
  if (!Number.isFinite(rows)) return { events: nEvents, steps: nSteps, streamLines: nLines };
  let steps = Math.min(nSteps, 8);
  const lines = nLines.map((n) => Math.min(n, 6));
  const fixed =
    2 + // header
    waitingLines(state.run, columns).length +
    (state.run?.error ? 1 : 0) +
    2 + // margin + event log heading
    (nEvents === 0 ? 1 : 0) + // "(no events yet)"
    (nSteps > 0 ? 2 : 0) + // margin + steps heading
    (nLines.length > 0 ? 1 + nLines.length : 0) + // margin + one title per stream
    (state.notice ? 1 : 0) +
    (follow && !state.finished ? 1 : 0);
  const others = () =>
    fixed + (nSteps > 0 ? listLines(nSteps, steps) : 0) + lines.reduce((t, l, i) => t + listLines(nLines[i], l), 0);
  /** Event rows that fit in `room` lines (one goes to "… earlier" when not all fit). */
  const eventsIn = (room: number) => (nEvents === 0 ? 0 : nEvents <= room ? nEvents : Math.max(0, room - 1));
  const budget = rows - 1;
  const eventFloor = (min: number) => Math.min(nEvents, min);
  for (const [stepMin, lineMin, eventMin] of [
    [2, 2, 3],
    [1, 1, 1],
    [0, 0, 1],
  ]) {
    for (;;) {
      if (eventsIn(budget - others()) >= eventFloor(eventMin)) break;
      if (steps > Math.min(nSteps, stepMin)) {
        steps--;
        continue;
      }
      const widest = lines.reduce((best, l, i) => (l > (lines[best] ?? -1) ? i : best), -1);
      if (widest >= 0 && lines[widest] > Math.min(nLines[widest], lineMin)) {
        lines[widest]--;
        continue;
      }
      break;
    }
    if (eventsIn(budget - others()) >= eventFloor(eventMin)) break;
  }
  return { events: Math.max(eventsIn(budget - others()), 0), steps, streamLines: lines };
}

export interface TailViewProps {
  runId: string;
  state: TailState;
  /** Clock for a running run's duration. */
  now: number;
  /** Terminal size; `rows: Infinity` shows everything (snapshots). */
  columns?: number;
  rows?: number;
  color?: boolean;
  /** false for a snapshot: no "following" hint. */
  follow?: boolean;
}

export function TailView({
  runId,
  state,
  now,
  columns = 120,
  rows = Number.POSITIVE_INFINITY,
  color = false,
  follow = true,
}: TailViewProps) {
  const steps = [...state.steps.values()];
  const streams = [...state.streams.values()];
  const layout = tailLayout(state, rows, follow, columns);
  return (
    <Box flexDirection="column" width={columns}>
      <Header run={state.run} runId={runId} now={now} color={color} columns={columns} />
      <Box marginTop={1}>
        <EventLog events={state.events} max={layout.events} width={columns} color={color} />
      </Box>
      {steps.length > 0 ? (
        <Box marginTop={1}>
          <StepsTable steps={steps} max={layout.steps} width={columns} color={color} />
        </Box>
      ) : null}
      {streams.length > 0 ? (
        <Box marginTop={1}>
          <Streams streams={streams} maxLines={layout.streamLines} color={color} />
        </Box>
      ) : null}
      {state.notice ? (
        <Text wrap="truncate" color={color ? 'yellow' : undefined}>
          note: {state.notice}
        </Text>
      ) : null}
      {follow && !state.finished ? <Label color={color}>following… (Ctrl-C to stop)</Label> : null}
    </Box>
  );
}
