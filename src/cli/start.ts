/**
 * `eve-world-aws start <workflow> [json...]`: start a run of a workflow your app has deployed, as
 * `wf start` does, through core's `start()` on this World (src/cli/core-world.ts). Core needs only
 * the workflow's id, not its code: it writes `run_created` and sends the run's first message; the
 * app's consumer (eve start, a Lambda), which has the compiled workflow, runs it. So this command
 * fits the DevKit's model as long as the id is known:
 *
 * - a full id (`workflow//./workflows/order//order`, from the app's manifest or `runs`) is used as
 *   is, even for a workflow that has never run;
 * - a name (`order`) is looked up in the app's workflow manifest (`--manifest <path>`, else the one
 *   its build wrote, searched from the current folder: src/cli/workflow-manifest.ts), so a workflow
 *   starts before it has ever run; a name the manifest does not have (or no manifest) is looked up
 *   among the newest runs (src/cli/runs.ts, `listRuns`). It must name exactly one workflow: several
 *   are listed (exit 2), none gets the near names as a hint (exit 1).
 *
 * Each argument is one JSON value, passed to the workflow in order (as `wf start` does). The CLI is
 * no deployment (src/cli/shared/world.ts opens a client World): on a table without deployment
 * affinity the run carries the one id every process reports and whichever consumer serves the queue
 * runs it; on a table with affinity it is pinned where src/cli/start-target.ts chooses.
 */
import { Command } from 'commander';
import type { WorldContext } from '../context/world-context.js';
import { checkTableFormat } from '../preflight/format-check.js';
import { parseJsonArg, withCoreWorld } from './core-world.js';
import { WINDOW_S } from './deployments.js';
import { requirePeers } from './peers.js';
import { listRuns, SCAN_LIMIT } from './runs.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, EXIT_USAGE, printJson } from './shared/output.js';
import type { CliWorld } from './shared/world.js';
import { chooseDeployment } from './start-target.js';
import { loadManifest, type WorkflowManifest } from './workflow-manifest.js';
import { describeWorkflow, isFullWorkflowName, nearWorkflows } from './workflow-names.js';

/** Runs of a short name read to find the workflows it names. */
const LOOKUP_RUNS = 100;

/** The full workflow id `query` names, from `manifest` first, else from earlier runs (see the header). */
async function resolveWorkflowId(w: CliWorld, query: string, manifest?: WorkflowManifest): Promise<string> {
  if (isFullWorkflowName(query)) return query;
  const declared = manifest?.workflows.filter((m) => m.name === query) ?? [];
  if (declared.length === 1) return declared[0].workflowId;
  if (declared.length > 1)
    throw new CliError(
      `"${query}" names ${declared.length} workflows in ${manifest?.path} (${declared.map((m) => m.workflowId).join(', ')}): pass one of these full ids`,
      EXIT_USAGE,
    );
  const { runs, names } = await listRuns(w.world.runs as never, { workflow: query, limit: LOOKUP_RUNS });
  const ids = [...new Set(runs.map((r) => r.workflowName))];
  if (ids.length === 1) return ids[0];
  if (ids.length > 1)
    throw new CliError(
      `"${query}" names ${ids.length} workflows (${ids.join(', ')}): pass one of these full ids`,
      EXIT_USAGE,
    );
  const near = nearWorkflows(query, [...(manifest?.workflows.map((m) => m.workflowId) ?? []), ...(names ?? [])]);
  const where = manifest
    ? `in ${manifest.path}`
    : `in an app manifest (none found from ${process.cwd()}: pass --manifest <path>)`;
  throw new CliError(
    `no workflow named "${query}" ${where} nor among the newest ${SCAN_LIMIT} runs in table ${w.config.tableName}` +
      `${near.length > 0 ? `; did you mean ${near.map(describeWorkflow).join(', ')}?` : ''} ` +
      "Names match exactly; else pass its full id (workflow//<file>//<export>, as in your app's .well-known/workflow/v1/manifest.json)",
  );
}

async function startWorkflow(
  query: string,
  args: unknown[],
  manifest?: WorkflowManifest,
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
      const workflowId = await resolveWorkflowId(w, query, manifest);
      const run = await core.start({ workflowId } as never, args);
      return { runId: run.runId, workflowId, ...(affinity ? { deploymentId: await w.world.getDeploymentId() } : {}) };
    },
    // Chosen when core's start() asks for the id, so a name that matches no workflow costs no wait.
    { deployment: () => chooseDeployment(context as WorldContext, opts.deployment) },
  );
}

const START_HELP: HelpSpec = {
  notes: [
    "This command writes the run and sends its first message; the workflow runs in your app's consumer (eve start, a Lambda), which must be running and have the workflow compiled. A name is looked up in the app's workflow manifest (`--manifest`, else .well-known/workflow/v1/manifest.json from `wf build`, searched from this folder up to the project root), then among the newest runs; a full id always works. Needs the optional peer `workflow` (the app's own copy).",
    `On a table with deployment affinity the run is pinned to a deployment of your app: --deployment <id> (\`eve-world-aws deployments\` lists them), else the newest one whose consumer counts heartbeats (watched for up to ${WINDOW_S} s). The CLI never registers a deployment of its own.`,
  ],
  examples: [
    ['eve-world-aws start order \'{"id":42}\'', 'one argument'],
    ["eve-world-aws start 'workflow//./workflows/order//order' '{\"id\":42}' 2 --json"],
    ['eve-world-aws start order --manifest web/.well-known/workflow/v1/manifest.json', 'name from a manifest'],
    ['eve-world-aws tail "$(eve-world-aws start order --json | jq -r .runId)"'],
    ['eve-world-aws start order --deployment build:0123456789abcdef', 'deployment affinity'],
  ],
  exitCodes: exitCodes(
    'started',
    'no workflow of that name (the near names are listed); with deployment affinity, no deployment with a live consumer, or --deployment not registered or retired',
    `${CONFIG_ERROR}; an argument that is not JSON, a name that matches several workflows, an unreadable --manifest, --deployment on a table without affinity, or \`workflow\` not installed`,
  ),
};

export function startCommand(): Command {
  return withHelp(new Command('start'), START_HELP)
    .description("Start a run of a deployed workflow (core's start(), as `wf start` does); your app's consumer runs it")
    .argument('<workflow>', 'the workflow: its name (order) or full id (workflow//./workflows/order//order)')
    .argument('[json...]', "the workflow's arguments, one JSON value each")
    .option('--manifest <path>', "the app's workflow manifest (default: the one its build wrote, searched from here)")
    .option(
      '--deployment <id>',
      'on a table with deployment affinity: the deployment to pin the run to (default: the newest with a live consumer)',
    )
    .option('--json', 'print {runId, workflowId} as JSON (and deploymentId with deployment affinity)')
    .action(
      async (workflow: string, json: string[], opts: { json?: boolean; manifest?: string; deployment?: string }) => {
        requirePeers('start', ['workflow']);
        const args = json.map((a, i) => parseJsonArg(`argument ${i + 1}`, a));
        // A full id needs no manifest, but a named one is still checked.
        const manifest =
          opts.manifest !== undefined || !isFullWorkflowName(workflow) ? loadManifest(opts.manifest) : undefined;
        const result = await startWorkflow(workflow, args, manifest, { deployment: opts.deployment });
        if (opts.json) printJson(result);
        else
          process.stdout.write(
            `started run ${result.runId} of ${result.workflowId}${result.deploymentId ? ` on deployment ${result.deploymentId}` : ''}\n`,
          );
      },
    );
}
