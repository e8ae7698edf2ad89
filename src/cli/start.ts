/**
 * `eve-world-aws start <workflow> [json...]`: start a run of a workflow your app has deployed, as
 * `wf start` does, through core's `start()` on this World (src/cli/core-world.ts). Core needs only
 * the workflow's id, not its code: it writes `run_created` and sends the run's first message; the
 * app's consumer (eve start, a Lambda), which has the compiled workflow, runs it. So this command
 * fits the DevKit's model as long as the id is known:
 *
 * - a full id (`workflow//./workflows/order//order`, from the app's manifest or `runs`) is used
 *   as is, even for a workflow that has never run;
 * - a name (`order`) is looked up among the newest runs (src/cli/runs.ts, `listRuns`): it must
 *   have run before, and name exactly one workflow.
 *
 * Each argument is one JSON value, passed to the workflow in order (as `wf start` does). The CLI
 * is no deployment (src/cli/world.ts opens a client World): on a table without deployment
 * affinity the run carries the one id every process reports and whichever consumer serves the
 * queue runs it; on a table with affinity it is pinned to `--deployment <id>` (registered, not
 * retired), else to the newest deployment with a live consumer (its heartbeat counter watched
 * on this command's clock, src/deployment/liveness.ts): never to one without a consumer, never to
 * a deployment of the CLI's own, and the command fails (exit 1) when there is none.
 */
import { Command } from 'commander';
import type { WorldContext } from '../context/world-context.js';
import { newestLiveDeployment } from '../deployment/liveness.js';
import { LIVENESS_WINDOW_MS, readDeployment } from '../deployment/registry.js';
import { checkTableFormat } from '../preflight/format-check.js';
import { parseJsonArg, withCoreWorld } from './core-world.js';
import { watchProgress } from './deployments.js';
import { CliError, EXIT_FAILURE, EXIT_USAGE, printJson } from './output.js';
import { requirePeers } from './peers.js';
import { listRuns, SCAN_LIMIT } from './runs.js';
import { isFullWorkflowName } from './workflow-names.js';
import type { CliWorld } from './world.js';

interface StartOptions {
  json?: boolean;
  deployment?: string;
}

/** Runs of a short name read to find the workflows it names. */
const LOOKUP_RUNS = 100;

/** The full workflow id `query` names (see the header). */
export async function resolveWorkflowId(w: CliWorld, query: string): Promise<string> {
  if (isFullWorkflowName(query)) return query;
  const { runs } = await listRuns(w.world.runs as never, { workflow: query, limit: LOOKUP_RUNS });
  const ids = [...new Set(runs.map((r) => r.workflowName))];
  if (ids.length === 1) return ids[0];
  if (ids.length === 0)
    throw new CliError(
      `no run of a workflow named "${query}" among the newest ${SCAN_LIMIT} runs in table ${w.config.tableName}: ` +
        "pass its full id instead (workflow//<file>//<export>, as in your app's .well-known/workflow/v1/manifest.json)",
      EXIT_FAILURE,
    );
  throw new CliError(
    `"${query}" names ${ids.length} workflows (${ids.join(', ')}): pass one of these full ids`,
    EXIT_USAGE,
  );
}

/**
 * The deployment a run started by the CLI goes to, on a table with affinity: `explicit` when it is
 * registered and not retired, else the newest with a live consumer; a CliError (exit 1) otherwise.
 */
export async function chooseDeployment(ctx: WorldContext, explicit?: string): Promise<string> {
  const table = ctx.config.tableName;
  if (explicit !== undefined) {
    const record = await readDeployment(ctx, explicit, true);
    if (!record)
      throw new CliError(
        `deployment ${explicit} is not registered on table ${table}; \`eve-world-aws deployments\` lists them`,
        EXIT_FAILURE,
      );
    if (record.status === 'retired')
      throw new CliError(
        `deployment ${explicit} is retired: a run started on it would fail; choose another (\`eve-world-aws deployments\`)`,
        EXIT_FAILURE,
      );
    return explicit;
  }
  const spin = watchProgress('Choosing a deployment with a live consumer');
  const id = await newestLiveDeployment(ctx, { onPoll: spin.onPoll }).finally(spin.done);
  if (id === undefined)
    throw new CliError(
      `no deployment on table ${table} has a live consumer (none counted a heartbeat within ${LIVENESS_WINDOW_MS / 1000} s): ` +
        'start your app, or pass --deployment <id> (`eve-world-aws deployments` lists them)',
      EXIT_FAILURE,
    );
  return id;
}

export async function startWorkflow(
  query: string,
  args: unknown[],
  opts: { deployment?: string } = {},
): Promise<{ runId: string; workflowId: string; deploymentId?: string }> {
  let context: WorldContext | undefined;
  return withCoreWorld(
    async (w, core) => {
      context = w.context;
      const affinity = (await checkTableFormat(w.clients.ddb, w.config.tableName)).affinity;
      if (opts.deployment !== undefined && !affinity)
        throw new CliError(
          `--deployment applies to a table with deployment affinity; table ${w.config.tableName} has none (\`eve-world-aws init --deployment-affinity\`)`,
          EXIT_USAGE,
        );
      const workflowId = await resolveWorkflowId(w, query);
      const run = await core.start({ workflowId } as never, args);
      return { runId: run.runId, workflowId, ...(affinity ? { deploymentId: await w.world.getDeploymentId() } : {}) };
    },
    // Chosen when core's start() asks for the id, so a name that matches no workflow costs no wait.
    { deployment: () => chooseDeployment(context as WorldContext, opts.deployment) },
  );
}

export function startCommand(): Command {
  return new Command('start')
    .description("Start a run of a deployed workflow (core's start(), as `wf start` does); your app's consumer runs it")
    .argument('<workflow>', 'the workflow: its name (order) or full id (workflow//./workflows/order//order)')
    .argument('[json...]', "the workflow's arguments, one JSON value each")
    .option(
      '--deployment <id>',
      'on a table with deployment affinity: the deployment to pin the run to (default: the newest with a live consumer)',
    )
    .option('--json', 'print {runId, workflowId, deploymentId} as JSON (deploymentId with deployment affinity)')
    .addHelpText(
      'after',
      `
This command writes the run and sends its first message; the workflow runs in your app's consumer
(eve start, a Lambda), which must be running and have the workflow compiled. A name is looked up
among the newest runs (the workflow must have run before); a full id always works. Needs the
optional peer \`workflow\` (the app's own copy).

On a table with deployment affinity the run is pinned to a deployment of your app: --deployment
<id> (\`eve-world-aws deployments\` lists them), else the newest one whose consumer counts
heartbeats (watched for up to ${LIVENESS_WINDOW_MS / 1000} s). The CLI never registers a deployment of its own.

Examples:
  eve-world-aws start order '{"id":42}'              # one argument
  eve-world-aws start 'workflow//./workflows/order//order' '{"id":42}' 2 --json
  eve-world-aws tail "$(eve-world-aws start order '{"id":42}' --json | jq -r .runId)"
  eve-world-aws start order '{"id":42}' --deployment build:0123456789abcdef

Exit codes: 0 started; 1 no run of that name to take its id from, or (deployment affinity) no
deployment with a live consumer, or --deployment not registered or retired; 2 bad usage (an
argument is not JSON, a name that matches several workflows, --deployment on a table without
affinity), configuration, or \`workflow\` not installed.`,
    )
    .action(async (workflow: string, json: string[], opts: StartOptions) => {
      requirePeers('start', ['workflow']);
      const args = json.map((a, i) => parseJsonArg(`argument ${i + 1}`, a));
      const result = await startWorkflow(workflow, args, { deployment: opts.deployment });
      if (opts.json) printJson(result);
      else
        process.stdout.write(
          `started run ${result.runId} of ${result.workflowId}${result.deploymentId ? ` on deployment ${result.deploymentId}` : ''}\n`,
        );
    });
}
