/**
 * `eve-world-aws sweep`: delete the S3 objects nothing can reference any more, through the World's
 * `sweepOrphans` (src/sweep/run-payloads.ts for run payloads, src/sweep/held-bodies.ts for held
 * queue bodies). Meant to run daily; safe at any time, repeatedly, concurrently with the runtime.
 */
import { workflowRunIdSchema } from '@workflow/world';
import { Command, InvalidArgumentError } from 'commander';
import { ORPHAN_GRACE_MS, type SweepReport } from '../index.js';
import { durationOption, formatDuration } from './shared/format.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, colorEnabled, palette, printJson, withProgress } from './shared/output.js';
import { withWorld } from './shared/world.js';

function parseRunId(v: string): string {
  if (!workflowRunIdSchema.safeParse(v).success)
    throw new InvalidArgumentError('must be a run id: wrun_ followed by a ULID (e.g. wrun_01JD...).');
  return v;
}

const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MiB`;

function renderSweep(r: SweepReport, color = colorEnabled()): string {
  const p = palette(color);
  const verb = r.dryRun ? 'would delete' : 'deleted';
  const lines: string[] = [];
  for (const o of r.swept) lines.push(`${p.dim(verb)} ${o.key} (${o.size} B, ${o.reason})`);
  if (r.unlisted > 0) lines.push(p.dim(`… and ${r.unlisted} more`));
  for (const k of r.heldBodies?.keys ?? []) lines.push(`${p.dim(verb)} ${k} (held queue body, past its time)`);
  for (const f of [...r.failures, ...(r.heldBodies?.failures ?? [])])
    lines.push(p.red(`${f.key.endsWith('/') ? 'could not sweep' : 'could not delete'} ${f.key}: ${f.error}`));
  const runs = r.runs;
  lines.push(
    `Runs: ${runs.scanned} scanned — ${runs.terminal} terminal and ${runs.absent} without a run item swept; skipped ${runs.clean} already clean, ${runs.active} active, ${runs.recent} too recent, ${runs.foreign} not run prefixes.`,
  );
  const o = r.objects;
  lines.push(
    `Objects: ${o.scanned} scanned — ${o.referenced} referenced, ${o.recent} younger than ${formatDuration(r.graceMs)}, ${o.protected} protected (live step or unknown path); ${verb} ${o.orphans} orphans (${mib(o.orphanBytes)}).`,
  );
  if (r.heldBodies)
    lines.push(
      `Held queue bodies: ${r.heldBodies.scanned} scanned; ${verb} ${r.heldBodies.expired} past their time (${mib(r.heldBodies.expiredBytes)}).`,
    );
  const d = r.deployments;
  if (d && d.scanned > 0)
    lines.push(
      `Deployments: ${d.scanned} registered; ${r.dryRun ? 'would retire' : 'retired'} ${d.retired.length} drained past their grace period${d.retired.length > 0 ? ` (${d.retired.join(', ')})` : ''}; ${d.kept.length} kept (active runs or heard of within the grace period).`,
    );
  if (r.dryRun) lines.push(p.yellow('Dry run: nothing was deleted.'));
  return `${lines.join('\n')}\n`;
}

const SWEEP_HELP: HelpSpec = {
  notes: [
    'Large values are uploaded to S3 before the DynamoDB write that points at them, so a write that fails or a process that dies in between leaves an object nothing references. The sweep deletes exactly the objects that can never be referenced again:',
    '  - under runs/<runId>/ of a run that is completed, failed or cancelled (and ended more than --older-than ago): objects no item of the run points at, except those of steps still running (a step may finish after its run) and, while any step runs, stream objects;\n  - under runs/<runId>/ of a run with no run item (its creation never committed, or retention purged it) whose id is older than 24 h + --older-than;\n  - queue bodies of long waits kept under queue-held/ once every message that used them is gone.',
    'It also retires deployments (deployment affinity) with no active run that nothing has been heard of for deploymentGraceSeconds (24 h). Objects younger than --older-than are always kept; pending and running runs are never touched. A finished run whose sweep left nothing undecided is marked clean and skipped by later sweeps; --recheck reads those again. A smaller --older-than deletes sooner but risks racing a writer between its upload and its commit: keep the default (1h) unless nothing is running.',
    'Run it daily (cron, a scheduled task, an EventBridge rule) with the operator policy (`init --print-iam-policy --operator`). The CDK construct already runs it daily (sweepHandler from @portfolio/eve-world-aws/lambda).',
  ],
  examples: [
    ['eve-world-aws sweep --dry-run', 'what would go'],
    ['eve-world-aws sweep --older-than 6h --json'],
    ['eve-world-aws sweep --run wrun_01JD...'],
  ],
  exitCodes: exitCodes('done', 'an object could not be deleted, or an AWS error', CONFIG_ERROR),
};

export function sweepCommand(): Command {
  return withHelp(new Command('sweep'), SWEEP_HELP)
    .description('Delete S3 objects no run can reference any more (orphaned payloads, expired held queue bodies)')
    .option('--dry-run', 'list what would be deleted and delete nothing')
    .addOption(
      durationOption(
        '--older-than <duration>',
        'grace: keep objects younger than this, and everything of runs that ended more recently (units: d, h, m, s, e.g. 5d, 12h, 30m, 90s)',
        ORPHAN_GRACE_MS,
      ),
    )
    .option('--run <runId>', 'only this run’s objects (runs/<runId>/)', parseRunId)
    .option('--recheck', 'also re-read finished runs an earlier sweep already cleaned')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { dryRun?: boolean; olderThan: number; run?: string; recheck?: boolean; json?: boolean }) => {
      await withWorld({}, async (w) => {
        const report = await withProgress('sweeping runs/ …', (spin) =>
          w.world.sweepOrphans({
            dryRun: opts.dryRun,
            graceMs: opts.olderThan,
            runId: opts.run,
            recheck: opts.recheck,
            onProgress: ({ runs, objects, orphans }) =>
              spin.update(`sweeping runs/: ${runs} runs, ${objects} objects, ${orphans} orphans`),
          }),
        );
        if (opts.json) printJson(report);
        else process.stdout.write(renderSweep(report));
        const failed = report.failures.length + (report.heldBodies?.failures.length ?? 0);
        if (failed > 0) throw new CliError(`${failed} objects or runs could not be swept (listed above); run it again`);
      });
    });
}
