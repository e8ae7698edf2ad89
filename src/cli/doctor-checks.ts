/**
 * doctor's checks of the environment, before the clock and the fleet (src/cli/doctor.ts runs them
 * in order): the shape of a check, the variables the World does not read (with the closest known
 * name), whether custom endpoints answer, whether the credentials are accepted (one cheap signed
 * call), and the reconciler's resource reports ('verify' mode: nothing is created) as checks.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import type { AwsClients } from '../aws/clients.js';
import { canConnect } from '../aws/net.js';
import { describeError, isAccessDenied, isCredentialsRejected, unlessMissing } from '../aws/sdk-errors.js';
import { closestVariable, FORMER_VARIABLES, type WorldConfig } from '../config/index.js';
import { AwsEnvironmentError, EMULATOR_FIX } from '../preflight/aws-environment.js';
import type { ResourceReport } from '../provision/index.js';

/** `warn`: worth acting on, but the World works (exit 0). */
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface Check {
  check: string;
  status: CheckStatus;
  details: string;
  fix?: string;
}

function endpointsText(config: WorldConfig): string {
  const eps = Object.entries(config.endpoints).filter(([, v]) => v);
  return eps.length === 0 ? 'AWS default endpoints' : eps.map(([k, v]) => `${k} ${v}`).join(', ');
}

/**
 * Custom endpoints (emulators, VPC endpoints) are probed with a plain TCP connect first: the SDK
 * retries a refused connection with backoff for many seconds, and would not say which is down.
 */
export async function checkEndpoints(config: WorldConfig): Promise<Check> {
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
  return { check, status: 'fail', details: `cannot connect to ${down.join(', ')}`, fix: EMULATOR_FIX };
}

export async function checkCredentials(clients: AwsClients, config: WorldConfig): Promise<Check> {
  const check = 'credentials';
  // A table that does not exist is an answer to a signed call too: the credentials were accepted.
  const err = await unlessMissing(clients.ddb.send(new DescribeTableCommand({ TableName: config.tableName }))).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err === undefined) return { check, status: 'pass', details: `accepted (${endpointsText(config)})` };
  const fail = (details: string, fix: string): Check => ({ check, status: 'fail', details, fix });
  // Nothing answering, no region, no credentials: the World's own words for them.
  const region = config.region ?? (await clients.ddb.config.region().catch(() => undefined));
  const env = AwsEnvironmentError.of(config, [{ service: 'dynamodb', error: err }], region);
  if (env) return fail(env.details, env.fix);
  if (isCredentialsRejected(err))
    return fail(
      `credentials rejected (${describeError(err)})`,
      'refresh or replace the credentials (an expired session, a wrong key or a wrong account)',
    );
  if (isAccessDenied(err))
    return fail(
      `credentials valid but not allowed dynamodb:DescribeTable on ${config.tableName}`,
      'attach the policy printed by `eve-world-aws init --print-iam-policy` (plus Describe* for doctor)',
    );
  return fail(describeError(err), 'see the error; EVE_WORLD_AWS_DEBUG=1 shows details');
}

const RESOURCE_LABEL: Record<ResourceReport['kind'], string> = {
  table: 'table schema',
  dlq: 'dead-letter queue',
  queue: 'queue + redrive policy',
  bucket: 'bucket',
  'schedule-group': 'schedule group',
  encryption: 'KMS encryption',
};

export function resourceChecks(reports: ResourceReport[]): Check[] {
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
