/**
 * What `eve-world-aws init --deployment-affinity` checks before it records affinity on a table that
 * does not pin runs yet (docs/operations.md, "Deployment affinity", step 2): no run is pending or
 * running. Such runs are pinned to the id every process reported without affinity, which no
 * deployment has once every process takes part: each would fail with DEPLOYMENT_MISMATCH at its
 * next delivery. A table that does not exist yet, or already records affinity, has none to lose;
 * `--force` records it anyway.
 */
import { createClients, destroyClients } from '../aws/clients.js';
import { unlessMissing } from '../aws/sdk-errors.js';
import type { WorldConfig } from '../config/index.js';
import { createContext } from '../context/world-context.js';
import { readTableFormat } from '../preflight/format-check.js';
import { createStorage } from '../storage/index.js';
import { CliError } from './shared/output.js';

/** Active runs named at most when it refuses. */
const NAMED_RUNS = 10;

/** Throws a CliError (exit 1) naming the active runs, unless there are none or `force`; AWS errors as they are. */
export async function assertNoRunToStrand(config: WorldConfig, force: boolean): Promise<void> {
  const clients = createClients(config);
  try {
    const tf = await unlessMissing(readTableFormat(clients.ddb, config.tableName));
    if (!tf || tf.affinity || force) return;
    const { data, hasMore } = await createStorage(createContext(config, clients)).runs.list({
      status: ['pending', 'running'],
      resolveData: 'none',
      pagination: { limit: NAMED_RUNS },
    });
    if (data.length === 0) return;
    const count = hasMore
      ? `more than ${NAMED_RUNS} active runs`
      : `${data.length} active run${data.length === 1 ? '' : 's'}`;
    throw new CliError(
      `table ${config.tableName} has ${count} (${data.map((r) => r.runId).join(', ')}${hasMore ? ', ...' : ''}), ` +
        'pinned to no deployment of a build: with deployment affinity each fails with DEPLOYMENT_MISMATCH at its next delivery. ' +
        'Wait until `eve-world-aws runs --status pending,running` lists none, or pass --force to fail them (docs/operations.md, "Deployment affinity").',
    );
  } finally {
    destroyClients(clients);
  }
}
