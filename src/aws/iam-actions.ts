/**
 * The ONE table of AWS commands this package sends, mapped to the IAM actions they need and the
 * resources they touch, per principal. Both `eve-world-aws init --print-iam-policy` (see
 * `iam-policy.ts`) and the CDK construct's grants (`src/cdk/`) are generated from it, and
 * test/e2e/iam-coverage.test.ts records every command sent during real workflow runs and fails if
 * one is missing here. Adding an SDK call without a row here is therefore a test failure, not an
 * AccessDenied in production.
 *
 * Principals:
 * - `runtime`: the World inside the host (eve) and the SQS worker: storage, queue send + receive,
 *   streams, payload offload, long-wait schedules.
 * - `operator`: the read/repair CLI commands (`doctor`, `redrive`, `tail`, `runs`) on top of
 *   `runtime`. Only this principal touches the DLQ: the World never sends to, receives from or
 *   deletes from it at run time (SQS moves messages there itself through the redrive policy).
 * - `init`: creating and reconfiguring the resources (`init`, `emulate`). Deploy-time only.
 *
 * Invariant: no row grants `*` actions, and every resource is one of the named resources below
 * (never `Resource: "*"`).
 */

/** The resources of one deployment; each maps to exactly one ARN pattern in `iam-policy.ts`. */
export type IamResource =
  | 'table'
  | 'tableIndexes'
  | 'queue'
  | 'dlq'
  | 'bucket'
  | 'bucketObjects'
  | 'scheduleGroupSchedules'
  | 'schedulerRole';

export type IamPrincipal = 'runtime' | 'operator' | 'init';

export type AwsService = 'dynamodb' | 'sqs' | 's3' | 'scheduler';

export interface CommandPermission {
  /** Service and SDK command name without the `Command` suffix, e.g. `dynamodb:TransactWriteItems`. */
  readonly command: `${AwsService}:${string}`;
  /** IAM actions the command needs. TransactWriteItems needs the action of every item kind it carries. */
  readonly actions: readonly string[];
  /** Resources per principal that sends it. */
  readonly uses: Partial<Record<IamPrincipal, readonly IamResource[]>>;
  /** Who sends it and why (documentation; shown nowhere else). */
  readonly why: string;
}

const T = ['table'] as const;
const TI = ['table', 'tableIndexes'] as const;
const Q = ['queue'] as const;

export const COMMAND_PERMISSIONS: readonly CommandPermission[] = [
  // ---- DynamoDB: the single table ----
  { command: 'dynamodb:GetItem', actions: ['dynamodb:GetItem'], uses: { runtime: T, operator: T }, why: 'run/step/hook/stream meta reads; redrive checks claims' },
  { command: 'dynamodb:BatchGetItem', actions: ['dynamodb:BatchGetItem'], uses: { runtime: T }, why: 'batched view reads' },
  { command: 'dynamodb:Query', actions: ['dynamodb:Query'], uses: { runtime: TI }, why: 'event log, listings (GSI1/GSI2), stream chunks' },
  { command: 'dynamodb:Scan', actions: ['dynamodb:Scan'], uses: { runtime: T }, why: 'hooks.list() without a run id' },
  { command: 'dynamodb:PutItem', actions: ['dynamodb:PutItem'], uses: { runtime: T }, why: 'idempotency claims, stream meta' },
  { command: 'dynamodb:UpdateItem', actions: ['dynamodb:UpdateItem'], uses: { runtime: T }, why: 'stream meta' },
  { command: 'dynamodb:DeleteItem', actions: ['dynamodb:DeleteItem'], uses: { runtime: T }, why: 'released claims, hook disposal' },
  { command: 'dynamodb:BatchWriteItem', actions: ['dynamodb:BatchWriteItem'], uses: { runtime: T }, why: 'stream chunk groups, run cleanup' },
  {
    command: 'dynamodb:TransactWriteItems',
    actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
    uses: { runtime: T },
    why: 'events.create: event slot claim + view writes in one transaction',
  },
  { command: 'dynamodb:DescribeTable', actions: ['dynamodb:DescribeTable'], uses: { operator: T, init: T }, why: 'doctor, init verify' },
  { command: 'dynamodb:DescribeTimeToLive', actions: ['dynamodb:DescribeTimeToLive'], uses: { operator: T, init: T }, why: 'doctor, init verify' },
  { command: 'dynamodb:CreateTable', actions: ['dynamodb:CreateTable'], uses: { init: T }, why: 'init' },
  { command: 'dynamodb:UpdateTimeToLive', actions: ['dynamodb:UpdateTimeToLive'], uses: { init: T }, why: 'init' },
  { command: 'dynamodb:UpdateContinuousBackups', actions: ['dynamodb:UpdateContinuousBackups'], uses: { init: T }, why: 'init: point-in-time recovery' },
  { command: 'dynamodb:DescribeContinuousBackups', actions: ['dynamodb:DescribeContinuousBackups'], uses: { operator: T, init: T }, why: 'doctor/init: PITR check' },

  // ---- SQS: the work queue (runtime) and the DLQ (operator only) ----
  { command: 'sqs:SendMessage', actions: ['sqs:SendMessage'], uses: { runtime: Q, operator: Q }, why: 'queue(); redrive re-sends DLQ messages to the queue' },
  { command: 'sqs:ReceiveMessage', actions: ['sqs:ReceiveMessage'], uses: { runtime: Q, operator: ['dlq'] }, why: 'in-process poller / Lambda event source mapping; redrive reads the DLQ' },
  { command: 'sqs:DeleteMessage', actions: ['sqs:DeleteMessage'], uses: { runtime: Q, operator: ['dlq'] }, why: 'ack; redrive removes moved messages' },
  {
    command: 'sqs:ChangeMessageVisibility',
    actions: ['sqs:ChangeMessageVisibility'],
    uses: { runtime: Q, operator: ['dlq'] },
    why: '{timeoutSeconds} redelivery; redrive releases messages it did not move',
  },
  { command: 'sqs:GetQueueUrl', actions: ['sqs:GetQueueUrl'], uses: { runtime: Q, operator: ['queue', 'dlq'], init: ['queue', 'dlq'] }, why: 'queue name -> URL' },
  {
    command: 'sqs:GetQueueAttributes',
    actions: ['sqs:GetQueueAttributes'],
    uses: { runtime: Q, operator: ['queue', 'dlq'], init: ['queue', 'dlq'] },
    why: 'queue ARN for schedules; depth for doctor; event source mapping',
  },
  { command: 'sqs:CreateQueue', actions: ['sqs:CreateQueue'], uses: { init: ['queue', 'dlq'] }, why: 'init' },
  { command: 'sqs:SetQueueAttributes', actions: ['sqs:SetQueueAttributes'], uses: { init: ['queue', 'dlq'] }, why: 'init: fix drift' },

  // ---- S3: large payloads ----
  { command: 's3:GetObject', actions: ['s3:GetObject'], uses: { runtime: ['bucketObjects'] }, why: 'offloaded values' },
  { command: 's3:PutObject', actions: ['s3:PutObject'], uses: { runtime: ['bucketObjects'] }, why: 'offloaded values' },
  { command: 's3:HeadBucket', actions: ['s3:ListBucket'], uses: { operator: ['bucket'], init: ['bucket'] }, why: 'doctor, init verify' },
  { command: 's3:GetBucketEncryption', actions: ['s3:GetEncryptionConfiguration'], uses: { operator: ['bucket'], init: ['bucket'] }, why: 'doctor, init verify' },
  { command: 's3:GetPublicAccessBlock', actions: ['s3:GetBucketPublicAccessBlock'], uses: { operator: ['bucket'], init: ['bucket'] }, why: 'doctor, init verify' },
  { command: 's3:GetBucketLifecycleConfiguration', actions: ['s3:GetLifecycleConfiguration'], uses: { operator: ['bucket'], init: ['bucket'] }, why: 'doctor, init verify' },
  { command: 's3:GetBucketPolicy', actions: ['s3:GetBucketPolicy'], uses: { operator: ['bucket'], init: ['bucket'] }, why: 'doctor, init verify (TLS-only)' },
  { command: 's3:CreateBucket', actions: ['s3:CreateBucket'], uses: { init: ['bucket'] }, why: 'init' },
  { command: 's3:PutBucketEncryption', actions: ['s3:PutEncryptionConfiguration'], uses: { init: ['bucket'] }, why: 'init' },
  { command: 's3:PutPublicAccessBlock', actions: ['s3:PutBucketPublicAccessBlock'], uses: { init: ['bucket'] }, why: 'init' },
  { command: 's3:PutBucketLifecycleConfiguration', actions: ['s3:PutLifecycleConfiguration'], uses: { init: ['bucket'] }, why: 'init' },
  { command: 's3:PutBucketPolicy', actions: ['s3:PutBucketPolicy'], uses: { init: ['bucket'] }, why: 'init: TLS-only policy' },

  // ---- EventBridge Scheduler: waits longer than the SQS delay ----
  {
    command: 'scheduler:CreateSchedule',
    actions: ['scheduler:CreateSchedule', 'iam:PassRole'],
    uses: { runtime: ['scheduleGroupSchedules', 'schedulerRole'] },
    why: 'one-time at() schedule targeting the queue; passes the Scheduler role (PassedToService condition)',
  },
];

/** Look up a recorded command (`SQSClient` + `SendMessageCommand`, or `sqs:SendMessage`). */
export function permissionFor(command: string): CommandPermission | undefined {
  return COMMAND_PERMISSIONS.find((p) => p.command === command);
}

const CLIENT_SERVICE: Record<string, AwsService> = {
  DynamoDBClient: 'dynamodb',
  SQSClient: 'sqs',
  S3Client: 's3',
  SchedulerClient: 'scheduler',
};

/** `DynamoDBClient` + `QueryCommand` -> `dynamodb:Query` (the key of {@link COMMAND_PERMISSIONS}). */
export function commandKey(clientName: string, commandName: string): string {
  const service = CLIENT_SERVICE[clientName] ?? clientName;
  return `${service}:${commandName.replace(/Command$/, '')}`;
}

/**
 * Actions per resource for one principal. `operator` includes `runtime` (the CLI opens a World);
 * `init` is standalone (deploy-time).
 */
export function actionsByResource(principal: IamPrincipal): Map<IamResource, string[]> {
  const principals: IamPrincipal[] = principal === 'operator' ? ['runtime', 'operator'] : [principal];
  const out = new Map<IamResource, Set<string>>();
  for (const p of COMMAND_PERMISSIONS) {
    for (const who of principals) {
      for (const r of p.uses[who] ?? []) {
        // Only the IAM action that belongs to the resource's service lands on it: CreateSchedule
        // needs scheduler:CreateSchedule on the schedule and iam:PassRole on the role.
        const actions = p.actions.filter((a) => (r === 'schedulerRole' ? a.startsWith('iam:') : !a.startsWith('iam:')));
        const set = out.get(r) ?? new Set<string>();
        out.set(r, set);
        for (const a of actions) set.add(a);
      }
    }
  }
  return new Map([...out].map(([r, s]) => [r, [...s].sort()]));
}

/** The condition every `iam:PassRole` carries: the role can only be handed to EventBridge Scheduler. */
export const PASS_ROLE_CONDITION = { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } } as const;

/** What the Scheduler role itself may do: send to the work queue, nothing else. */
export const SCHEDULER_ROLE_ACTIONS = ['sqs:SendMessage'] as const;
