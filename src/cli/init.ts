/**
 * `eve-world-aws init`: create or verify the table, the queue + DLQ and the bucket the World uses,
 * and with a scheduler role its own schedule group. Idempotent (a second run reports everything
 * present and changes nothing); drift is an error with the fix, never silently accepted. The
 * reconciler is src/provision/ (shared with `emulate` and `doctor`): this file is flags and output.
 */
import { Command, InvalidArgumentError } from 'commander';
import { partitionOf } from '../aws/arn.js';
import { createClients, destroyClients } from '../aws/clients.js';
import { loadConfig, type WorldConfig } from '../config/index.js';
import { principalPolicy, schedulerRolePolicies } from '../provision/iam-policy.js';
import {
  hasProblems,
  type ReconcileMode,
  type ResourceReport,
  reconcile,
  sharedScheduleGroupWarning,
} from '../provision/index.js';
import { AFFINITY_MIN_READER } from '../schema/formats.js';
import { assertNoRunToStrand } from './affinity-init.js';
import { exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import {
  CliError,
  EXIT_FAILURE,
  EXIT_USAGE,
  type Label,
  paintLabel,
  palette,
  printJson,
  progress,
  renderTable,
  tableReport,
} from './shared/output.js';
import { explainAwsError } from './shared/world.js';

/** Create (apply) or plan (dry-run) every resource with a spinner; maps fixable AWS errors. */
export async function runReconcile(
  config: WorldConfig,
  mode: ReconcileMode,
  options: { minReader?: number; affinity?: boolean } = {},
): Promise<ResourceReport[]> {
  const clients = createClients(config);
  const spin = progress(mode === 'dry-run' ? 'Checking resources (dry run)...' : 'Creating or verifying resources...');
  try {
    return await reconcile(clients, config, mode, options);
  } catch (err) {
    throw explainAwsError(err, config);
  } finally {
    spin.done();
    destroyClients(clients);
  }
}

const STATE_LABEL: Record<ResourceReport['state'], Label> = {
  present: ['present'],
  created: ['created', 'green'],
  updated: ['fixed', 'green'],
  'would-create': ['would create', 'yellow'],
  'would-update': ['would fix', 'yellow'],
  missing: ['missing', 'red'],
  drift: ['DRIFT', 'red'],
};

/** Human report: a table, the fix for every problem, and a one-line summary. */
export function renderReports(reports: ResourceReport[], mode: ReconcileMode): string {
  const p = palette();
  const out = [
    renderTable(
      ['Resource', 'Name', 'State', 'Details'],
      reports.map((r) => [r.kind, r.name, paintLabel(p, STATE_LABEL[r.state]), r.details.join('\n')]),
    ),
  ];
  for (const r of reports.filter((x) => x.fix))
    out.push(`${p.red('x')} ${r.kind} ${r.name}: ${r.details.join('; ')}\n  fix: ${r.fix}`);
  out.push(summary(reports, mode));
  return tableReport(out);
}

export function summary(reports: ResourceReport[], mode: ReconcileMode): string {
  const count = (s: ResourceReport['state']) => reports.filter((r) => r.state === s).length;
  const n = (k: number) => `${k} resource${k === 1 ? '' : 's'}`;
  const bad = count('drift') + count('missing');
  if (bad > 0) return `${n(bad)} need attention (see the fix above).`;
  if (mode === 'dry-run') {
    const todo = count('would-create');
    const fix = count('would-update');
    if (todo + fix === 0) return `Dry run: all ${n(reports.length)} present; nothing to do.`;
    const plan = [todo > 0 ? `create ${n(todo)}` : '', fix > 0 ? `fix settings of ${n(fix)}` : '']
      .filter(Boolean)
      .join(' and ');
    return `Dry run: would ${plan}; nothing was changed.`;
  }
  const created = count('created');
  const updated = count('updated');
  if (created + updated === 0) return `All ${n(reports.length)} present; nothing changed.`;
  if (updated === 0) return `Created ${n(created)}; ${count('present')} already present.`;
  return `Created ${n(created)}, fixed settings of ${n(updated)}; ${count('present')} already present.`;
}

/** The caveat of an explicit shared schedule group, on stderr (stdout stays the report or the JSON). */
function warnSharedScheduleGroup(config: WorldConfig): void {
  const warning = sharedScheduleGroupWarning(config);
  if (warning) process.stderr.write(`warning: ${warning}\n`);
}

function parseAccount(v: string): string {
  if (!/^\d{12}$/.test(v)) throw new InvalidArgumentError('must be a 12-digit AWS account id, e.g. 123456789012.');
  return v;
}

interface InitOptions {
  dryRun?: boolean;
  json?: boolean;
  printIamPolicy?: boolean;
  operator?: boolean;
  schedulerRole?: boolean;
  deployer?: boolean;
  account?: string;
  deploymentAffinity?: boolean;
  force?: boolean;
}

const INIT_HELP: HelpSpec = {
  notes: [
    "Names come from the environment (EVE_WORLD_AWS_PREFIX, EVE_WORLD_AWS_TABLE, ...), endpoints from AWS_ENDPOINT_URL_* (set by `eve-world-aws emulate`), credentials from the standard AWS chain. With EVE_WORLD_AWS_SCHEDULER_ROLE_ARN it also creates the World's own EventBridge Scheduler schedule group (EVE_WORLD_AWS_SCHEDULER_GROUP, default: the prefix); an explicit `default` (the account's shared group) is used as it is, with a warning.",
    "The bucket's lifecycle rule expires queue bodies under queue/; nothing expires orphaned run payloads or held bodies of very long waits: schedule `eve-world-aws sweep` daily.",
    'With --deployment-affinity the table records that runs finish on the deployment that started them: every process of this build on it then takes part (running ones within one heartbeat, 5 s) or refuses to start, whatever EVE_WORLD_AWS_DEPLOYMENT_AFFINITY says; it refuses while runs are active (they would fail) unless --force. The order, step by step: docs/operations.md, "Deployment affinity".',
  ],
  examples: [
    ['eve-world-aws init', 'create or fix'],
    ['eve-world-aws init --dry-run', 'the plan only'],
    ['eve-world-aws init --print-iam-policy --operator', 'for doctor, tail'],
    ['eve-world-aws init --deployment-affinity', 'pin runs to their build'],
  ],
  exitCodes: exitCodes(
    'every resource present, created or fixed',
    'drift or missing (the fix is printed), or an AWS error',
  ),
};

export function initCommand(): Command {
  return withHelp(new Command('init'), INIT_HELP)
    .description(
      'Create or verify the DynamoDB table, the SQS queue and its DLQ, the S3 bucket and, with a scheduler role, the schedule group (idempotent)',
    )
    .option('--dry-run', 'print what would be created and change nothing')
    .option('--json', 'print the result as JSON (for scripts)')
    .option('--print-iam-policy', 'print the least-privilege IAM policy the World needs at run time, and exit')
    .option(
      '--operator',
      'with --print-iam-policy: the operator policy (doctor, redrive, tail; the only one with DLQ access)',
    )
    .option(
      '--deployer',
      'with --print-iam-policy: the policy `init` itself needs (create, harden, put under the KMS key)',
    )
    .option(
      '--scheduler-role',
      "with --print-iam-policy: the EventBridge Scheduler role's trust policy and permissions",
    )
    .option('--account <id>', 'AWS account id to put in the IAM policy ARNs (default: <account-id>)', parseAccount)
    .option(
      '--deployment-affinity',
      `record deployment affinity on the table (every process of this build takes part); refuses readers older than format ${AFFINITY_MIN_READER}, which ignore a message's deployment (stop them first), and a table with active runs`,
    )
    .option('--force', 'with --deployment-affinity: record it even though runs are active (each fails)')
    .action(async (opts: InitOptions) => {
      const config = loadConfig(process.env);
      if (opts.printIamPolicy) {
        const region = config.region ?? '<region>';
        const target = { partition: partitionOf(config.region), region, account: opts.account ?? '<account-id>' };
        warnSharedScheduleGroup(config);
        if (opts.schedulerRole) printJson(schedulerRolePolicies(config, target));
        else
          printJson(principalPolicy(opts.operator ? 'operator' : opts.deployer ? 'init' : 'runtime', config, target));
        return;
      }
      if (opts.operator || opts.schedulerRole || opts.deployer)
        throw new CliError('--operator, --deployer and --scheduler-role only go with --print-iam-policy', EXIT_USAGE);
      if (opts.force && !opts.deploymentAffinity)
        throw new CliError('--force only goes with --deployment-affinity', EXIT_USAGE);
      warnSharedScheduleGroup(config);
      const mode: ReconcileMode = opts.dryRun ? 'dry-run' : 'apply';
      if (opts.deploymentAffinity && mode === 'apply')
        await assertNoRunToStrand(config, opts.force === true).catch((err) => {
          throw explainAwsError(err, config);
        });
      const reports = await runReconcile(
        config,
        mode,
        opts.deploymentAffinity ? { minReader: AFFINITY_MIN_READER, affinity: true } : {},
      );
      const ok = !hasProblems(reports);
      if (opts.json) printJson({ ok, mode, resources: reports });
      else process.stdout.write(renderReports(reports, mode));
      // The report already explains the problem; only the exit code is left to set.
      if (!ok) throw new CliError('', EXIT_FAILURE);
    });
}
