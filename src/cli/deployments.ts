/**
 * `eve-world-aws deployments`: the deployments of this table (src/deployment/registry.ts), with how
 * many runs each still has active and whether a live process serves it, and `retire <id>`, which
 * marks one retired so that its runs' next deliveries fail them with `DEPLOYMENT_MISMATCH`
 * (docs/operations.md, "Deployment affinity").
 *
 * Invariants:
 * - "Live" is judged by watching each deployment's heartbeat counter on this command's own clock
 *   (src/deployment/liveness.ts): a process killed is shown without a live consumer by any listing
 *   that starts after it died, which takes at most LIVENESS_WINDOW_MS (12 s); a listing where every
 *   active deployment is live ends at the first beat of each (about 5 s).
 * - `retire` refuses a deployment that is not registered; without `--force` also one a process of
 *   which is running (its counter moves while watched), one with active runs (pending or running: a
 *   run of a retired deployment can never finish) and one heard of (heartbeat, a run of it ending)
 *   within the grace period (`--grace`, default the tuning option `deploymentGraceSeconds`): the
 *   decision of src/sweep/deployments.ts, which the daily sweep applies too. `--force` first says
 *   which runs it fails (before it writes anything).
 * - Retiring is one conditional write; retiring again changes nothing.
 * - Retiring a Lambda deployment (`lambda:<function>:<version>`) then deletes that published
 *   version (unless `--keep-version`): the write comes first, so a message for it fails its run
 *   whether or not the delete happened; a failed delete exits 1 with the command that finishes it.
 */
import { Command, Option } from 'commander';
import { describeError, errorName } from '../aws/sdk-errors.js';
import { type LambdaVersion, parseLambdaDeployment } from '../consumer/delivery/invoke.js';
import type { WorldContext } from '../context/world-context.js';
import { type Liveness, livenessOf, watchDeployments } from '../deployment/liveness.js';
import {
  DEPLOYMENT_HEARTBEAT_MS,
  type DeploymentRecord,
  LIVENESS_WINDOW_MS,
  markRetired,
  readDeployment,
} from '../deployment/registry.js';
import { deploymentActivity, drainVerdict } from '../sweep/deployments.js';
import { formatTime, parseDuration, plural } from './shared/format.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, palette, printJson, progress, renderTable } from './shared/output.js';
import { withWorld } from './shared/world.js';

export const WINDOW_S = LIVENESS_WINDOW_MS / 1000;
const HEARTBEAT_S = DEPLOYMENT_HEARTBEAT_MS / 1000;

export interface DeploymentRow extends DeploymentRecord {
  /** Runs pinned to it that are pending or running (of the newest 10 000 active runs). */
  activeRuns: number;
  /**
   * Its consumer, by its heartbeat counter watched on this command's clock: `live` (it moved; a
   * Lambda deployment while active), `silent` (unchanged for LIVENESS_WINDOW_MS), `unknown` (a
   * retired one, not waited for).
   */
  consumer: Liveness;
  /** `consumer` is live and it is active. */
  live: boolean;
  /** Epoch ms it was last heard of: its heartbeat, or the end of its last run if later (writers' clocks: for people). */
  quietSince: number;
}

/** A progress line on a terminal while heartbeats are watched (nothing elsewhere). */
export function watchProgress(what: string): { onPoll: (ms: number) => void; done: () => void } {
  const spin = progress(`${what} (up to ${WINDOW_S} s)...`);
  return {
    onPoll: (ms) => spin.update(`${what}: ${Math.floor(ms / 1000)} of at most ${WINDOW_S} s...`),
    done: () => spin.done(),
  };
}

/** Every registered deployment with its active runs and liveness, oldest first. */
export async function deploymentRows(
  ctx: WorldContext,
  /** `windowMs`: how long a counter must stay unchanged to count as silent (default LIVENESS_WINDOW_MS). */
  opts: { onPoll?: (ms: number) => void; windowMs?: number } = {},
): Promise<DeploymentRow[]> {
  const [{ records, watch }, activity] = await Promise.all([
    watchDeployments(ctx, { onPoll: opts.onPoll, windowMs: opts.windowMs }),
    deploymentActivity(ctx),
  ]);
  return records.map((d) => {
    const consumer = livenessOf(d, watch);
    return {
      ...d,
      activeRuns: activity.activeRuns.get(d.id) ?? 0,
      consumer,
      live: d.status === 'active' && consumer === 'live',
      quietSince: Math.max(d.lastSeen, activity.lastRunEnded.get(d.id) ?? 0),
    };
  });
}

/**
 * Deletes the published Lambda version a retired deployment ran on (DeleteFunction with its
 * qualifier): its messages already fail their runs (the worker's Invoke finds it gone and the
 * registry says retired), and a version kept costs its code storage. A version already gone is not
 * an error; any other refusal (e.g. an alias still points at it, or AccessDenied) is, naming the
 * version, after the retire, which stands.
 */
async function deleteLambdaVersion(
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
    );
  }
}

/** What `retire` did: the record after it, the runs it fails, whether a process of it was running. */
export interface Retirement {
  record: DeploymentRecord;
  /** Active runs pinned to it when it was retired: each fails with DEPLOYMENT_MISMATCH at its next delivery. */
  failing: string[];
  /** A process of it counted heartbeats while watched: it learns within one heartbeat. */
  wasLive: boolean;
}

/**
 * Marks `id` retired after the checks above; throws a CliError (exit 1) saying why it did not. With
 * `force`, `onFailing` is told which active runs will fail, and awaited, before any write.
 */
export async function retireDeployment(
  ctx: WorldContext,
  id: string,
  opts: {
    force?: boolean;
    graceMs?: number;
    now?: number;
    onPoll?: (ms: number) => void;
    onFailing?: (runIds: string[], live: boolean) => void | Promise<void>;
    windowMs?: number;
  } = {},
): Promise<Retirement> {
  const record = await readDeployment(ctx, id, true);
  if (!record)
    throw new CliError(
      `deployment ${id} is not registered on table ${ctx.config.tableName}; \`eve-world-aws deployments\` lists them`,
    );
  if (record.status === 'retired') return { record, failing: [], wasLive: false };
  // Is a process of it running? Its counter, watched on this command's clock (even for a Lambda
  // version: a container of it that counts beats is running). Its runs are read after the watch,
  // just before the write, so the runs named are those it fails (a start racing the write aside).
  const { watch } = await watchDeployments(ctx, {
    decide: (r) => r.id === id,
    judge: (r, w) => w.state(r.id),
    onPoll: opts.onPoll,
    windowMs: opts.windowMs,
  });
  const activity = await deploymentActivity(ctx);
  const live = watch.state(id) === 'live';
  const now = opts.now ?? Date.now();
  const verdict = drainVerdict(record, activity, opts.graceMs ?? ctx.config.deploymentGraceSeconds * 1000, now, live);
  if (!verdict.retirable && !opts.force) throw new CliError(verdict.detail);
  const failing = activity.activeRunIds.get(id) ?? [];
  if (opts.force) await opts.onFailing?.(failing, live);
  const reason = verdict.retirable
    ? 'retired by operator'
    : [
        'forced',
        ...(live ? ['while a process of it ran'] : []),
        ...(verdict.activeRuns > 0 ? [`with ${verdict.activeRuns} active runs`] : []),
        ...(verdict.why === 'within-grace' ? ['within the grace period'] : []),
      ].join(' ');
  await markRetired(ctx, id, reason, now);
  return { record: (await readDeployment(ctx, id, true)) as DeploymentRecord, failing, wasLive: live };
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
        ? d.consumer === 'live'
          ? p.yellow('retired, still running')
          : p.dim('retired')
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
  'refused (not registered; a process of it running, active runs or within the grace period, without --force), or an AWS error',
  CONFIG_ERROR,
);

/** `--help` of `deployments`, `deployments list` and `deployments retire` (src/cli/shared/help-text.ts). */
const HELP: Record<'deployments' | 'list' | 'retire', HelpSpec> = {
  deployments: {
    notes: [
      `Deployments are registered by every process on a table with deployment affinity (recorded by \`eve-world-aws init --deployment-affinity\`; docs/operations.md, "Deployment affinity"). Each running process counts a heartbeat every ${HEARTBEAT_S} s; this command watches the counters on its own clock, so it takes up to ${WINDOW_S} s when a deployment has no live process. Status: "active, live" (its counter moved), "active, no consumer" (runs pinned to it wait: start a process of that build, or retire it with --force to fail them), "active, draining" (no live process, no active run), "retired", "retired, still running" (stop that process). A Lambda deployment is live while active.`,
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
      `Without --force it refuses a deployment whose process still counts heartbeats (watched for up to ${WINDOW_S} s), one with active runs and one heard of (a heartbeat, a run of it ending) within the grace period. With --force it first lists the runs it fails; a running process of it learns within one heartbeat (${HEARTBEAT_S} s) and starts no more runs. A message for a retired deployment fails its run with DEPLOYMENT_MISMATCH at its next delivery (once: never a loop, never the DLQ). Retiring a Lambda deployment also deletes its published version unless --keep-version.`,
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
        const spin = watchProgress('Watching heartbeats');
        const rows = await deploymentRows(w.context, { onPoll: spin.onPoll }).finally(spin.done);
        if (opts.json) printJson({ deployments: rows });
        else process.stdout.write(renderDeployments(rows));
      });
    });
  const retire = withHelp(new Command('retire'), HELP.retire)
    .description('Mark a deployment retired: its runs fail with DEPLOYMENT_MISMATCH at their next delivery')
    .argument('<id>', 'the deployment, as `deployments` lists it')
    .option(
      '--force',
      'retire it even though a process of it runs (it starts no more runs), runs pinned to it are active (they fail: listed first) or it was heard of within the grace period',
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
        const spin = watchProgress(`Watching deployment ${id}'s heartbeat`);
        const { record, failing, wasLive } = await retireDeployment(w.context, id, {
          force: opts.force,
          graceMs: opts.grace,
          onPoll: spin.onPoll,
          onFailing: (runs, live) => {
            spin.done();
            if (opts.json) return;
            if (live)
              process.stdout.write(`A process of deployment ${id} is running: it is retired anyway (--force).\n`);
            process.stdout.write(
              runs.length === 0
                ? `No active run is pinned to deployment ${id}: none fails.\n`
                : `Retiring deployment ${id} fails ${plural(runs.length, 'active run')} (DEPLOYMENT_MISMATCH at the next delivery):\n${runs.map((r) => `  ${r}\n`).join('')}`,
            );
          },
        }).finally(spin.done);
        const version = opts.keepVersion ? undefined : parseLambdaDeployment(record.id);
        const deleted = version ? await deleteLambdaVersion(w.context, version) : undefined;
        if (opts.json)
          printJson({ deployment: record, failing, wasLive, ...(deleted ? { lambdaVersion: deleted } : {}) });
        else {
          process.stdout.write(`Deployment ${record.id} is retired.\n`);
          if (wasLive)
            process.stdout.write(
              `Its running process learns it at its next heartbeat (within ${HEARTBEAT_S} s): it then starts no more runs (DeploymentRetiredError) and leaves its deployment's messages to other consumers. Stop it.\n`,
            );
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
