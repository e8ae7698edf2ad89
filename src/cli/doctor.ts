/**
 * `eve-world-aws doctor`: is this environment ready to run the World? Checks, in order:
 * configuration, endpoint reachability (custom endpoints only), credentials (one cheap signed call), the table schema, the queue + DLQ and the
 * redrive policy, the bucket, with a scheduler role the schedule group (the same verifier `init`
 * uses, in 'verify' mode: nothing is created), and clock skew against the AWS (or emulator) server. Prints a pass/fail table with the
 * fix for each failure; exit 1 on any failure.
 *
 * Clock skew matters twice: AWS rejects signatures more than 5 minutes off, and long waits are
 * released by comparing `deliverAt` (stamped by the sender's clock) with the consumer's clock.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { Command } from 'commander';
import { type AwsClients, createClients, destroyClients } from '../aws/clients.js';
import {
  describeError,
  isAccessDenied,
  isCredentialsMissing,
  isCredentialsRejected,
  isNotFound,
  isRegionMissing,
  unreachableCode,
} from '../aws/errors.js';
import { canConnect } from '../aws/net.js';
import { ConfigError, loadConfig, type WorldConfig } from '../config.js';
import { type ResourceReport, reconcile } from '../provision/index.js';
import { parsePositiveInt } from './format.js';
import { CliError, colorEnabled, EXIT_FAILURE, palette, printJson, progress, renderTable } from './output.js';

export type CheckStatus = 'pass' | 'fail' | 'skip';

export interface Check {
  check: string;
  status: CheckStatus;
  details: string;
  fix?: string;
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
    fix: 'start the emulator (`eve-world-aws emulate`) and export the lines it prints, or fix AWS_ENDPOINT_URL_*',
  };
}

async function checkCredentials(clients: AwsClients, config: WorldConfig): Promise<Check> {
  const check = 'credentials';
  try {
    await clients.ddb.send(new DescribeTableCommand({ TableName: config.tableName }));
    return { check, status: 'pass', details: `accepted (${endpointsText(config)})` };
  } catch (err) {
    const e = err as { message?: string };
    const code = unreachableCode(err);
    if (isNotFound(err)) return { check, status: 'pass', details: `accepted (${endpointsText(config)})` };
    if (code) {
      return {
        check,
        status: 'fail',
        details: `cannot reach DynamoDB (${code}) at ${config.endpoints.dynamodb ?? 'the AWS endpoint'}`,
        fix: config.endpoints.dynamodb
          ? 'start the emulator (`eve-world-aws emulate`) and export the lines it prints, or fix AWS_ENDPOINT_URL_*'
          : 'check the network and AWS_REGION',
      };
    }
    if (isRegionMissing(err)) {
      return {
        check,
        status: 'fail',
        details: 'no AWS region configured',
        fix: 'set AWS_REGION (e.g. us-east-1) or a profile region',
      };
    }
    if (isCredentialsMissing(err)) {
      return {
        check,
        status: 'fail',
        details: `no credentials found (${e.message})`,
        fix: 'set AWS_PROFILE, or AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, or run where an IAM role is available',
      };
    }
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

export async function runDoctor(opts: DoctorOptions = {}): Promise<Check[]> {
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
    return checks;
  }
  checks.push({
    check: 'configuration',
    status: 'pass',
    details: `region ${config.region ?? '(SDK default)'}; table ${config.tableName}; queue ${config.queue}; dlq ${config.deadLetterQueue}; bucket ${config.bucket}`,
  });

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

  const clients = createClients(config);
  const samples = sampleClock(clients);
  try {
    const cred = await checkCredentials(clients, config);
    checks.push(cred);
    if (cred.status !== 'pass') {
      for (const c of ['table schema', 'dead-letter queue', 'queue + redrive policy', 'bucket', 'clock skew']) {
        checks.push({ check: c, status: 'skip', details: 'needs working credentials' });
      }
      return checks;
    }
    try {
      checks.push(...resourceChecks(await reconcile(clients, config, 'verify')));
    } catch (err) {
      checks.push({
        check: 'resources',
        status: 'fail',
        details: `could not verify: ${describeError(err)}`,
        fix: 'check the permissions (`eve-world-aws init --print-iam-policy`) and endpoints',
      });
    }
    checks.push(clockCheck(samples, (opts.maxSkewSeconds ?? 5) * 1000));
    return checks;
  } finally {
    destroyClients(clients);
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
  const paint = (s: CheckStatus) => (s === 'pass' ? p.green('pass') : s === 'fail' ? p.red('FAIL') : p.dim('skip'));
  const out = [
    renderTable(
      ['Check', 'Result', 'Details'],
      checks.map((c) => [c.check, paint(c.status), c.details]),
      color,
    ),
  ];
  for (const c of checks.filter((x) => x.status === 'fail'))
    out.push(`${p.red('x')} ${c.check}: ${c.details}\n  fix: ${c.fix ?? 'see the details'}`);
  const failed = checks.filter((c) => c.status === 'fail').length;
  out.push(
    failed === 0
      ? `All ${checks.filter((c) => c.status === 'pass').length} checks passed.`
      : `${failed} check${failed === 1 ? '' : 's'} failed (see the fix above).`,
  );
  return `${out.join('\n')}\n`;
}

interface DoctorCliOptions {
  json?: boolean;
  maxSkew: number;
}

export function doctorCommand(): Command {
  return new Command('doctor')
    .description(
      'Check configuration, credentials, table, queues and redrive policy, bucket, schedule group (with a scheduler role) and clock skew',
    )
    .option('--json', 'print {ok, checks: [...]} as JSON')
    .option('--max-skew <seconds>', 'largest tolerated clock difference with the AWS server', parsePositiveInt, 5)
    .addHelpText(
      'after',
      `
Read-only: nothing is created or changed (use \`eve-world-aws init\` for that).

Exit codes: 0 every check passed; 1 a check failed (its fix is printed); 2 bad usage.`,
    )
    .action(async (opts: DoctorCliOptions) => {
      const spin = progress('Checking...');
      let checks: Check[];
      try {
        checks = await runDoctor({ maxSkewSeconds: opts.maxSkew });
      } finally {
        spin.done();
      }
      const ok = checks.every((c) => c.status !== 'fail');
      if (opts.json) printJson({ ok, checks });
      else process.stdout.write(renderChecks(checks));
      if (!ok) throw new CliError('', EXIT_FAILURE);
    });
}
