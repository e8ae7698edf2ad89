/**
 * `eve-world-aws doctor`: is this environment ready to run the World? Read-only (the resources are
 * checked by `init`'s verifier in 'verify' mode). This file runs the checks in {@link CHECK_ORDER}
 * (a failed one skips those after it), then the fleet's and the older builds' on a table that
 * exists, and prints a pass/fail table with the fix for each failure or warning; exit 1 on any
 * failure (a warning is exit 0). The checks: src/cli/doctor-checks.ts (variables, endpoints,
 * credentials, resources), src/cli/doctor-clock.ts (clock skew), src/cli/fleet-checks.ts
 * (deployment affinity), src/cli/doctor-builds.ts (older builds); what it says it checks, with the
 * likelier cause of missing resources: src/cli/doctor-target.ts.
 */
import { Command } from 'commander';
import { type AwsClients, createClients, destroyClients } from '../aws/clients.js';
import { describeError } from '../aws/sdk-errors.js';
import { ConfigError, loadConfig, type WorldConfig } from '../config/index.js';
import { createContext } from '../context/world-context.js';
import { reconcile } from '../provision/index.js';
import { checkOlderBuilds } from './doctor-builds.js';
import {
  type Check,
  type CheckStatus,
  checkCredentials,
  checkEndpoints,
  resourceChecks,
  variablesCheck,
} from './doctor-checks.js';
import { clockCheck, sampleClock } from './doctor-clock.js';
import { accountOf, type DoctorTarget, describeTarget, likelierCause, renderTarget } from './doctor-target.js';
import { fleetChecks } from './fleet-checks.js';
import { parsePositiveInt, plural } from './shared/format.js';
import { exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import {
  CliError,
  colorEnabled,
  EXIT_FAILURE,
  fitText,
  palette,
  printJson,
  renderTable,
  tableReport,
  withProgress,
} from './shared/output.js';

export interface DoctorReport {
  /** Undefined when the configuration itself is invalid. */
  target?: DoctorTarget;
  checks: Check[];
}

export interface DoctorOptions {
  env?: NodeJS.ProcessEnv;
  /** Largest tolerated clock difference (s). */
  maxSkewSeconds?: number;
  /** Progress while deployments' heartbeats are watched (ms so far). */
  onPoll?: (ms: number) => void;
}

/** The checks in the order they run, up to the clock: a failed one skips those after it. */
const CHECK_ORDER = [
  'configuration',
  'variables',
  'endpoints',
  'credentials',
  'table schema',
  'dead-letter queue',
  'queue + redrive policy',
  'bucket',
  'clock skew',
];

/** The checks after `failed`, skipped for the reason given. */
function skipAfter(failed: string, details: string): Check[] {
  return CHECK_ORDER.slice(CHECK_ORDER.indexOf(failed) + 1).map((check) => ({ check, status: 'skip', details }));
}

export async function runDoctor(opts: DoctorOptions = {}): Promise<Check[]> {
  return (await runDoctorReport(opts)).checks;
}

/** {@link runDoctor} with what it checked. */
export async function runDoctorReport(opts: DoctorOptions = {}): Promise<DoctorReport> {
  const checks: Check[] = [];
  let config: WorldConfig;
  try {
    config = loadConfig(opts.env ?? process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    checks.push({
      check: 'configuration',
      status: 'fail',
      details: err.message,
      fix: `set ${err.variable} to a valid value (example in the message)`,
    });
    return { checks: [...checks, ...skipAfter('configuration', 'needs a valid configuration')] };
  }
  checks.push({
    check: 'configuration',
    status: 'pass',
    details: `region ${config.region ?? '(SDK default)'}; table ${config.tableName}; queue ${config.queue}; dlq ${config.deadLetterQueue}; bucket ${config.bucket}`,
  });
  checks.push(variablesCheck(config));

  const clients = createClients(config);
  const target = await describeTarget(config, clients);
  try {
    return { target, checks: await checkResources(config, clients, checks, target, opts) };
  } finally {
    destroyClients(clients);
  }
}

async function checkResources(
  config: WorldConfig,
  clients: AwsClients,
  checks: Check[],
  target: DoctorTarget,
  opts: DoctorOptions,
): Promise<Check[]> {
  const eps = await checkEndpoints(config);
  checks.push(eps);
  if (eps.status !== 'pass') return [...checks, ...skipAfter('endpoints', 'needs reachable endpoints')];

  const samples = sampleClock(clients);
  const cred = await checkCredentials(clients, config);
  checks.push(cred);
  if (cred.status !== 'pass') return [...checks, ...skipAfter('credentials', 'needs working credentials')];
  const account = await accountOf(config, clients);
  if (account) target.account = account;
  try {
    checks.push(...resourceChecks(await reconcile(clients, config, 'verify')));
    likelierCause(checks, config, target);
  } catch (err) {
    checks.push({
      check: 'resources',
      status: 'fail',
      details: `could not verify: ${describeError(err)}`,
      fix: 'check the permissions (`eve-world-aws init --print-iam-policy`) and endpoints',
    });
  }
  checks.push(clockCheck(samples, (opts.maxSkewSeconds ?? 5) * 1000));
  if (checks.find((c) => c.check === 'table schema')?.status === 'pass') {
    // The fleet (deployment affinity): where a process would refuse, the deployments' consumers.
    checks.push(...(await fleetChecks(createContext(config, clients), opts.onPoll)));
    checks.push(await checkOlderBuilds(config, clients));
  }
  return checks;
}

function renderChecks(checks: Check[], color = colorEnabled()): string {
  const p = palette(color);
  const paint = (s: CheckStatus) =>
    s === 'pass' ? p.green('pass') : s === 'fail' ? p.red('FAIL') : s === 'warn' ? p.yellow('warn') : p.dim('skip');
  const out = [
    renderTable(
      ['Check', 'Result', 'Details'],
      checks.map((c) => [c.check, paint(c.status), c.details]),
      color,
    ),
  ];
  for (const c of checks.filter((x) => x.status === 'fail'))
    out.push(`${p.red('x')} ${c.check}: ${c.details}\n  fix: ${c.fix ?? 'see the details'}`);
  for (const c of checks.filter((x) => x.status === 'warn'))
    out.push(`${p.yellow('!')} ${c.check}: ${c.fix ?? c.details}`);
  const failed = checks.filter((c) => c.status === 'fail').length;
  const warned = checks.filter((c) => c.status === 'warn').length;
  out.push(
    failed === 0
      ? `All ${checks.filter((c) => c.status === 'pass').length} checks passed${warned > 0 ? ` (${plural(warned, 'warning')} above)` : ''}.`
      : `${plural(failed, 'check')} failed (see the fix above).`,
  );
  return tableReport(out);
}

const DOCTOR_HELP: HelpSpec = {
  notes: [
    'Read-only: nothing is created or changed (`eve-world-aws init` does that). It first says what it checks: the region, the account, the endpoints and each resource name with the variable that chose it.',
    'With deployment affinity (recorded on the table), the "deployment affinity" check fails where a process with this environment would refuse to start (e.g. a Lambda $LATEST, or a table that still admits readers older than affinity) and warns when EVE_WORLD_AWS_DEPLOYMENT_AFFINITY disagrees with the table (processes ignore it). The "deployments" check watches every deployment\'s heartbeat counter (up to 12 s), lists those with active runs and warns (exit 0) when one has no live consumer (its runs wait until a process of that build runs again) or a retired one still runs.',
    'The "older builds" check reads the newest and the active runs\' format stamps and names a build older than the table\'s format that writes to it (0.1.0 after a rollback, or a process an upgrade missed): a warning, or a failure where the table allows no reader that old (after init --deployment-affinity).',
  ],
  examples: [['eve-world-aws doctor'], ['eve-world-aws doctor --json | jq \'.checks[] | select(.status=="fail")\'']],
  exitCodes: exitCodes(
    'every check passed (warnings too)',
    'a check failed (its fix is printed; a bad setting is a failed check)',
    'bad usage',
  ),
};

export function doctorCommand(): Command {
  return withHelp(new Command('doctor'), DOCTOR_HELP)
    .description(
      'Check configuration, credentials, table, queues and redrive policy, bucket, schedule group (with a scheduler role) and clock skew',
    )
    .option('--json', 'print {ok, target, checks: [...]} as JSON (target: region, account, endpoints, resource names)')
    .option('--max-skew <seconds>', 'largest tolerated clock difference with the AWS server', parsePositiveInt, 5)
    .action(async (opts: { json?: boolean; maxSkew: number }) => {
      const { target, checks } = await withProgress('Checking...', (spin) =>
        runDoctorReport({
          maxSkewSeconds: opts.maxSkew,
          onPoll: (ms) => spin.update(`Checking deployments' heartbeats: ${Math.floor(ms / 1000)} s...`),
        }),
      );
      const ok = checks.every((c) => c.status !== 'fail');
      if (opts.json) printJson({ ok, ...(target ? { target } : {}), checks });
      else process.stdout.write(`${target ? `${fitText(renderTarget(target))}\n` : ''}${renderChecks(checks)}`);
      if (!ok) throw new CliError('', EXIT_FAILURE);
    });
}
