/**
 * `eve-world-aws runs`: the most recent runs, newest first, as a table or JSON.
 *
 * Reads `runs.list` with `resolveData: 'none'` (no S3): by workflow name one GSI partition, else
 * the global by-time one; the World filters by status (as `wf inspect runs --status` does).
 */
import type { WorkflowRun } from '@workflow/world';
import { Command, InvalidArgumentError } from 'commander';
import { LEGACY_DEPLOYMENT_ID } from '../deployment/id.js';
import { formatDuration, formatTime, parsePositiveInt, shortName } from './shared/format.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { colorEnabled, palette, printJson, renderTable } from './shared/output.js';
import { withWorld } from './shared/world.js';
import { runRow } from './tail-rows.js';
import { loadManifest, type WorkflowManifest } from './workflow-manifest.js';
import { describeWorkflow, isFullWorkflowName, nearWorkflows, workflowMatches } from './workflow-names.js';

const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
type RunStatus = (typeof RUN_STATUSES)[number];

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

/** Runs read per page while filtering by a short workflow name. */
const SCAN_PAGE = 1000;
/** Newest runs read at most when filtering by a short workflow name (the full id is indexed). */
export const SCAN_LIMIT = 10_000;

type RunLister = {
  list: (p: object) => Promise<{ data: WorkflowRun[]; cursor: string | null; hasMore: boolean }>;
};

/**
 * Up to `limit` runs, newest first, paging the World as needed. A full workflow id is one indexed
 * listing; a short name (`order`) filters the newest SCAN_LIMIT runs by time (`scanned` says how
 * many were read, `scanCapped` that older ones were not).
 */
export async function listRuns(
  runs: RunLister,
  opts: { status?: RunStatus[]; workflow?: string; limit: number },
): Promise<{ runs: WorkflowRun[]; hasMore: boolean; scanned?: number; scanCapped?: boolean; names?: string[] }> {
  const status = opts.status && opts.status.length > 0 ? opts.status : undefined;
  const query = opts.workflow;
  const byShortName = query !== undefined && !isFullWorkflowName(query);
  const out: WorkflowRun[] = [];
  let cursor: string | undefined;
  let hasMore = false;
  let scanned = 0;
  // By short name: every workflow the scanned runs were of, for the near names when none matches.
  const names = new Set<string>();
  do {
    const page = await runs.list({
      workflowName: byShortName ? undefined : query,
      status,
      resolveData: 'none',
      pagination: {
        limit: byShortName ? SCAN_PAGE : Math.min(1000, opts.limit - out.length),
        cursor,
        sortOrder: 'desc',
      },
    });
    scanned += page.data.length;
    if (byShortName) for (const r of page.data) names.add(r.workflowName);
    out.push(...(byShortName ? page.data.filter((r) => workflowMatches(r.workflowName, query)) : page.data));
    hasMore = page.hasMore;
    cursor = page.cursor ?? undefined;
  } while (hasMore && cursor && out.length < opts.limit && (!byShortName || scanned < SCAN_LIMIT));
  const more = out.length > opts.limit || (hasMore && (!byShortName || out.length >= opts.limit));
  return {
    runs: out.slice(0, opts.limit),
    hasMore: more,
    ...(byShortName ? { scanned, scanCapped: hasMore && out.length < opts.limit, names: [...names] } : {}),
  };
}

/**
 * What `runs --workflow <query>` adds on stderr when no run matched and the name is not one of
 * the app's workflows (`manifest`): the near names among those the scanned runs (`seen`) and the
 * manifest know, or that names match exactly. Undefined when there is nothing to add.
 */
export function workflowHint(
  query: string,
  seen: readonly string[],
  scanned: number | undefined,
  manifest?: WorkflowManifest,
): string | undefined {
  const declared = manifest?.workflows.map((m) => m.workflowId) ?? [];
  if (declared.some((id) => workflowMatches(id, query))) return undefined;
  const near = nearWorkflows(query, [...declared, ...seen]);
  if (near.length > 0)
    return `hint: no workflow is named "${query}"; did you mean ${near.map(describeWorkflow).join(', ')}?`;
  if (isFullWorkflowName(query)) return undefined;
  const where = `among the ${scanned ?? 0} newest runs${manifest ? ` or in ${manifest.path}` : ''}`;
  return `hint: no workflow is named "${query}" ${where}; names match exactly: the export name (order) or the full id (workflow//<file>//<export>)`;
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
  // The Deployment column only when a run is pinned to a real deployment (affinity on somewhere).
  const deployments = runs.some((r) => r.deploymentId !== LEGACY_DEPLOYMENT_ID);
  const rows = runs.map((r) => {
    const rec = runRow(r, now);
    return [
      rec.runId,
      shortName(rec.workflowName),
      p[STATUS_PAINT[rec.status]](rec.status),
      formatTime(rec.startedAt ?? rec.createdAt),
      formatDuration(rec.durationMs),
      ...(deployments ? [rec.deploymentId ?? '-'] : []),
    ];
  });
  const more = hasMore ? `\n${p.dim(`More runs exist; raise --limit (showing ${runs.length}).`)}` : '';
  const head = ['Run', 'Workflow', 'Status', 'Started', 'Duration', ...(deployments ? ['Deployment'] : [])];
  return `${renderTable(head, rows, color)}${more}\n`;
}

const RUNS_HELP: HelpSpec = {
  notes: [
    `--workflow with a full id is one indexed query; with a name it filters the newest ${SCAN_LIMIT} runs (a note on stderr says when older runs were not read: pass the full id, which \`runs --json\` shows).`,
    "Names match exactly; when none does, a hint on stderr lists the near names (of the runs read and of the app's workflow manifest, .well-known/workflow/v1/manifest.json searched from this folder).",
    'The Workflow column shows the name (after the last "//"); --json has the full id. "Started" is when the run started executing (its creation time while it is pending); "Duration" runs until now for runs that are still going.',
  ],
  examples: [
    ['eve-world-aws runs', 'the newest 20'],
    ['eve-world-aws runs --status failed,cancelled --limit 50'],
    ["eve-world-aws runs --workflow order --json | jq -r '.runs[].runId'"],
  ],
  exitCodes: exitCodes('listed (also when nothing matches)', 'an AWS error', CONFIG_ERROR),
};

export function runsCommand(): Command {
  return withHelp(new Command('runs'), RUNS_HELP)
    .description(
      'List recent runs (newest first): id, workflow, status, started, duration (and deployment, with deployment affinity)',
    )
    .option(
      '--status <status>',
      `only runs with this status: ${RUN_STATUSES.join(', ')} (comma-separated or repeated)`,
      parseStatus,
    )
    .option(
      '--workflow <name>',
      'only runs of this workflow: its name (order) or the full id the runtime records (workflow//./workflows/order//order)',
    )
    .option('--limit <n>', 'how many runs to show', parsePositiveInt, 20)
    .option('--json', 'print {runs: [...], hasMore} as JSON')
    .action(async (opts: { status?: RunStatus[]; workflow?: string; limit: number; json?: boolean }) => {
      await withWorld({}, async (w) => {
        const { runs, hasMore, scanCapped, scanned, names } = await listRuns(w.world.runs as never, opts);
        if (scanCapped)
          process.stderr.write(
            `note: read the newest ${SCAN_LIMIT} runs only; for older runs of this workflow pass its full id (workflow//<file>//${opts.workflow})\n`,
          );
        // Nothing matched the name (a status filter would hide why): the near names, from the runs
        // read and the app's manifest (src/cli/workflow-manifest.ts).
        if (runs.length === 0 && opts.workflow !== undefined && !opts.status?.length) {
          const hint = workflowHint(opts.workflow, names ?? [], scanned, loadManifest(undefined));
          if (hint) process.stderr.write(`${hint}\n`);
        }
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
