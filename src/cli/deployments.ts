/**
 * `eve-world-aws deployments`: the deployments of this table (src/deployment/registry.ts), with
 * how many runs each still has active, and `retire <id>`, which marks one retired so that its
 * runs' next deliveries fail them with `DEPLOYMENT_MISMATCH` (docs/operations.md, "Deployment
 * affinity").
 *
 * Invariants:
 * - `retire` refuses a deployment that is not registered, and one with active runs (pending or
 *   running) unless `--force`: a run of a retired deployment can never finish.
 * - Retiring is one conditional write; retiring again changes nothing.
 */
import type { WorkflowRun } from '@workflow/world';
import { Command } from 'commander';
import type { WorldContext } from '../context.js';
import { type DeploymentRecord, listDeployments, markRetired, readDeployment } from '../deployment/registry.js';
import { formatTime } from './format.js';
import { CliError, EXIT_FAILURE, palette, printJson, renderTable } from './output.js';
import { listRuns, SCAN_LIMIT } from './runs.js';
import { withWorld } from './world.js';

export interface DeploymentRow extends DeploymentRecord {
  /** Runs pinned to it that are pending or running (of the newest SCAN_LIMIT such runs). */
  activeRuns: number;
}

type RunLister = Parameters<typeof listRuns>[0];

/** Active runs per deployment id (pending or running; at most SCAN_LIMIT are read). */
export async function activeRunsByDeployment(runs: RunLister): Promise<Map<string, number>> {
  const { runs: active } = await listRuns(runs, { status: ['pending', 'running'], limit: SCAN_LIMIT });
  const out = new Map<string, number>();
  for (const r of active as WorkflowRun[]) out.set(r.deploymentId, (out.get(r.deploymentId) ?? 0) + 1);
  return out;
}

/** Every registered deployment with its active runs, oldest first. */
export async function deploymentRows(ctx: WorldContext, runs: RunLister): Promise<DeploymentRow[]> {
  const [records, active] = await Promise.all([listDeployments(ctx), activeRunsByDeployment(runs)]);
  return records.map((d) => ({ ...d, activeRuns: active.get(d.id) ?? 0 }));
}

/** Marks `id` retired after the checks above; throws a CliError (exit 1) saying why it did not. */
export async function retireDeployment(
  ctx: WorldContext,
  runs: RunLister,
  id: string,
  opts: { force?: boolean } = {},
): Promise<DeploymentRecord> {
  const record = await readDeployment(ctx, id, true);
  if (!record)
    throw new CliError(
      `deployment ${id} is not registered on table ${ctx.config.tableName}; \`eve-world-aws deployments\` lists them`,
      EXIT_FAILURE,
    );
  const active = (await activeRunsByDeployment(runs)).get(id) ?? 0;
  if (active > 0 && !opts.force)
    throw new CliError(
      `deployment ${id} has ${active} active run${active === 1 ? '' : 's'}: wait until they finish (\`eve-world-aws runs --status pending,running\`), or pass --force to fail each with DEPLOYMENT_MISMATCH at its next delivery`,
      EXIT_FAILURE,
    );
  await markRetired(ctx, id, opts.force && active > 0 ? `forced with ${active} active runs` : 'retired by operator');
  return (await readDeployment(ctx, id, true)) as DeploymentRecord;
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
      d.status === 'retired' ? p.dim('retired') : p.green('active'),
      formatTime(new Date(d.firstSeen).toISOString()),
      formatTime(new Date(d.lastSeen).toISOString()),
      String(d.activeRuns),
    ]),
    color,
  )}\n`;
}

export function deploymentsCommand(): Command {
  const list = new Command('list')
    .description('List the deployments of this table and how many runs each still has active (the default)')
    .option('--json', 'print {deployments: [...]} as JSON')
    .action(async (opts: { json?: boolean }) => {
      await withWorld({}, async (w) => {
        const rows = await deploymentRows(w.context, w.world.runs as never);
        if (opts.json) printJson({ deployments: rows });
        else process.stdout.write(renderDeployments(rows));
      });
    });
  const retire = new Command('retire')
    .description('Mark a deployment retired: its runs fail with DEPLOYMENT_MISMATCH at their next delivery')
    .argument('<id>', 'the deployment, as `deployments` lists it')
    .option('--force', 'retire it even though runs pinned to it are still active (they fail)')
    .option('--json', 'print the deployment as JSON')
    .action(async (id: string, opts: { force?: boolean; json?: boolean }) => {
      await withWorld({}, async (w) => {
        const record = await retireDeployment(w.context, w.world.runs as never, id, opts);
        if (opts.json) printJson({ deployment: record });
        else process.stdout.write(`Deployment ${record.id} is retired.\n`);
      });
    });
  return new Command('deployments')
    .description('List the deployments of this table (deployment affinity), or retire one')
    .addCommand(list, { isDefault: true })
    .addCommand(retire)
    .addHelpText(
      'after',
      `
Deployments are registered by processes with EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on (docs/operations.md,
"Deployment affinity"). Retire a build once its processes are stopped and its runs have finished.

Exit codes: 0 done; 1 refused (not registered, active runs without --force) or AWS error; 2 bad usage.`,
    );
}
