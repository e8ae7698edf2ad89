/**
 * IAM policy documents printed by `eve-world-aws init --print-iam-policy [--operator]`, generated
 * from the command table in `iam-actions.ts` (the CDK construct's grants come from the same table).
 *
 * ARNs are partition-aware (`aws`, `aws-cn`, `aws-us-gov`, derived from the region unless given),
 * `iam:PassRole` carries an `iam:PassedToService` condition, and the Scheduler role's own policy
 * and trust policy are printed alongside.
 */
import type { WorldConfig } from '../config.js';
import { actionsByResource, type IamPrincipal, type IamResource, PASS_ROLE_CONDITION, SCHEDULER_ROLE_ACTIONS } from './iam-actions.js';

export interface PolicyStatement {
  Sid: string;
  Effect: 'Allow';
  Action: string[];
  Resource: string[];
  Condition?: Record<string, Record<string, string>>;
}

export interface PolicyDocument {
  Version: '2012-10-17';
  Statement: PolicyStatement[];
}

export interface PolicyTarget {
  partition: string;
  region: string;
  account: string;
}

/** `cn-north-1` -> `aws-cn`, `us-gov-west-1` -> `aws-us-gov`, anything else -> `aws`. */
export function partitionOf(region: string | undefined): string {
  if (region?.startsWith('cn-')) return 'aws-cn';
  if (region?.startsWith('us-gov-')) return 'aws-us-gov';
  if (region?.startsWith('us-iso-')) return 'aws-iso';
  if (region?.startsWith('us-isob-')) return 'aws-iso-b';
  return 'aws';
}

function queueName(ref: string): string {
  return /^https?:\/\//.test(ref) ? (ref.split('/').pop() as string) : ref;
}

/** The ARN of each named resource of a deployment. */
export function resourceArns(config: WorldConfig, t: PolicyTarget): Record<IamResource, string[]> {
  const table = `arn:${t.partition}:dynamodb:${t.region}:${t.account}:table/${config.tableName}`;
  const roleArn = config.schedulerRoleArn ?? `arn:${t.partition}:iam::${t.account}:role/<scheduler-role>`;
  return {
    table: [table],
    tableIndexes: [`${table}/index/*`],
    queue: [`arn:${t.partition}:sqs:${t.region}:${t.account}:${queueName(config.queue)}`],
    dlq: [`arn:${t.partition}:sqs:${t.region}:${t.account}:${queueName(config.deadLetterQueue)}`],
    bucket: [`arn:${t.partition}:s3:::${config.bucket}`],
    bucketObjects: [`arn:${t.partition}:s3:::${config.bucket}/*`],
    scheduleGroupSchedules: [`arn:${t.partition}:scheduler:${t.region}:${t.account}:schedule/${config.schedulerGroup}/*`],
    schedulerRole: [roleArn],
  };
}

const SID: Record<IamResource, string> = {
  table: 'Table',
  tableIndexes: 'TableIndexes',
  queue: 'Queue',
  dlq: 'DeadLetterQueue',
  bucket: 'Bucket',
  bucketObjects: 'BucketObjects',
  scheduleGroupSchedules: 'LongWaitSchedules',
  schedulerRole: 'PassSchedulerRole',
};

/**
 * The policy for a principal. Scheduler statements are included only when a scheduler role is
 * configured (without one, long waits use SQS hops and the World never calls the Scheduler).
 */
export function principalPolicy(principal: IamPrincipal, config: WorldConfig, t: PolicyTarget): PolicyDocument {
  const arns = resourceArns(config, t);
  const prefix = principal === 'runtime' ? 'World' : principal === 'operator' ? 'Operator' : 'Init';
  const statements: PolicyStatement[] = [];
  for (const [resource, actions] of actionsByResource(principal)) {
    if ((resource === 'scheduleGroupSchedules' || resource === 'schedulerRole') && !config.schedulerRoleArn) continue;
    statements.push({
      Sid: `${prefix}${SID[resource]}`,
      Effect: 'Allow',
      Action: actions,
      Resource: arns[resource],
      ...(resource === 'schedulerRole' ? { Condition: structuredClone(PASS_ROLE_CONDITION) as never } : {}),
    });
  }
  return { Version: '2012-10-17', Statement: statements };
}

/** The Scheduler role: trusted by scheduler.amazonaws.com from this account only; may send to the queue. */
export function schedulerRolePolicies(config: WorldConfig, t: PolicyTarget): { trustPolicy: object; policy: PolicyDocument } {
  const arns = resourceArns(config, t);
  return {
    trustPolicy: {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { Service: 'scheduler.amazonaws.com' },
          Action: 'sts:AssumeRole',
          Condition: { StringEquals: { 'aws:SourceAccount': t.account } },
        },
      ],
    },
    policy: {
      Version: '2012-10-17',
      Statement: [{ Sid: 'SchedulerSendToQueue', Effect: 'Allow', Action: [...SCHEDULER_ROLE_ACTIONS], Resource: arns.queue }],
    },
  };
}

export interface PrintedPolicies {
  /** Attach to the host and worker functions (or any process running the World). */
  world?: PolicyDocument;
  /** Attach to operators running doctor / redrive / tail / runs (includes the World's). */
  operator?: PolicyDocument;
  /** The role EventBridge Scheduler assumes to deliver long waits. */
  schedulerRole?: { trustPolicy: object; policy: PolicyDocument };
}

/** What `init --print-iam-policy [--operator]` prints. */
export function printedPolicies(config: WorldConfig, opts: { account?: string; region?: string; partition?: string; operator?: boolean } = {}): PrintedPolicies {
  const region = opts.region ?? config.region ?? '<region>';
  const t: PolicyTarget = { partition: opts.partition ?? partitionOf(config.region), region, account: opts.account ?? '<account-id>' };
  if (opts.operator) return { operator: principalPolicy('operator', config, t) };
  return {
    world: principalPolicy('runtime', config, t),
    ...(config.schedulerRoleArn ? { schedulerRole: schedulerRolePolicies(config, t) } : {}),
  };
}

/** The World's run-time policy (kept under its old name for `src/resources.ts` importers). */
export function iamPolicy(config: WorldConfig, account = '<account-id>', region = config.region ?? '<region>'): PolicyDocument {
  return principalPolicy('runtime', config, { partition: partitionOf(region), region, account });
}
