/**
 * The live `tail` view (ink): Header, EventLog, StepsTable and Streams, rendered from a
 * {@link TailState} that {@link reduceTail} folds records into. The view is a pure function of
 * (state, now, size), so tests render it with ink-testing-library from real records.
 */
import { Box, Text } from 'ink';
import type { ReactNode } from 'react';
import { formatClock, formatDuration, formatTime, shortName, truncate } from './format.js';
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
 * Fold one record into the state in O(1) (plus the chunk's own lines): the lists, maps and
 * stream states are owned by the state and appended in place, and a new top-level object is
 * returned so React sees a change. Following a run of n records is O(n), never O(n^2). The state
 * passed in is consumed: keep only the returned one.
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

const STATUS_COLOR: Record<string, string> = {
  pending: 'yellow',
  running: 'cyan',
  completed: 'green',
  failed: 'red',
  cancelled: 'magenta',
};

interface Style {
  color: boolean;
}

function Status({ status, color }: { status: string } & Style) {
  return (
    <Text bold color={color ? STATUS_COLOR[status] : undefined}>
      {status}
    </Text>
  );
}

function Label({ children, color }: { children: ReactNode } & Style) {
  return <Text dimColor={color}>{children}</Text>;
}

export function Header({ run, runId, now, color }: { run?: RunRow; runId: string; now: number } & Style) {
  if (!run) return <Text>run {runId}: loading…</Text>;
  const running = run.status === 'running' || run.status === 'pending';
  const duration =
    run.startedAt === undefined
      ? undefined
      : run.completedAt !== undefined
        ? Date.parse(run.completedAt) - Date.parse(run.startedAt)
        : running
          ? now - Date.parse(run.startedAt)
          : run.durationMs;
  return (
    <Box flexDirection="column">
      <Text>
        <Text bold>run {run.runId}</Text>
        <Label color={color}> · workflow </Label>
        <Text>{run.workflowName}</Text>
      </Text>
      <Text>
        <Label color={color}>status </Label>
        <Status status={run.status} color={color} />
        <Label color={color}> · started </Label>
        <Text>{formatTime(run.startedAt ?? run.createdAt)}</Text>
        <Label color={color}> · duration </Label>
        <Text>{formatDuration(duration)}</Text>
      </Text>
      {run.error ? <Text color={color ? 'red' : undefined}>error: {truncate(run.error, 200)}</Text> : null}
    </Box>
  );
}

// Correlation ids from the runtime are `step_`/`wait_`/`hook_` + a 26-character ULID: 31 columns.
const COL = { slot: 5, type: 16, corr: 31, step: 18, time: 13 };

export function EventLog({ events, max, width, color }: { events: EventRow[]; max: number; width: number } & Style) {
  const shown = events.length > max ? events.slice(events.length - max) : events;
  const hidden = events.length - shown.length;
  const previewWidth = Math.max(10, width - (COL.slot + COL.type + COL.corr + COL.step + COL.time + 5));
  return (
    <Box flexDirection="column">
      <Text bold>
        {'#'.padStart(COL.slot)} {'event'.padEnd(COL.type)} {'correlation id'.padEnd(COL.corr)}{' '}
        {'step'.padEnd(COL.step)} {'time'.padEnd(COL.time)} data
      </Text>
      {hidden > 0 ? (
        <Label color={color}>{`${''.padStart(COL.slot)} … ${hidden} earlier event${hidden === 1 ? '' : 's'}`}</Label>
      ) : null}
      {shown.length === 0 ? <Label color={color}>{''.padStart(COL.slot)} (no events yet)</Label> : null}
      {shown.map((e) => (
        <Text key={e.slot} wrap="truncate">
          {String(e.slot).padStart(COL.slot)}{' '}
          <Text color={color ? eventColor(e.eventType) : undefined}>{cell(e.eventType, COL.type)}</Text>{' '}
          {cell(e.correlationId ?? '-', COL.corr)} {cell(e.stepName ? shortName(e.stepName) : '-', COL.step)}{' '}
          {cell(formatClock(e.createdAt), COL.time)} {truncate(e.preview, previewWidth)}
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

export function StepsTable({ steps, max, color }: { steps: StepRow[]; max: number } & Style) {
  if (steps.length === 0) return null;
  const shown = steps.length > max ? steps.slice(steps.length - max) : steps;
  const w = { name: Math.min(28, Math.max(4, ...shown.map((s) => shortName(s.stepName).length))), id: 31, status: 10 };
  return (
    <Box flexDirection="column">
      <Text bold>
        {'step'.padEnd(w.name)} {'id'.padEnd(w.id)} {'status'.padEnd(w.status)} {'attempt'.padEnd(7)} duration
      </Text>
      {steps.length > shown.length ? <Label color={color}>… {steps.length - shown.length} earlier steps</Label> : null}
      {shown.map((s) => (
        <Text key={s.stepId} wrap="truncate">
          {cell(shortName(s.stepName), w.name)} {cell(s.stepId, w.id)}{' '}
          <Text color={color ? STATUS_COLOR[s.status] : undefined}>{s.status.padEnd(w.status)}</Text>{' '}
          {String(s.attempt).padEnd(7)} {formatDuration(s.durationMs)}
          {s.error ? ` ${truncate(s.error, 60)}` : ''}
        </Text>
      ))}
    </Box>
  );
}

export function Streams({ streams, maxLines, color }: { streams: StreamState[]; maxLines: number } & Style) {
  if (streams.length === 0) return null;
  return (
    <Box flexDirection="column">
      {streams.map((s) => {
        const lines = s.lines;
        const shown = lines.length > maxLines ? lines.slice(lines.length - maxLines) : lines;
        return (
          <Box key={s.name} flexDirection="column">
            <Text>
              <Text bold>stream {s.name}</Text>
              <Label color={color}>
                {' '}
                ({s.chunks.length} chunk{s.chunks.length === 1 ? '' : 's'}, {s.done ? 'closed' : 'open'})
              </Label>
            </Text>
            {lines.length > shown.length ? (
              <Label color={color}> … {lines.length - shown.length} earlier lines</Label>
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
  const finite = Number.isFinite(rows);
  const maxSteps = finite ? 8 : Number.POSITIVE_INFINITY;
  const maxLines = finite ? 6 : Number.POSITIVE_INFINITY;
  // What is left of the screen after the header, tables, streams and spacing goes to the event log.
  const reserved =
    4 +
    (steps.length ? Math.min(steps.length, maxSteps) + 2 : 0) +
    streams.reduce((n, s) => n + 2 + Math.min(maxLines, s.chunks.length * 2), 0);
  const maxEvents = finite ? Math.max(5, rows - reserved - 3) : Number.POSITIVE_INFINITY;
  return (
    <Box flexDirection="column" width={columns}>
      <Header run={state.run} runId={runId} now={now} color={color} />
      <Box marginTop={1}>
        <EventLog events={state.events} max={maxEvents} width={columns} color={color} />
      </Box>
      {steps.length > 0 ? (
        <Box marginTop={1}>
          <StepsTable steps={steps} max={maxSteps} color={color} />
        </Box>
      ) : null}
      {streams.length > 0 ? (
        <Box marginTop={1}>
          <Streams streams={streams} maxLines={maxLines} color={color} />
        </Box>
      ) : null}
      {state.notice ? <Text color={color ? 'yellow' : undefined}>note: {state.notice}</Text> : null}
      {follow && !state.finished ? <Label color={color}>following… (Ctrl-C to stop)</Label> : null}
    </Box>
  );
}
