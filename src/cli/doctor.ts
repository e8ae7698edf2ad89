/**
 * `eve-world-aws doctor`: is this environment ready to run the World? Checks, in order:
 * configuration, variables (every set `EVE_WORLD_AWS_*` the World does not read, with the closest
 * known name), endpoint reachability (custom endpoints only), credentials (one cheap signed call), the table schema, the queue + DLQ and the
 * redrive policy, the bucket, with a scheduler role the schedule group (the same verifier `init`
 * uses, in 'verify' mode: nothing is created), and clock skew against the AWS (or emulator) server; with deployment affinity
 * (or registered deployments), the deployments with active runs, warning on runs no live consumer serves;
 * older builds writing to the table (src/cli/doctor-builds.ts: 0.1.0 after a rollback, a missed process).
 * Prints a pass/fail table with the fix for each failure or warning; exit 1 on any failure (a warning is exit 0).
 *
 * It first says what it checks ({@link DoctorTarget}: region, account when a queue URL shows it,
 * endpoints, resource names and the variable that chose each), and when resources are missing it
 * names the likelier cause before `init`: when NONE of the table, queues and bucket exist, the
 * region, the prefix or a misspelt variable points somewhere else far more often than the
 * resources were never created, and `init` would create a second set; when some exist, `init`
 * creates the rest.
 *
 * Clock skew matters twice: AWS rejects signatures more than 5 minutes off, and long waits are
 * released by comparing `deliverAt` (stamped by the sender's clock) with the consumer's clock.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { Command } from 'commander';
import { type AwsClients, createClients, destroyClients } from '../aws/clients.js';
import { canConnect } from '../aws/net.js';
import { describeError, isAccessDenied, isCredentialsRejected, isNotFound } from '../aws/sdk-errors.js';
import {
  ConfigError,
  closestVariable,
  FORMER_VARIABLES,
  loadConfig,
  nameChosenBy,
  type WorldConfig,
} from '../config/index.js';
import { createContext } from '../context/world-context.js';
import { listDeployments } from '../deployment/registry.js';
import { AwsEnvironmentError, EMULATOR_FIX } from '../preflight/aws-environment.js';
import { type ResourceReport, reconcile } from '../provision/index.js';
import { createTransport } from '../queue/transport.js';
import { deploymentRows, deploymentsCheck } from './deployments.js';
import { checkOlderBuilds } from './doctor-builds.js';
import { parsePositiveInt } from './format.js';
import { exitCodes, type HelpSpec, withHelp } from './help-text.js';
import {
  CliError,
  colorEnabled,
  EXIT_FAILURE,
  fitText,
  palette,
  printJson,
  progress,
  renderTable,
  tableReport,
} from './output.js';

/** `warn`: worth acting on, but the World works (exit 0). */
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface Check {
  check: string;
  status: CheckStatus;
  details: string;
  fix?: string;
}

/** What doctor checked: where the configuration points. */
export interface DoctorTarget {
  /** The region asked: configured (AWS_REGION / AWS_DEFAULT_REGION), or what the SDK resolved. */
  region: string;
  /** The account, when the queue's URL shows it (no STS call); else undefined. */
  account?: string;
  /** The endpoint per service when one is set (emulators, VPC endpoints); empty: the AWS default endpoints. */
  endpoints: Record<string, string>;
  /** Each resource's name and the variable that chose it (`NAME=value`). */
  resources: Record<'table' | 'queue' | 'dlq' | 'bucket', { name: string; chosenBy: string }>;
}

export interface DoctorReport {
  /** Undefined when the configuration itself is invalid. */
  target?: DoctorTarget;
  checks: Check[];
}

export interface DoctorOptions {
  env?: NodeJS.ProcessEnv;
  /** Largest tolerated clock difference (s). */
  maxSkewSeconds?: number;
}

function endpointsText(config: WorldConfig): string {
  const eps = Object.entries(config.endpoints).filter(([, v]) => v);
  return eps.length === 0 ? 'AWS default endpoints' : eps.map(([k, v]) => `${k} ${v}`).join(', ');
}

/** One Date-header sample: the server's time and the local request window around it. */
export interface ClockSample {
  serverDate: string;
  sentAt: number;
  receivedAt: number;
}

/**
 * Skew = server time - local time. The Date header has whole seconds (truncated), so the server's
 * time at the moment it answered lies in [date, date + 1 s), and that moment lies in the local
 * request window [sentAt, receivedAt]. That bounds the skew to an interval; `skewMs` is the end of
 * it nearest zero (0 when the interval contains zero: no skew measurable at this resolution), so
 * only skew that is certain counts against the limit.
 */
export function assessSkew(
  sample: ClockSample,
  maxSkewMs: number,
): { skewMs: number; lowMs: number; highMs: number; ok: boolean } {
  const date = Date.parse(sample.serverDate);
  const lowMs = date - sample.receivedAt;
  const highMs = date + 1000 - sample.sentAt;
  const skewMs = lowMs > 0 ? lowMs : Math.min(highMs, 0);
  return { skewMs, lowMs, highMs, ok: Math.abs(skewMs) <= maxSkewMs };
}

/** Records the Date header and timing of every raw HTTP response of `clients`' DynamoDB client. */
function sampleClock(clients: AwsClients): ClockSample[] {
  const samples: ClockSample[] = [];
  clients.ddb.middlewareStack.add(
    (next) => async (args) => {
      const sentAt = Date.now();
      const out = await next(args);
      const receivedAt = Date.now();
      const headers = (out.response as { headers?: Record<string, string> })?.headers ?? {};
      const date = headers.date ?? headers.Date;
      if (date) samples.push({ serverDate: date, sentAt, receivedAt });
      return out;
    },
    // Innermost (after the deserializer), so error responses are sampled too.
    { step: 'deserialize', priority: 'low', name: 'eveWorldAwsDoctorClock' },
  );
  return samples;
}

/**
 * Custom endpoints (emulators, VPC endpoints) are probed with a plain TCP connect first: the SDK
 * retries a refused connection with backoff for many seconds before it gives up, and it would not
 * say which of the endpoints is down.
 */
async function checkEndpoints(config: WorldConfig): Promise<Check> {
  const check = 'endpoints';
  const { dynamodb, sqs, s3, scheduler } = config.endpoints;
  // The Scheduler only when the World uses it (a scheduler role), like the resource check below.
  const used = { dynamodb, sqs, s3, ...(config.schedulerRoleArn ? { scheduler } : {}) };
  const eps = Object.entries(used).filter((e): e is [string, string] => typeof e[1] === 'string');
  if (eps.length === 0)
    return { check, status: 'pass', details: `AWS default endpoints${config.region ? ` in ${config.region}` : ''}` };
  const down = (
    await Promise.all(eps.map(async ([k, v]) => ((await canConnect(v, 2000)) ? undefined : `${k} ${v}`)))
  ).filter((x): x is string => !!x);
  if (down.length === 0)
    return { check, status: 'pass', details: `${eps.map(([k, v]) => `${k} ${v}`).join(', ')} reachable` };
  return {
    check,
    status: 'fail',
    details: `cannot connect to ${down.join(', ')}`,
    fix: EMULATOR_FIX,
  };
}

async function checkCredentials(clients: AwsClients, config: WorldConfig): Promise<Check> {
  const check = 'credentials';
  try {
    await clients.ddb.send(new DescribeTableCommand({ TableName: config.tableName }));
    return { check, status: 'pass', details: `accepted (${endpointsText(config)})` };
  } catch (err) {
    if (isNotFound(err)) return { check, status: 'pass', details: `accepted (${endpointsText(config)})` };
    // Nothing answering, no region, no credentials: the World's own words for them.
    const region = config.region ?? (await clients.ddb.config.region().catch(() => undefined));
    const env = AwsEnvironmentError.of(config, [{ service: 'dynamodb', error: err }], region);
    if (env) return { check, status: 'fail', details: env.details, fix: env.fix };
    if (isCredentialsRejected(err)) {
      return {
        check,
        status: 'fail',
        details: `credentials rejected (${describeError(err)})`,
        fix: 'refresh or replace the credentials (an expired session, a wrong key or a wrong account)',
      };
    }
    if (isAccessDenied(err)) {
      return {
        check,
        status: 'fail',
        details: `credentials valid but not allowed dynamodb:DescribeTable on ${config.tableName}`,
        fix: 'attach the policy printed by `eve-world-aws init --print-iam-policy` (plus Describe* for doctor)',
      };
    }
    return {
      check,
      status: 'fail',
      details: describeError(err),
      fix: 'see the error; EVE_WORLD_AWS_DEBUG=1 shows details',
    };
  }
}

const RESOURCE_LABEL: Record<ResourceReport['kind'], string> = {
  table: 'table schema',
  dlq: 'dead-letter queue',
  queue: 'queue + redrive policy',
  bucket: 'bucket',
  'schedule-group': 'schedule group',
  encryption: 'KMS encryption',
};

function resourceChecks(reports: ResourceReport[]): Check[] {
  return reports.map((r) => ({
    check: RESOURCE_LABEL[r.kind],
    status: r.state === 'present' ? 'pass' : 'fail',
    // One line per detail (the hardening settings are several), so the table stays readable.
    details: `${r.name}: ${r.state === 'present' ? '' : `${r.state}; `}${r.details.join('\n')}`,
    fix: r.state === 'present' ? undefined : r.fix,
  }));
}

/** The set `EVE_WORLD_AWS_*` variables the World does not read: a failed check naming each with what to do. */
export function variablesCheck(config: Pick<WorldConfig, 'ignoredVariables'>): Check {
  const check = 'variables';
  if (config.ignoredVariables.length === 0)
    return { check, status: 'pass', details: 'every set EVE_WORLD_AWS_* variable is one this World reads' };
  const each = config.ignoredVariables.map((name) => {
    const option = FORMER_VARIABLES[name];
    return option
      ? { details: `${name} is no longer read`, fix: `unset ${name} (now createWorld({ tuning: { ${option} } }))` }
      : {
          details: `${name} is not a variable of this World (did you mean ${closestVariable(name)}?)`,
          fix: `rename ${name} to ${closestVariable(name)}, or unset it`,
        };
  });
  return {
    check,
    status: 'fail',
    details: `${each.map((e) => e.details).join('\n')}\nignored: the names the World reads are in docs/configuration.md`,
    fix: each.map((e) => e.fix).join('; '),
  };
}

/** Where `config` points: region (resolved by the SDK when not configured), endpoints, names. No network. */
async function describeTarget(config: WorldConfig, clients: AwsClients): Promise<DoctorTarget> {
  const region = config.region ?? (await clients.ddb.config.region().catch(() => '(none configured)'));
  const named = (setting: 'tableName' | 'queue' | 'deadLetterQueue' | 'bucket') => ({
    name: config[setting],
    chosenBy: nameChosenBy(config, setting),
  });
  return {
    region,
    endpoints: Object.fromEntries(Object.entries(config.endpoints).filter((e): e is [string, string] => !!e[1])),
    resources: {
      table: named('tableName'),
      queue: named('queue'),
      dlq: named('deadLetterQueue'),
      bucket: named('bucket'),
    },
  };
}

/**
 * The account without STS, once the endpoints answer: a queue URL carries it
 * (`https://sqs.<region>.amazonaws.com/<account>/<name>`); undefined when the queue does not exist.
 */
async function accountOf(config: WorldConfig, clients: AwsClients): Promise<string | undefined> {
  const url = await createTransport(createContext(config, clients))
    .queueUrl()
    .catch(() => undefined);
  return url ? /\/(\d{12})\/[^/]+\/?$/.exec(url)?.[1] : undefined;
}

/**
 * The target as doctor prints it above its table: the region line, then the resource names with
 * the variable that chose them, each variable said once (all four usually come from the prefix).
 */
export function renderTarget(t: DoctorTarget): string {
  const eps = Object.entries(t.endpoints);
  const byVariable = new Map<string, string[]>();
  for (const [kind, r] of Object.entries(t.resources))
    byVariable.set(r.chosenBy, [...(byVariable.get(r.chosenBy) ?? []), `${kind} ${r.name}`]);
  const names = [...byVariable]
    .map(([chosenBy, named]) => `${named.join(', ')} (named by ${chosenBy.replace(/ \((the default)\)$/, ', $1')})`)
    .join('; ');
  return [
    `Region ${t.region}${t.account ? `, account ${t.account}` : ''}; ${eps.length === 0 ? 'AWS default endpoints' : `endpoints ${eps.map(([k, v]) => `${k} ${v}`).join(', ')}`}`,
    `Resources: ${names}`,
  ].join('\n');
}

const CORE_RESOURCES = ['table schema', 'dead-letter queue', 'queue + redrive policy', 'bucket'];

/**
 * When none of the table, queues and bucket exist, the likelier cause is where the configuration
 * points (region, prefix, a misspelt variable), not that they were never created: each missing
 * check's fix says so before `init`. When some exist, `init` (creating the rest) stays the fix.
 */
function likelierCause(checks: Check[], config: WorldConfig, target: DoctorTarget): void {
  const core = checks.filter((c) => CORE_RESOURCES.includes(c.check));
  const missing = core.filter((c) => c.status === 'fail' && /: missing/.test(c.details));
  if (core.length === 0 || missing.length !== core.length) return;
  const typos = config.ignoredVariables.filter((v) => FORMER_VARIABLES[v] === undefined);
  const where = `${config.region ? 'AWS_REGION' : 'the region'} (${target.region}${target.account ? `, account ${target.account}` : ''}${Object.keys(target.endpoints).length > 0 ? `, endpoints ${Object.values(target.endpoints).join(', ')}` : ''})`;
  const fix =
    `none of the resources exist here: first check ${typos.length > 0 ? `${typos.map((v) => `${v} (did you mean ${closestVariable(v)}?)`).join(', ')}, ` : ''}` +
    `${where} and EVE_WORLD_AWS_PREFIX (${config.prefix}): the resources are likelier elsewhere than never created. ` +
    'Run `eve-world-aws init` only to create a new set here';
  for (const c of missing) c.fix = fix;
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
    for (const c of [
      'variables',
      'endpoints',
      'credentials',
      'table schema',
      'dead-letter queue',
      'queue + redrive policy',
      'bucket',
      'clock skew',
    ]) {
      checks.push({ check: c, status: 'skip', details: 'needs a valid configuration' });
    }
    return { checks };
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
  if (eps.status !== 'pass') {
    for (const c of [
      'credentials',
      'table schema',
      'dead-letter queue',
      'queue + redrive policy',
      'bucket',
      'clock skew',
    ]) {
      checks.push({ check: c, status: 'skip', details: 'needs reachable endpoints' });
    }
    return checks;
  }

  const samples = sampleClock(clients);
  const cred = await checkCredentials(clients, config);
  checks.push(cred);
  if (cred.status !== 'pass') {
    for (const c of ['table schema', 'dead-letter queue', 'queue + redrive policy', 'bucket', 'clock skew']) {
      checks.push({ check: c, status: 'skip', details: 'needs working credentials' });
    }
    return checks;
  }
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
    const deployments = await checkDeployments(config, clients);
    if (deployments) checks.push(deployments);
    checks.push(await checkOlderBuilds(config, clients));
  }
  return checks;
}

/** The deployments check: only with affinity on or deployments registered (else undefined). */
async function checkDeployments(config: WorldConfig, clients: AwsClients): Promise<Check | undefined> {
  const ctx = createContext(config, clients);
  try {
    if (config.deploymentAffinity !== 'on' && (await listDeployments(ctx)).length === 0) return undefined;
    return deploymentsCheck(await deploymentRows(ctx));
  } catch (err) {
    return {
      check: 'deployments',
      status: 'warn',
      details: `could not read the deployment registry or the runs: ${describeError(err)}`,
      fix: 'check the permissions (`eve-world-aws init --print-iam-policy --operator`)',
    };
  }
}

export function clockCheck(samples: ClockSample[], maxSkewMs: number): Check {
  if (samples.length === 0) return { check: 'clock skew', status: 'skip', details: 'the server sent no Date header' };
  // The fastest round trip gives the tightest bound.
  const best = samples.reduce((a, b) => (b.receivedAt - b.sentAt < a.receivedAt - a.sentAt ? b : a));
  const { skewMs, ok } = assessSkew(best, maxSkewMs);
  const resolution = ((best.receivedAt - best.sentAt + 1000) / 1000).toFixed(1);
  const text =
    skewMs === 0
      ? `in sync with the server (to within ${resolution} s, the Date header's resolution)`
      : `local clock ${skewMs > 0 ? 'behind' : 'ahead'} by at least ${(Math.abs(skewMs) / 1000).toFixed(1)} s`;
  return ok
    ? { check: 'clock skew', status: 'pass', details: text }
    : {
        check: 'clock skew',
        status: 'fail',
        details: `${text}; limit ${maxSkewMs / 1000} s`,
        fix: 'synchronise the clock (NTP, e.g. `timedatectl set-ntp true` or chrony); AWS rejects requests over 5 minutes off and long waits fire early or late by the skew',
      };
}

export function renderChecks(checks: Check[], color = colorEnabled()): string {
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
      ? `All ${checks.filter((c) => c.status === 'pass').length} checks passed${warned > 0 ? ` (${warned} warning${warned === 1 ? '' : 's'} above)` : ''}.`
      : `${failed} check${failed === 1 ? '' : 's'} failed (see the fix above).`,
  );
  return tableReport(out);
}

interface DoctorCliOptions {
  json?: boolean;
  maxSkew: number;
}

/** `--help`: notes, examples and exit codes (src/cli/help-text.ts). */
const DOCTOR_HELP: HelpSpec = {
  notes: [
    'Read-only: nothing is created or changed (`eve-world-aws init` does that). It first says what it checks: the region, the account, the endpoints and each resource name with the variable that chose it.',
    'With deployment affinity, the "deployments" check lists the deployments with active runs and warns (exit 0) when one has no live consumer: its runs wait until a process of that build runs again.',
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
    .action(async (opts: DoctorCliOptions) => {
      const spin = progress('Checking...');
      let report: DoctorReport;
      try {
        report = await runDoctorReport({ maxSkewSeconds: opts.maxSkew });
      } finally {
        spin.done();
      }
      const { target, checks } = report;
      const ok = checks.every((c) => c.status !== 'fail');
      if (opts.json) printJson({ ok, ...(target ? { target } : {}), checks });
      else process.stdout.write(`${target ? `${fitText(renderTarget(target))}\n` : ''}${renderChecks(checks)}`);
      if (!ok) throw new CliError('', EXIT_FAILURE);
    });
}
