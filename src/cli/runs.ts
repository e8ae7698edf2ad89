/**
 * `eve-world-aws runs`: the most recent runs, newest first, as a table or JSON.
 *
 * Reads through `runs.list` with `resolveData: 'none'` (never touches S3): by workflow name it is
 * one GSI partition, otherwise the global by-time partition; a status filter is applied by the
 * World (as `wf inspect runs --status` does).
 */
import type { WorkflowRun } from '@workflow/world';
import { Command, InvalidArgumentError } from 'commander';
import { formatDuration, formatTime, parsePositiveInt } from './format.js';
import { colorEnabled, palette, printJson, renderTable } from './output.js';
import { runRow } from './tail-rows.js';
import { withWorld } from './world.js';

export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
type RunStatus = (typeof RUN_STATUSES)[number];

interface RunsOptions {
  status?: RunStatus[];
  workflow?: string;
  limit: number;
  json?: boolean;
}

/** `--status failed,cancelled` (and repeatable) -> validated list. */
function parseStatus(value: string, previous: RunStatus[] | undefined): RunStatus[] {
  const out = [...(previous ?? [])];
  for (const s of value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    if (!(RUN_STATUSES as readonly string[]).includes(s))
      throw new InvalidArgumentError(`must be one of ${RUN_STATUSES.join(', ')} (got "${s}").`);
    if (!out.includes(s as RunStatus)) out.push(s as RunStatus);
  }
  return out;
}

/** Up to `limit` runs, newest first, paging the World as needed. */
export async function listRuns(
  runs: { list: (p: object) => Promise<{ data: WorkflowRun[]; cursor: string | null; hasMore: boolean }> },
  opts: { status?: RunStatus[]; workflow?: string; limit: number },
): Promise<{ runs: WorkflowRun[]; hasMore: boolean }> {
  const out: WorkflowRun[] = [];
  let cursor: string | undefined;
  let hasMore = false;
  do {
    const page = await runs.list({
      workflowName: opts.workflow,
      status: opts.status && opts.status.length > 0 ? opts.status : undefined,
      resolveData: 'none',
      pagination: { limit: Math.min(1000, opts.limit - out.length), cursor, sortOrder: 'desc' },
    });
    out.push(...page.data);
    hasMore = page.hasMore;
    cursor = page.cursor ?? undefined;
  } while (hasMore && cursor && out.length < opts.limit);
  return { runs: out.slice(0, opts.limit), hasMore: hasMore || out.length > opts.limit };
}

const STATUS_PAINT: Record<RunStatus, keyof ReturnType<typeof palette>> = {
  pending: 'yellow',
  running: 'cyan',
  completed: 'green',
  failed: 'red',
  cancelled: 'yellow',
};

export function renderRuns(runs: WorkflowRun[], hasMore: boolean, color = colorEnabled(), now = Date.now()): string {
  if (runs.length === 0) return 'No runs found.\n';
  const p = palette(color);
  const rows = runs.map((r) => {
    const rec = runRow(r, now);
    return [
      rec.runId,
      rec.workflowName,
      p[STATUS_PAINT[rec.status]](rec.status),
      formatTime(rec.startedAt ?? rec.createdAt),
      formatDuration(rec.durationMs),
    ];
  });
  const more = hasMore ? `\n${p.dim(`More runs exist; raise --limit (showing ${runs.length}).`)}` : '';
  return `${renderTable(['Run', 'Workflow', 'Status', 'Started', 'Duration'], rows, color)}${more}\n`;
}

export function runsCommand(): Command {
  return new Command('runs')
    .description('List recent runs (newest first): id, workflow, status, started, duration')
    .option(
      '--status <status>',
      `only runs with this status: ${RUN_STATUSES.join(', ')} (comma-separated or repeated)`,
      parseStatus,
    )
    .option(
      '--workflow <name>',
      'only runs of this workflow (the workflow name the runtime records, e.g. workflow//./src/x//fn)',
    )
    .option('--limit <n>', 'how many runs to show', parsePositiveInt, 20)
    .option('--json', 'print {runs: [...], hasMore} as JSON')
    .addHelpText(
      'after',
      `
"Started" is when the run started executing (its creation time while it is pending); "Duration"
runs until now for runs that are still going.

Exit codes: 0 listed (also when nothing matches); 1 AWS error; 2 bad usage or configuration.`,
    )
    .action(async (opts: RunsOptions) => {
      await withWorld({}, async (w) => {
        const { runs, hasMore } = await listRuns(w.world.runs as never, opts);
        if (opts.json) {
          const now = Date.now();
          printJson({
            runs: runs.map((r) => {
              const { kind: _kind, ...rest } = runRow(r, now);
              return rest;
            }),
            hasMore,
          });
        } else {
          process.stdout.write(renderRuns(runs, hasMore));
        }
      });
    });
}
