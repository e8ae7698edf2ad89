/**
 * The header of the live `tail` view (src/cli/tail-view.tsx): the run and its workflow, its status,
 * start and duration, what a running run waits for (on lines of its own, so the hook token `resume`
 * needs is never cut while it fits a line), and a failed run's error. Every line fits the
 * terminal's width, so the view's line count (its layout) holds.
 */
import { Box, Text } from 'ink';
import type { ReactNode } from 'react';
import { formatDuration, formatTime, truncate } from './shared/format.js';
import { displayWidth, wrapText } from './shared/terminal-text.js';
import type { RunRow } from './tail-rows.js';

export const STATUS_COLOR: Record<string, string> = {
  pending: 'yellow',
  running: 'cyan',
  completed: 'green',
  failed: 'red',
  cancelled: 'magenta',
};

export interface Style {
  color: boolean;
}

export function Label({ children, color }: { children: ReactNode } & Style) {
  return <Text dimColor={color}>{children}</Text>;
}

/** Lines "waiting for" takes at most: the hook token `resume` needs is on the first. */
const WAITING_LINES = 3;

/**
 * What a pending or running run waits for, on lines of its own below the status line: one item
 * (`hook <token>`, `step <name> (attempt 2)`, ...) is never split over lines while it fits one, so
 * a hook token reads whole; at most WAITING_LINES lines (the last ends in `…` when there is more).
 */
export function waitingLines(run: RunRow | undefined, columns: number): string[] {
  const running = run?.status === 'running' || run?.status === 'pending';
  if (!run || !running || !run.waiting || run.waiting.length === 0) return [];
  const items = run.waiting.map((w, i, all) => (i < all.length - 1 ? `${w};` : w));
  const lines: string[] = [];
  let line = 'waiting for';
  for (const item of items) {
    if (displayWidth(line) + 1 + displayWidth(item) <= columns) {
      line = line ? `${line} ${item}` : item;
      continue;
    }
    lines.push(line);
    const wrapped = wrapText(item, columns);
    lines.push(...wrapped.slice(0, -1));
    line = wrapped[wrapped.length - 1] ?? '';
  }
  lines.push(line);
  if (lines.length <= WAITING_LINES) return lines;
  const shown = lines.slice(0, WAITING_LINES);
  shown[WAITING_LINES - 1] = `${shown[WAITING_LINES - 1].slice(0, Math.max(0, columns - 2))} …`;
  return shown;
}

export function Header({
  run,
  runId,
  now,
  color,
  columns = Number.POSITIVE_INFINITY,
}: { run?: RunRow; runId: string; now: number; columns?: number } & Style) {
  if (!run) return <Text wrap="truncate">run {runId}: loading…</Text>;
  const running = run.status === 'running' || run.status === 'pending';
  const duration =
    run.startedAt === undefined
      ? undefined
      : run.completedAt !== undefined
        ? Date.parse(run.completedAt) - Date.parse(run.startedAt)
        : running
          ? now - Date.parse(run.startedAt)
          : run.durationMs;
  const waiting = waitingLines(run, columns);
  // Every line is cut to the terminal width (never wrapped), so the layout's line count holds.
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        <Text bold>run {run.runId}</Text>
        <Label color={color}> · workflow </Label>
        <Text>{run.workflowName}</Text>
        {run.deploymentId ? (
          <>
            <Label color={color}> · deployment </Label>
            <Text>{run.deploymentId}</Text>
          </>
        ) : null}
      </Text>
      <Text wrap="truncate">
        <Label color={color}>status </Label>
        <Text bold color={color ? STATUS_COLOR[run.status] : undefined}>
          {run.status}
        </Text>
        <Label color={color}> · started </Label>
        <Text>{formatTime(run.startedAt ?? run.createdAt)}</Text>
        <Label color={color}> · duration </Label>
        <Text>{formatDuration(duration)}</Text>
      </Text>
      {waiting.map((line, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: wrapped lines have no identity beyond their position
        <Text key={i} wrap="truncate">
          {i === 0 ? (
            <>
              <Label color={color}>waiting for </Label>
              {line.slice('waiting for '.length)}
            </>
          ) : (
            line
          )}
        </Text>
      ))}
      {run.error ? (
        <Text wrap="truncate" color={color ? 'red' : undefined}>
          error: {truncate(run.error, 200)}
        </Text>
      ) : null}
    </Box>
  );
}
