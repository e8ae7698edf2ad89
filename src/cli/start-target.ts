/**
 * Where `eve-world-aws start` pins a run on a table with deployment affinity (the CLI is never a
 * deployment of its own, src/deployment/membership.ts): the deployment `--deployment` names, when
 * it is registered and not retired, else the newest deployment whose consumer counts heartbeats
 * (watched on this command's clock, src/deployment/liveness.ts), so no run waits for a consumer
 * that does not exist. A CliError (exit 1) when there is none.
 */
import type { WorldContext } from '../context/world-context.js';
import { newestLiveDeployment } from '../deployment/liveness.js';
import { readDeployment } from '../deployment/registry.js';
import { WINDOW_S, watchProgress } from './deployments.js';
import { CliError } from './shared/output.js';

/** The deployment for a run the CLI starts (see the header). */
export async function chooseDeployment(ctx: WorldContext, explicit?: string): Promise<string> {
  const table = ctx.config.tableName;
  if (explicit !== undefined) {
    const record = await readDeployment(ctx, explicit, true);
    if (!record)
      throw new CliError(
        `deployment ${explicit} is not registered on table ${table}; \`eve-world-aws deployments\` lists them`,
      );
    if (record.status === 'retired')
      throw new CliError(
        `deployment ${explicit} is retired: a run started on it would fail; choose another (\`eve-world-aws deployments\`)`,
      );
    return explicit;
  }
  const spin = watchProgress('Choosing a deployment with a live consumer');
  const id = await newestLiveDeployment(ctx, { onPoll: spin.onPoll }).finally(spin.done);
  if (id === undefined)
    throw new CliError(
      `no deployment on table ${table} has a live consumer (none counted a heartbeat within ${WINDOW_S} s): ` +
        'start your app, or pass --deployment <id> (`eve-world-aws deployments` lists them)',
    );
  return id;
}
