/**
 * IAM grants for the construct, generated from the command table (src/provision/iam-actions.ts):
 * the same rows `init --print-iam-policy` prints, bound to the stack's resource ARNs. Host and
 * worker get the `runtime` rows, the sweeper the `sweeper` rows; the three wildcard resources this
 * binds (the table's indexes, the bucket's objects, the schedule group's schedules) are
 * acknowledged to cdk-nag here, each with its reason. With deployment affinity the queue's consumer
 * alone (the worker, or the host when it consumes the queue itself) also gets the `hostVersions`
 * row: `lambda:InvokeFunction` on `<host function ARN>:*` (its published versions; the unqualified
 * ARN, `$LATEST`, is not matched), acknowledged the same way.
 */
import { ArnFormat, type Stack, Validations } from 'aws-cdk-lib';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { CfnPolicy, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { IamPrincipal, IamResource } from '../provision/iam-resources.js';
import {
  actionsByResource,
  GRANT_ACTIONS,
  GRANT_CONDITION,
  PASS_ROLE_CONDITION,
} from '../provision/principal-actions.js';
import type { Data } from './data.js';
import type { Queues } from './queue.js';

/** Grant each function its rows of the command table on this stack's resources. */
export function grantWorld(
  stack: Stack,
  parts: {
    readonly data: Data;
    readonly queues: Queues;
    readonly signingSecret: secretsmanager.ISecret;
    readonly hostFunction: lambda.IFunction;
    /** The SQS worker; absent when the host consumes the queue. */
    readonly workerFunction?: lambda.IFunction;
    readonly sweeperFunction?: lambda.IFunction;
    /** Deployment affinity: the consumer (the worker, else the host) invokes the host's versions. */
    readonly invokeHostVersions?: boolean;
  },
): void {
  const { table, bucket, kmsKey } = parts.data;
  const { queue, deadLetterQueue, scheduleGroup, schedulerRole } = parts.queues;
  const scheduleArn = stack.formatArn({
    service: 'scheduler',
    resource: 'schedule',
    resourceName: `${scheduleGroup.ref}/*`,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
  const arns = {
    table: [table.tableArn],
    tableIndexes: [`${table.tableArn}/index/*`],
    queue: [queue.queueArn],
    // The runtime only sends to it (src/provision/iam-resources.ts, `operator`).
    dlq: [deadLetterQueue.queueArn],
    bucket: [bucket.bucketArn],
    bucketObjects: [bucket.arnForObjects('*')],
    scheduleGroup: [scheduleGroup.attrArn],
    scheduleGroupSchedules: [scheduleArn],
    schedulerRole: [schedulerRole.roleArn],
    kmsKey: kmsKey ? [kmsKey.keyArn] : [],
    // GetSecretValue on this one secret (the runtime row of the table).
    signingSecret: [parts.signingSecret.secretArn],
  };
  const hostVersions = `${parts.hostFunction.functionArn}:*`;
  const consumer = parts.workerFunction ?? parts.hostFunction;
  grantFromTable(parts.hostFunction, 'runtime', arns);
  if (parts.workerFunction)
    grantFromTable(parts.workerFunction, 'runtime', {
      ...arns,
      hostVersions: parts.invokeHostVersions ? [hostVersions] : [],
    });
  // The host invoking its own versions: a policy the function does not depend on (it depends on
  // every policy attached through its role, and one naming its own ARN would be a cycle). It is
  // only needed once a second version exists, so after the first deploy.
  let invokePolicy: CfnPolicy | undefined;
  const hostRole = parts.hostFunction.role;
  if (!parts.workerFunction && parts.invokeHostVersions && hostRole) {
    const document = new PolicyDocument();
    grantFromTable(document, 'runtime', { hostVersions: [hostVersions] });
    // Beside the role, not in it: the function depends on everything under its role.
    invokePolicy = new CfnPolicy(parts.hostFunction.node.scope as Construct, 'HostInvokeVersions', {
      policyName: 'eve-invoke-host-versions',
      roles: [hostRole.roleName],
      policyDocument: document,
    });
  }
  if (parts.sweeperFunction) grantFromTable(parts.sweeperFunction, 'sweeper', arns);

  // cdk-nag acknowledgements, each with its reason (cdk-nag 3 reads CDK's Validations metadata).
  const wildcardReasons: Array<[string, string]> = [
    [
      arns.tableIndexes[0],
      'Query on the indexes of this one table only (index names come from TABLE_SCHEMA and may grow); no other table.',
    ],
    [
      arns.bucketObjects[0],
      'Get/Put/DeleteObject and PutObjectTagging (the sweeper: DeleteObject only) on objects of this one payload bucket: keys are per run and entity, unknown at deploy time.',
    ],
    [
      scheduleArn,
      'CreateSchedule for one-time long-wait schedules in this stack’s own schedule group; schedule names are per wait.',
    ],
  ];
  if (parts.invokeHostVersions) {
    const policy = invokePolicy ?? consumer.role?.node.tryFindChild('DefaultPolicy');
    if (policy)
      Validations.of(policy).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${nagResourceName(stack, hostVersions)}]`,
        reason: `lambda:InvokeFunction on the host function's published versions only (each deploy publishes one; the ${consumer === parts.hostFunction ? 'host' : 'worker'} delivers a run's messages to the version that started it).`,
      });
  }
  for (const fn of [parts.hostFunction, parts.workerFunction, parts.sweeperFunction]) {
    const policy = fn?.role?.node.tryFindChild('DefaultPolicy');
    if (!policy) continue;
    for (const [arn, reason] of wildcardReasons)
      Validations.of(policy).acknowledge({ id: `AwsSolutions-IAM5[Resource::${nagResourceName(stack, arn)}]`, reason });
  }
}

/**
 * Grant `principal`'s rows of the table on the given ARNs. Resources without ARNs are skipped (no
 * KMS key: no KMS grants). `iam:PassRole` carries its PassedToService condition and
 * `kms:CreateGrant` its own statement limited to AWS resources, as in the printed policies.
 */
export function grantFromTable(
  grantee: IGrantable | PolicyDocument,
  principal: IamPrincipal,
  arns: Partial<Record<IamResource, string[]>>,
): void {
  const add = (st: PolicyStatement) =>
    grantee instanceof PolicyDocument ? grantee.addStatements(st) : grantee.grantPrincipal.addToPrincipalPolicy(st);
  for (const [resource, actions] of actionsByResource(principal)) {
    const resources = arns[resource];
    if (!resources || resources.length === 0) continue;
    const plain = actions.filter((a) => !GRANT_ACTIONS.includes(a));
    const grants = actions.filter((a) => GRANT_ACTIONS.includes(a));
    if (plain.length > 0) {
      const conditions = resource === 'schedulerRole' ? structuredClone(PASS_ROLE_CONDITION) : undefined;
      add(new PolicyStatement({ actions: plain, resources, conditions }));
    }
    if (grants.length > 0)
      add(new PolicyStatement({ actions: grants, resources, conditions: structuredClone(GRANT_CONDITION) }));
  }
}

/**
 * How cdk-nag names a resource in an IAM5 finding (`Resource::<Table.Arn>/index/*`): the resolved
 * value with `Ref` as `<Name>`, `Fn::GetAtt` as `<Name.Attr>` and `Fn::Join` concatenated. Used to
 * acknowledge exactly the wildcard findings this construct expects, whatever the stack's env.
 */
function nagResourceName(stack: Stack, value: string): string {
  const render = (v: unknown): string => {
    if (typeof v === 'string') return v;
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if ('Ref' in o) return `<${String(o.Ref)}>`;
      if ('Fn::GetAtt' in o) return `<${(o['Fn::GetAtt'] as string[]).join('.')}>`;
      if ('Fn::Join' in o) {
        const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
        return parts.map(render).join(sep);
      }
    }
    return JSON.stringify(v);
  };
  return render(stack.resolve(value));
}
