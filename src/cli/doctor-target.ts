/**
 * What doctor says it checks, above its table ({@link DoctorTarget}: region, account when a queue
 * URL shows it, endpoints, resource names and the variable that chose each), and the likelier cause
 * when resources are missing: when NONE of the table, queues and bucket exist, the region, the
 * prefix or a misspelt variable points somewhere else far more often than the resources were never
 * created, and `init` would create a second set; when some exist, `init` creates the rest.
 */
import type { AwsClients } from '../aws/clients.js';
import { closestVariable, FORMER_VARIABLES, nameChosenBy, type WorldConfig } from '../config/index.js';
import { createContext } from '../context/world-context.js';
import { createTransport } from '../queue/transport.js';
import type { Check } from './doctor-checks.js';

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

/** Where `config` points: region (resolved by the SDK when not configured), endpoints, names. No network. */
export async function describeTarget(config: WorldConfig, clients: AwsClients): Promise<DoctorTarget> {
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
export async function accountOf(config: WorldConfig, clients: AwsClients): Promise<string | undefined> {
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
export function likelierCause(checks: Check[], config: WorldConfig, target: DoctorTarget): void {
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
