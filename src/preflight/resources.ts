/**
 * The preflight: before a process's first write or send (and at `start()`), prove once that the
 * World's table, queue and bucket exist and answer, so a misnamed resource fails with ONE error
 * naming it (the resource, the variable that chose its name, the region and endpoint, the fix)
 * before anything is written anywhere. Without it, core's `start()` writes `run_created` and sends
 * the run's first message in parallel: a wrong queue left a run `running` that nothing would ever
 * deliver, and a wrong table left a message that a correctly configured worker later ran.
 *
 * Cheap, and only with actions the runtime policy already has (src/provision/iam-actions.ts): one
 * GetItem of a key that is never written (`keys.preflight` in src/schema/keys.ts), the queue's URL
 * (the transport's own cached GetQueueUrl, which the first send then reuses) or, when the queue is
 * configured as a URL, one GetQueueAttributes, and one HeadBucket; all three in parallel.
 *
 * Invariants:
 * - Only a "does not exist" answer is a missing resource ({@link MissingResourceError}). No region,
 *   no credentials or an endpoint where nothing answers is the environment's mistake, reported as
 *   one {@link AwsEnvironmentError} naming it and the fix (src/preflight/aws-environment.ts).
 *   Throttling or denied access is an outage or another problem and is rethrown as it is
 *   (throttling as the contract's ThrottleError, so core retries), never reported as missing.
 * - Once per process per set of resources: concurrent callers share one check, a passed check is
 *   kept, a failed one is forgotten, so the next call asks again (the resource may exist by then).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { isQueueUrl } from '../aws/arn.js';
import { readInput } from '../aws/expression.js';
import { describeError, errorName, isNotFound, toWorldError } from '../aws/sdk-errors.js';
import {
  closestVariable,
  FORMER_VARIABLES,
  nameChosenBy,
  type ResourceSetting,
  type WorldConfig,
} from '../config/index.js';
import type { WorldContext } from '../context/world-context.js';
import { ATTR, keys } from '../schema/keys.js';
import { AwsEnvironmentError, type AwsFailure, type AwsService } from './aws-environment.js';

export type PreflightResource = 'table' | 'queue' | 'dlq' | 'bucket';

const RESOURCES: Record<PreflightResource, { what: string; setting: ResourceSetting; endpoint: AwsService }> = {
  table: { what: 'DynamoDB table', setting: 'tableName', endpoint: 'dynamodb' },
  queue: { what: 'SQS queue', setting: 'queue', endpoint: 'sqs' },
  dlq: { what: 'SQS dead-letter queue', setting: 'deadLetterQueue', endpoint: 'sqs' },
  bucket: { what: 'S3 bucket', setting: 'bucket', endpoint: 's3' },
};

/** One resource that answered "does not exist". */
export interface MissingResource {
  readonly resource: PreflightResource;
  readonly name: string;
  /** `VARIABLE=value`: the variable that chose the name (its own, or EVE_WORLD_AWS_PREFIX). */
  readonly chosenBy: string;
  /** The endpoint asked, or undefined for the AWS default endpoint of the region. */
  readonly endpoint?: string;
  /** What AWS answered. */
  readonly answer: string;
}

/**
 * The World's resources (some of them) do not exist where the configuration points. The message
 * names each one, the variable that chose its name, the region and endpoint, and the fix.
 */
export class MissingResourceError extends Error {
  override name = 'MissingResourceError';
  constructor(
    readonly missing: readonly MissingResource[],
    /** The region asked (configured, or what the SDK resolved). */
    readonly region: string,
    /** Set `EVE_WORLD_AWS_*` variables the World does not read (a misspelt prefix is a likely cause). */
    readonly unknownVariables: readonly string[] = [],
  ) {
    const each = missing.map(
      (m) =>
        `the ${RESOURCES[m.resource].what} ${m.name} does not exist (named by ${m.chosenBy}; region ${region}, ${m.endpoint ? `endpoint ${m.endpoint}` : 'the AWS endpoint'})`,
    );
    const typos = unknownVariables.map(
      (v) => ` ${v} is set but is not a variable of this World: did you mean ${closestVariable(v)}?`,
    );
    super(
      `eve-world-aws: ${each.join('; ')}.${typos.join('')} ` +
        'Check the name, AWS_REGION and EVE_WORLD_AWS_PREFIX (`eve-world-aws doctor` shows what this configuration points at and checks it); ' +
        'if the resources were never created in this account and region, `eve-world-aws init` creates them.',
    );
  }

  /**
   * The error for `err` when it is a "does not exist" answer about `resource` of `ctx`'s
   * configuration, else undefined.
   */
  static async of(
    ctx: WorldContext,
    resource: PreflightResource,
    err: unknown,
  ): Promise<MissingResourceError | undefined> {
    const missing = missingOf(ctx.config, resource, err);
    return missing ? new MissingResourceError([missing], await regionOf(ctx), unknownOf(ctx.config)) : undefined;
  }
}

function missingOf(config: WorldConfig, resource: PreflightResource, err: unknown): MissingResource | undefined {
  // An object's NoSuchKey is an answer of a bucket that exists.
  if (!isNotFound(err) || errorName(err) === 'NoSuchKey') return undefined;
  const r = RESOURCES[resource];
  return {
    resource,
    name: config[r.setting],
    chosenBy: nameChosenBy(config, r.setting),
    endpoint: config.endpoints[r.endpoint],
    answer: describeError(err),
  };
}

async function regionOf(ctx: WorldContext): Promise<string> {
  if (ctx.config.region) return ctx.config.region;
  try {
    return `${await ctx.clients.ddb.config.region()} (SDK default)`;
  } catch {
    return '(none configured)';
  }
}

/** The ignored variables that are not former ones: typos, e.g. of EVE_WORLD_AWS_PREFIX. */
const unknownOf = (config: WorldConfig) => config.ignoredVariables.filter((v) => FORMER_VARIABLES[v] === undefined);

/** The queue lookups of the World's transport (src/queue/transport.ts), cached there. */
export interface PreflightQueues {
  queueUrl(): Promise<string>;
  dlqUrl(): Promise<string>;
}

export interface PreflightOptions {
  /** Also the dead-letter queue (operator commands that read it; the runtime never touches it). */
  deadLetterQueue?: boolean;
}

/** Checks of this process: passed ones stay, failed ones are removed. Keyed by what is checked. */
const checks = new Map<string, Promise<void>>();

/**
 * Resolves once `ctx`'s table, queue and bucket (and with `deadLetterQueue` the DLQ) exist and
 * answer; throws a {@link MissingResourceError} naming every one that does not, or the first other
 * failure (throttling as a ThrottleError). See the invariants above.
 */
export function preflight(ctx: WorldContext, queues: PreflightQueues, options: PreflightOptions = {}): Promise<void> {
  const { config } = ctx;
  const key = JSON.stringify([
    config.region,
    config.endpoints,
    config.tableName,
    config.queue,
    config.bucket,
    options.deadLetterQueue ? config.deadLetterQueue : '',
  ]);
  let check = checks.get(key);
  if (!check) {
    check = run(ctx, queues, options);
    checks.set(key, check);
    check.catch(() => checks.delete(key));
  }
  return check;
}

async function run(ctx: WorldContext, queues: PreflightQueues, options: PreflightOptions): Promise<void> {
  const { config, clients } = ctx;
  const queueAnswers = async (ref: string, url: () => Promise<string>) => {
    const resolved = await url();
    // A configured URL needs no lookup, so nothing has asked SQS yet: one read of the queue does.
    if (isQueueUrl(ref))
      await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: resolved, AttributeNames: ['QueueArn'] }));
  };
  const probes: [PreflightResource, () => Promise<unknown>][] = [
    [
      'table',
      () =>
        clients.ddb.send(
          new GetItemCommand({
            TableName: config.tableName,
            Key: { PK: { S: keys.preflight.PK }, SK: { S: keys.preflight.SK } },
            ...readInput({ projection: [ATTR.pk] }),
          }),
        ),
    ],
    ['queue', () => queueAnswers(config.queue, () => queues.queueUrl())],
    ['dlq', async () => options.deadLetterQueue && queueAnswers(config.deadLetterQueue, () => queues.dlqUrl())],
    [
      'bucket',
      async () => {
        // Loaded here, like every S3 call's: a cold import never loads the S3 SDK.
        const [s3, { HeadBucketCommand }] = await Promise.all([clients.s3(), import('@aws-sdk/client-s3')]);
        return s3.send(new HeadBucketCommand({ Bucket: config.bucket }));
      },
    ],
  ];
  const outcomes = await Promise.allSettled(probes.map(([, probe]) => probe()));
  const missing: MissingResource[] = [];
  const others: AwsFailure[] = [];
  outcomes.forEach((o, i) => {
    if (o.status === 'fulfilled') return;
    const m = missingOf(config, probes[i][0], o.reason);
    if (m) missing.push(m);
    else others.push({ service: RESOURCES[probes[i][0]].endpoint, error: o.reason });
  });
  if (missing.length > 0) throw new MissingResourceError(missing, await regionOf(ctx), unknownOf(config));
  if (others.length === 0) return;
  // No region, no credentials, nothing answering: one error with the fix
  // (src/preflight/aws-environment.ts).
  throw (
    AwsEnvironmentError.of(config, others, await regionOf(ctx)) ??
    toWorldError(others[0].error, 'eve-world-aws preflight')
  );
}
