/**
 * `doctor`'s checks of the fleet on the table (deployment affinity, docs/operations.md): whether
 * the table pins runs to their deployment and whether a process with doctor's environment could
 * take part (the same decision src/deployment/membership.ts makes: where a process would refuse to
 * start, this check fails, with the same words), and the deployments with active runs (a warning
 * for runs no live consumer serves, and for a retired deployment whose process still runs).
 */
import { describeError } from '../aws/sdk-errors.js';
import type { WorldConfig } from '../config/index.js';
import type { WorldContext } from '../context/world-context.js';
import { fleetProblem, variableDisagreement } from '../deployment/membership.js';
import { listDeployments } from '../deployment/registry.js';
import { readTableFormat } from '../preflight/format-check.js';
import { type DeploymentRow, deploymentRows, WINDOW_S } from './deployments.js';
import type { Check } from './doctor-checks.js';

/**
 * The fleet's checks: `deployment affinity` (fail where a process would refuse; warn where a
 * variable disagrees with the table) and `deployments`; none on a table without affinity, with no
 * variable set and no deployment registered.
 */
export async function fleetChecks(ctx: WorldContext, onPoll?: (ms: number) => void): Promise<Check[]> {
  const { config } = ctx;
  try {
    const tf = await readTableFormat(ctx.clients.ddb, config.tableName);
    const registered = (await listDeployments(ctx)).length > 0;
    const out: Check[] = [];
    const affinity = affinityCheck(config, tf);
    if (affinity) out.push(affinity);
    if (tf.affinity || registered) out.push(deploymentsCheck(await deploymentRows(ctx, { onPoll })));
    return out;
  } catch (err) {
    return [
      {
        check: 'deployments',
        status: 'warn',
        details: `could not read the table's format, the deployment registry or the runs: ${describeError(err)}`,
        fix: 'check the permissions (`eve-world-aws init --print-iam-policy --operator`)',
      },
    ];
  }
}

/** The `deployment affinity` check for a table of format `tf`, or undefined when there is nothing to say. */
function affinityCheck(config: WorldConfig, tf: Awaited<ReturnType<typeof readTableFormat>>): Check | undefined {
  const check = 'deployment affinity';
  const problem = fleetProblem(config, tf);
  if (problem)
    return {
      check,
      status: 'fail',
      details: `table ${config.tableName} pins runs to their deployment, and a process with this environment refuses to start: ${problem}`,
      fix: 'see the details (docs/operations.md, "Deployment affinity")',
    };
  const disagreement = variableDisagreement(config, tf);
  if (disagreement)
    return {
      check,
      status: 'warn',
      details: disagreement.replace('[eve-world-aws] ', ''),
      fix:
        config.deploymentAffinity === 'on'
          ? 'run `eve-world-aws init --deployment-affinity` (after every process runs this release), or unset EVE_WORLD_AWS_DEPLOYMENT_AFFINITY'
          : 'unset EVE_WORLD_AWS_DEPLOYMENT_AFFINITY',
    };
  if (!tf.affinity) return undefined;
  return {
    check,
    status: 'pass',
    details: `table ${config.tableName} pins runs to the deployment that started them; every process of this build takes part`,
  };
}

/** A doctor check (src/cli/doctor.ts) over {@link deploymentRows}: a warning for runs no live consumer serves. */
function deploymentsCheck(rows: DeploymentRow[]): Check {
  const busy = rows.filter((d) => d.activeRuns > 0);
  const describe = (d: DeploymentRow) =>
    `${d.id}: ${d.activeRuns} active run${d.activeRuns === 1 ? '' : 's'}, ${
      d.status === 'retired' ? 'retired (they fail at their next delivery)' : d.live ? 'live' : 'no live consumer'
    }`;
  const live = rows.filter((d) => d.live).map((d) => d.id);
  const head = `${rows.length} registered; live: ${live.length > 0 ? live.join(', ') : 'none'}`;
  const details = busy.length === 0 ? `${head}; no active runs` : `${head}\n${busy.map(describe).join('\n')}`;
  const stranded = busy.filter((d) => d.status === 'active' && !d.live);
  const running = rows.filter((d) => d.status === 'retired' && d.consumer === 'live');
  const fixes: string[] = [];
  if (stranded.length > 0)
    fixes.push(
      `runs of ${stranded.map((d) => d.id).join(', ')} wait: no process of ${stranded.length === 1 ? 'that build' : 'those builds'} counted a heartbeat in ${WINDOW_S} s. Start one, or \`eve-world-aws deployments retire <id> --force\` to fail them with DEPLOYMENT_MISMATCH`,
    );
  if (running.length > 0)
    fixes.push(
      `a process of retired ${running.map((d) => d.id).join(', ')} still runs (it starts no runs and takes none of its deployment's messages): stop it`,
    );
  if (fixes.length === 0) return { check: 'deployments', status: 'pass', details };
  return { check: 'deployments', status: 'warn', details, fix: fixes.join('; ') };
}
