/**
 * `eve-world-aws deployments`: the deployments of this table (src/deployment/registry.ts), with
 * how many runs each still has active and whether a live process serves it, and `retire <id>`,
 * which marks one retired so that its runs' next deliveries fail them with `DEPLOYMENT_MISMATCH`
 * (docs/operations.md, "Deployment affinity").
 *
 * Invariants:
 * - `retire` refuses a deployment that is not registered; without `--force` also one with active
 *   runs (pending or running: a run of a retired deployment can never finish) and one heard of
 *   (heartbeat, a run of it ending) within the grace period (`--grace`, default the tuning
 *   option `deploymentGraceSeconds`): the decision of src/sweep/deployments.ts, which the daily
 *   sweep applies too.
 * - Retiring is one conditional write; retiring again changes nothing.
 * - Retiring a Lambda deployment (`lambda:<function>:<version>`) then deletes that published version
 *   (unless `--keep-version`): the write comes first, so a message for it fails its run whether or
 *   not the delete has happened; a failed delete exits 1 with the command that finishes it.
 */
import { Command, Option } from 'commander';
import { describeError, errorName } from '../aws/sdk-errors.js';
import { LIVE_MS } from '../consumer/affinity.js';
import { type LambdaVersion, parseLambdaDeployment } from '../consumer/delivery/invoke.js';
import type { WorldContext } from '../context/world-context.js';
import { type DeploymentRecord, listDeployments, markRetired, readDeployment } from '../deployment/registry.js';
import { deploymentActivity, drainVerdict } from '../sweep/deployments.js';
import { formatTime, parseDuration } from './format.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './help-text.js';
import { CliError, EXIT_FAILURE, palette, printJson, renderTable } from './output.js';
import { withWorld } from './world.js';

export interface DeploymentRow extends DeploymentRecord {
  /** Runs pinned to it that are pending or running (of the newest 10 000 active runs). */
  activeRuns: number;
  /** A process of it heartbeated within the last 3 minutes (src/consumer/affinity.ts `LIVE_MS`). */
  live: boolean;
  /** Epoch ms it was last heard of: its heartbeat, or the end of its last run if later. */
  quietSince: number;
}

/** Every registered deployment with its active runs and liveness, oldest first. */
export async function deploymentRows(ctx: WorldContext, now = Date.now()): Promise<DeploymentRow[]> {
  const [records, activity] = await Promise.all([listDeployments(ctx), deploymentActivity(ctx)]);
  return records.map((d) => ({
    ...d,
    activeRuns: activity.activeRuns.get(d.id) ?? 0,
    live: d.status === 'active' && now - d.lastSeen < LIVE_MS,
    quietSince: Math.max(d.lastSeen, activity.lastRunEnded.get(d.id) ?? 0),
  }));
}

/**
 * Deletes the published Lambda version a retired deployment ran on (DeleteFunction with its
 * qualifier): its messages already fail their runs (the worker's Invoke finds it gone and the
 * registry says retired), and a version kept costs its code storage. A version already gone is
 * not an error; any other refusal (e.g. an alias still points at it, or AccessDenied) is, naming
 * the version, after the retire, which stands.
 */
export async function deleteLambdaVersion(
  ctx: WorldContext,
  v: LambdaVersion,
): Promise<{ functionName: string; version: string; deleted: boolean }> {
  const { DeleteFunctionCommand } = await import('@aws-sdk/client-lambda');
  const lambda = await ctx.clients.lambda();
  try {
    await lambda.send(new DeleteFunctionCommand({ FunctionName: v.functionName, Qualifier: v.version }));
    return { ...v, deleted: true };
  } catch (err) {
    if (errorName(err) === 'ResourceNotFoundException') return { ...v, deleted: false };
    throw new CliError(
      `The deployment is retired, but version ${v.version} of Lambda function ${v.functionName} could not be deleted: ${describeError(err)}. Delete it with \`aws lambda delete-function --function-name ${v.functionName} --qualifier ${v.version}\`, or rerun with --keep-version to leave it.`,
      EXIT_FAILURE,
    );
  }
}

/** Marks `id` retired after the checks above; throws a CliError (exit 1) saying why it did not. */
export async function retireDeployment(
  ctx: WorldContext,
  id: string,
  opts: { force?: boolean; graceMs?: number; now?: number } = {},
): Promise<DeploymentRecord> {
  const record = await readDeployment(ctx, id, true);
  if (!record)
    throw new CliError(
      `deployment ${id} is not registered on table ${ctx.config.tableName}; \`eve-world-aws deployments\` lists them`,
      EXIT_FAILURE,
    );
  if (record.status === 'retired') return record;
  const now = opts.now ?? Date.now();
  const verdict = drainVerdict(
    record,
    await deploymentActivity(ctx),
    opts.graceMs ?? ctx.config.deploymentGraceSeconds * 1000,
    now,
  );
  if (!verdict.retirable && !opts.force) throw new CliError(verdict.detail, EXIT_FAILURE);
  const reason = verdict.retirable
    ? 'retired by operator'
    : verdict.activeRuns > 0
      ? `forced with ${verdict.activeRuns} active runs`
      : 'forced within the grace period';
  await markRetired(ctx, id, reason, now);
  return (await readDeployment(ctx, id, true)) as DeploymentRecord;
}

/** A doctor check (src/cli/doctor.ts) over {@link deploymentRows}: a warning for runs no live consumer serves. */
export function deploymentsCheck(rows: DeploymentRow[]): {
  check: 'deployments';
  status: 'pass' | 'warn';
  details: string;
  fix?: string;
} {
  const busy = rows.filter((d) => d.activeRuns > 0);
  const describe = (d: DeploymentRow) =>
    `${d.id}: ${d.activeRuns} active run${d.activeRuns === 1 ? '' : 's'}, ${
      d.status === 'retired' ? 'retired (they fail at their next delivery)' : d.live ? 'live' : 'no live consumer'
    }`;
  const live = rows.filter((d) => d.live).map((d) => d.id);
  const head = `${rows.length} registered; live: ${live.length > 0 ? live.join(', ') : 'none'}`;
  const details = busy.length === 0 ? `${head}; no active runs` : `${head}\n${busy.map(describe).join('\n')}`;
  const stranded = busy.filter((d) => d.status === 'active' && !d.live);
  if (stranded.length === 0) return { check: 'deployments', status: 'pass', details };
  return {
    check: 'deployments',
    status: 'warn',
    details,
    fix: `runs of ${stranded.map((d) => d.id).join(', ')} wait: no process of ${stranded.length === 1 ? 'that build' : 'those builds'} heartbeated in 3 min. Start one, or \`eve-world-aws deployments retire <id> --force\` to fail them with DEPLOYMENT_MISMATCH`,
  };
}

export function renderDeployments(rows: DeploymentRow[], color?: boolean): string {
  if (rows.length === 0)
    return 'No deployments registered (deployment affinity is off, or no process with it on has written yet).\n';
  const p = palette(color);
  return `${renderTable(
    ['Deployment', 'Shape', 'Status', 'First seen', 'Last seen', 'Active runs'],
    rows.map((d) => [
      d.id,
      d.shape,
      d.status === 'retired'
        ? p.dim('retired')
        : d.live
          ? p.green('active, live')
          : d.activeRuns > 0
            ? p.yellow('active, no consumer')
            : 'active, draining',
      formatTime(new Date(d.firstSeen).toISOString()),
      formatTime(new Date(d.lastSeen).toISOString()),
      String(d.activeRuns),
    ]),
    color,
  )}\n`;
}

/** `retire`'s exit codes, also those of `deployments` (which lists, or retires). */
const RETIRE_EXIT_CODES = exitCodes(
  'done (retiring a retired one again too)',
  'refused (not registered; active runs or within the grace period without --force), or an AWS error',
  CONFIG_ERROR,
);

/** `--help` of `deployments`, `deployments list` and `deployments retire` (src/cli/help-text.ts). */
const HELP: Record<'deployments' | 'list' | 'retire', HelpSpec> = {
  deployments: {
    notes: [
      'Deployments are registered by processes with EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on (docs/operations.md, "Deployment affinity"). Status: "active, live" (a process of it heartbeated in the last 3 min), "active, no consumer" (runs pinned to it wait: start a process of that build, or retire it with --force to fail them), "active, draining" (no live process, no active run), "retired".',
      "Old deployments drain, then go: once a build's processes are stopped and its runs have finished, `retire` marks it retired. The daily sweep (`eve-world-aws sweep`, the CDK sweeper) retires every deployment that qualifies.",
    ],
    examples: [
      ['eve-world-aws deployments', 'the same as `deployments list`'],
      ['eve-world-aws deployments retire build:0123456789abcdef'],
    ],
    exitCodes: RETIRE_EXIT_CODES,
  },
  list: {
    examples: [['eve-world-aws deployments'], ["eve-world-aws deployments list --json | jq -r '.deployments[].id'"]],
    exitCodes: exitCodes('listed (also when none is registered)', 'an AWS error', CONFIG_ERROR),
  },
  retire: {
    notes: [
      'Without --force it refuses a deployment with active runs or heard of (a heartbeat, a run of it ending) within the grace period. A message for a retired deployment fails its run with DEPLOYMENT_MISMATCH at its next delivery (once: never a loop, never the DLQ). Retiring a Lambda deployment also deletes its published version unless --keep-version.',
    ],
    examples: [
      ['eve-world-aws deployments retire build:0123456789abcdef'],
      ['eve-world-aws deployments retire build:0123456789abcdef --grace 1h'],
      ['eve-world-aws deployments retire lambda:my-host:12 --force', 'fail its runs'],
    ],
    exitCodes: RETIRE_EXIT_CODES,
  },
};

export function deploymentsCommand(): Command {
  const list = withHelp(new Command('list'), HELP.list)
    .description('List the deployments of this table and how many runs each still has active (the default)')
    .option('--json', 'print {deployments: [...]} as JSON')
    .action(async (opts: { json?: boolean }) => {
      await withWorld({}, async (w) => {
        const rows = await deploymentRows(w.context);
        if (opts.json) printJson({ deployments: rows });
        else process.stdout.write(renderDeployments(rows));
      });
    });
  const retire = withHelp(new Command('retire'), HELP.retire)
    .description('Mark a deployment retired: its runs fail with DEPLOYMENT_MISMATCH at their next delivery')
    .argument('<id>', 'the deployment, as `deployments` lists it')
    .option(
      '--force',
      'retire it even though runs pinned to it are still active (they fail) or it was heard of within the grace period',
    )
    .addOption(
      new Option(
        '--grace <duration>',
        'refuse a deployment heard of (heartbeat, a run of it ending) more recently than this (units: d, h, m, s) (default: 24h, the tuning option deploymentGraceSeconds)',
      ).argParser(parseDuration),
    )
    .option('--keep-version', 'a Lambda deployment (lambda:<function>:<version>): leave its published version in place')
    .option('--json', 'print the deployment (and the Lambda version deleted, if any) as JSON')
    .action(async (id: string, opts: { force?: boolean; grace?: number; keepVersion?: boolean; json?: boolean }) => {
      await withWorld({}, async (w) => {
        const record = await retireDeployment(w.context, id, { force: opts.force, graceMs: opts.grace });
        const version = opts.keepVersion ? undefined : parseLambdaDeployment(record.id);
        const deleted = version ? await deleteLambdaVersion(w.context, version) : undefined;
        if (opts.json) printJson({ deployment: record, ...(deleted ? { lambdaVersion: deleted } : {}) });
        else {
          process.stdout.write(`Deployment ${record.id} is retired.\n`);
          if (deleted)
            process.stdout.write(
              deleted.deleted
                ? `Deleted version ${deleted.version} of Lambda function ${deleted.functionName}.\n`
                : `Version ${deleted.version} of Lambda function ${deleted.functionName} was already gone.\n`,
            );
        }
      });
    });
  return withHelp(new Command('deployments'), HELP.deployments)
    .description('List the deployments of this table (deployment affinity), or retire one')
    .addCommand(list, { isDefault: true })
    .addCommand(retire);
}
