/**
 * IAM policy documents printed by `eve-world-aws init --print-iam-policy [--operator]`, generated
 * from the command table in `iam-actions.ts` through `principal-actions.ts` (the CDK construct's
 * grants come from the same table).
 *
 * ARNs are partition-aware (derived from the region by src/aws/arn.ts unless given), `iam:PassRole`
 * carries an `iam:PassedToService` condition, and the Scheduler role's own policy and trust policy
 * are printed alongside.
 *
 * The KMS key (EVE_WORLD_AWS_KMS_KEY_ID) is granted by ARN when the setting is a key id or key ARN.
 * An alias cannot be a policy resource (KMS authorizes on the key), so an alias becomes every key
 * of the account and region, narrowed by `kms:ResourceAliases` to keys carrying that alias.
 */
import { partitionOf, queueNameOf } from '../aws/arn.js';
import type { WorldConfig } from '../config/index.js';
import type { IamPrincipal, IamResource } from './iam-resources.js';
import {
  actionsByResource,
  GRANT_ACTIONS,
  GRANT_CONDITION,
  PASS_ROLE_CONDITION,
  SCHEDULER_ROLE_ACTIONS,
  SCHEDULER_ROLE_KMS_ACTIONS,
} from './principal-actions.js';

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

/**
 * The policy resource for the configured key (see the header; a key id becomes an ARN in the
 * target account and region, an alias ARN every key of its own), and the `kms:ResourceAliases`
 * condition when it is named by alias.
 */
function kmsKeyResource(
  keyId: string,
  t: PolicyTarget,
): { arn: string; condition?: Record<string, Record<string, string>> } {
  const aliasArn = /^arn:([a-z-]+):kms:([a-z0-9-]+):(\d{12}):(alias\/.+)$/.exec(keyId);
  const [partition, region, account, alias] = aliasArn?.slice(1) ?? [t.partition, t.region, t.account, keyId];
  if (alias.startsWith('alias/')) {
    return {
      arn: `arn:${partition}:kms:${region}:${account}:key/*`,
      condition: { 'ForAnyValue:StringEquals': { 'kms:ResourceAliases': alias } },
    };
  }
  if (keyId.startsWith('arn:')) return { arn: keyId };
  return { arn: `arn:${t.partition}:kms:${t.region}:${t.account}:key/${keyId}` };
}

/** The ARN of each named resource of a deployment (`kmsKey` is empty without a configured key). */
function resourceArns(config: WorldConfig, t: PolicyTarget): Record<IamResource, string[]> {
  const table = `arn:${t.partition}:dynamodb:${t.region}:${t.account}:table/${config.tableName}`;
  return {
    table: [table],
    tableIndexes: [`${table}/index/*`],
    queue: [`arn:${t.partition}:sqs:${t.region}:${t.account}:${queueNameOf(config.queue)}`],
    dlq: [`arn:${t.partition}:sqs:${t.region}:${t.account}:${queueNameOf(config.deadLetterQueue)}`],
    bucket: [`arn:${t.partition}:s3:::${config.bucket}`],
    bucketObjects: [`arn:${t.partition}:s3:::${config.bucket}/*`],
    scheduleGroup: [`arn:${t.partition}:scheduler:${t.region}:${t.account}:schedule-group/${config.schedulerGroup}`],
    scheduleGroupSchedules: [
      `arn:${t.partition}:scheduler:${t.region}:${t.account}:schedule/${config.schedulerGroup}/*`,
    ],
    schedulerRole: [config.schedulerRoleArn ?? `arn:${t.partition}:iam::${t.account}:role/<scheduler-role>`],
    kmsKey: config.kmsKeyId ? [kmsKeyResource(config.kmsKeyId, t).arn] : [],
    signingSecret: config.signingSecretArn ? [config.signingSecretArn] : [],
    hostVersions: config.hostFunction
      ? [`arn:${t.partition}:lambda:${t.region}:${t.account}:function:${config.hostFunction}:*`]
      : [],
  };
}

const SID: Record<IamResource, string> = {
  table: 'Table',
  tableIndexes: 'TableIndexes',
  queue: 'Queue',
  dlq: 'DeadLetterQueue',
  bucket: 'Bucket',
  bucketObjects: 'BucketObjects',
  scheduleGroup: 'ScheduleGroup',
  scheduleGroupSchedules: 'LongWaitSchedules',
  schedulerRole: 'PassSchedulerRole',
  kmsKey: 'RunKeys',
  signingSecret: 'SigningSecret',
  hostVersions: 'InvokeHostVersions',
};

/** Resources that exist (and are granted) only with a scheduler role configured. */
const SCHEDULER_RESOURCES: ReadonlySet<IamResource> = new Set([
  'scheduleGroup',
  'scheduleGroupSchedules',
  'schedulerRole',
]);

/**
 * The policy for a principal. Scheduler statements are included only when a scheduler role is
 * configured (without one, long waits use SQS hops and the World never calls the Scheduler), KMS
 * statements only when a key is configured. `kms:CreateGrant` (init) is its own statement, limited
 * to grants for AWS resources.
 */
export function principalPolicy(principal: IamPrincipal, config: WorldConfig, t: PolicyTarget): PolicyDocument {
  const arns = resourceArns(config, t);
  const prefix = (
    { runtime: 'World', operator: 'Operator', init: 'Init', sweeper: 'Sweeper', destroy: 'Destroy' } as const
  )[principal];
  const statements: PolicyStatement[] = [];
  const key = config.kmsKeyId ? kmsKeyResource(config.kmsKeyId, t) : undefined;
  for (const [resource, actions] of actionsByResource(principal)) {
    if (SCHEDULER_RESOURCES.has(resource) && !config.schedulerRoleArn) continue;
    if (resource === 'kmsKey' && !key) continue;
    if (arns[resource].length === 0) continue; // e.g. no EVE_WORLD_AWS_SIGNING_SECRET_ARN
    const condition =
      resource === 'schedulerRole'
        ? (structuredClone(PASS_ROLE_CONDITION) as PolicyStatement['Condition'])
        : resource === 'kmsKey'
          ? key?.condition
          : undefined;
    const plain = actions.filter((a) => !GRANT_ACTIONS.includes(a));
    const grants = actions.filter((a) => GRANT_ACTIONS.includes(a));
    if (plain.length > 0) {
      statements.push({
        Sid: `${prefix}${SID[resource]}`,
        Effect: 'Allow',
        Action: plain,
        Resource: arns[resource],
        ...(condition ? { Condition: structuredClone(condition) } : {}),
      });
    }
    if (grants.length > 0) {
      statements.push({
        Sid: `${prefix}${SID[resource]}Grants`,
        Effect: 'Allow',
        Action: grants,
        Resource: arns[resource],
        Condition: {
          ...structuredClone(condition ?? {}),
          ...(structuredClone(GRANT_CONDITION) as PolicyStatement['Condition']),
        },
      });
    }
  }
  return { Version: '2012-10-17', Statement: statements };
}

/**
 * The Scheduler role: trusted by scheduler.amazonaws.com for schedules of this World's schedule
 * group in this account only (`aws:SourceAccount` + `aws:SourceArn`); may send to the queue
 * (and, with the queue under a KMS key, use the key as an SSE-KMS producer).
 */
export function schedulerRolePolicies(
  config: WorldConfig,
  t: PolicyTarget,
): { trustPolicy: object; policy: PolicyDocument } {
  const arns = resourceArns(config, t);
  const key = config.kmsKeyId ? kmsKeyResource(config.kmsKeyId, t) : undefined;
  return {
    trustPolicy: {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { Service: 'scheduler.amazonaws.com' },
          Action: 'sts:AssumeRole',
          // Only schedules of this World's group may use the role (not every schedule of the
          // account).
          Condition: { StringEquals: { 'aws:SourceAccount': t.account, 'aws:SourceArn': arns.scheduleGroup[0] } },
        },
      ],
    },
    policy: {
      Version: '2012-10-17',
      Statement: [
        { Sid: 'SchedulerSendToQueue', Effect: 'Allow', Action: [...SCHEDULER_ROLE_ACTIONS], Resource: arns.queue },
        ...(key
          ? [
              {
                Sid: 'SchedulerQueueKey',
                Effect: 'Allow' as const,
                Action: [...SCHEDULER_ROLE_KMS_ACTIONS],
                Resource: [key.arn],
                ...(key.condition ? { Condition: key.condition } : {}),
              },
            ]
          : []),
      ],
    },
  };
}

/** The World's run-time policy. */
export function iamPolicy(
  config: WorldConfig,
  account = '<account-id>',
  region = config.region ?? '<region>',
): PolicyDocument {
  return principalPolicy('runtime', config, { partition: partitionOf(region), region, account });
}
