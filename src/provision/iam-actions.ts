/**
 * The ONE table of AWS commands this package sends, mapped to the IAM actions they need and the
 * resources they touch, per principal. Both `eve-world-aws init --print-iam-policy` (see
 * `iam-policy.ts`) and the CDK construct's grants (`src/cdk/`) are generated from it, and
 * test/e2e/iam-coverage.test.ts records every command sent during real workflow runs and fails if
 * one is missing here. Adding an SDK call without a row here is therefore a test failure, not an
 * AccessDenied in production.
 *
 * Principals and resources: ./iam-resources.ts; the actions per resource a principal gets, and the
 * conditions its statements carry: ./principal-actions.ts.
 *
 * KMS (EVE_WORLD_AWS_KMS_KEY_ID): rows on `kmsKey` land in a policy only when a key is configured;
 * likewise the `signingSecret` row only with EVE_WORLD_AWS_SIGNING_SECRET_ARN, the `hostVersions`
 * row (the worker's Lambda Invoke of a host version) only with EVE_WORLD_AWS_HOST_FUNCTION, and the
 * Scheduler rows (`scheduleGroup`, `scheduleGroupSchedules`, `schedulerRole`) only with
 * EVE_WORLD_AWS_SCHEDULER_ROLE_ARN. The group itself is `init`'s (create) and `doctor`'s (read),
 * never the runtime's: the World only creates schedules in it. The runtime's GenerateDataKey +
 * Decrypt serve both the per-run data keys (src/encryption/run-keys.ts) and SSE-KMS on the queue
 * (send: GenerateDataKey, receive: Decrypt) and the bucket (PutObject: GenerateDataKey, GetObject:
 * Decrypt). DynamoDB SSE-KMS needs no caller permission at run time: the table's grant, created by
 * `init` (kms:CreateGrant, limited to AWS resources by `GRANT_CONDITION` in
 * ./principal-actions.ts), lets DynamoDB use the key.
 *
 * Invariant: no row grants `*` actions, and every resource is one of the named resources (never
 * `Resource: "*"`).
 */
import type { AwsService, IamPrincipal, IamResource } from './iam-resources.js';

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
const S = ['bucket'] as const;
const TI = ['table', 'tableIndexes'] as const;
const Q = ['queue'] as const;

/** A row; `actions` defaults to the command's own action (`sqs:SendMessage` needs `sqs:SendMessage`). */
type Row = Omit<CommandPermission, 'actions'> & { readonly actions?: readonly string[] };

const ROWS: readonly Row[] = [
  // ---- DynamoDB: the single table ----
  {
    command: 'dynamodb:GetItem',
    uses: { runtime: T, operator: T, init: T, sweeper: T },
    why: 'run/step/hook/stream meta reads; the preflight (the table exists); the table’s format item (start, CLI, doctor, init); redrive checks claims; sweep: a run item’s state',
  },
  {
    command: 'dynamodb:BatchGetItem',
    uses: { runtime: T, sweeper: T },
    why: 'batched view reads; sweep: a run’s hook items',
  },
  {
    command: 'dynamodb:Query',
    uses: { runtime: TI, sweeper: TI },
    why: 'event log, listings (GSI1/GSI2), stream chunks; sweep: a run’s partition, hooks and streams, the deployment registry and the active runs (GSI2); backstop: due checks (GSI1), a run’s tail, steps and waits',
  },
  {
    command: 'dynamodb:PutItem',
    uses: { runtime: T, init: T },
    why: 'idempotency claims, stream meta, wrapped run keys, replay nonces; init: the table’s format item',
  },
  {
    command: 'dynamodb:UpdateItem',
    uses: { runtime: T, sweeper: T },
    why: 'stream meta, retention TTL stamps, run release, step lease heartbeat and release; sweep: the orphansSweptAt mark, a drained deployment’s retired mark (src/sweep/deployments.ts); backstop: the DUE fence and turn acknowledgements',
  },
  {
    command: 'dynamodb:DeleteItem',
    uses: { runtime: T, sweeper: T },
    why: 'released claims, hook disposal; backstop: a finished run’s DUE item, a stranded step’s used dispatch key',
  },
  { command: 'dynamodb:BatchWriteItem', uses: { runtime: T }, why: 'stream chunk groups, run cleanup' },
  {
    command: 'dynamodb:TransactWriteItems',
    actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
    uses: { runtime: T },
    why: 'events.create: event slot claim + view writes in one transaction',
  },
  { command: 'dynamodb:DescribeTable', uses: { operator: T, init: T, destroy: T }, why: 'doctor, init verify' },
  { command: 'dynamodb:DescribeTimeToLive', uses: { operator: T, init: T }, why: 'doctor, init verify' },
  { command: 'dynamodb:CreateTable', uses: { init: T }, why: 'init' },
  { command: 'dynamodb:UpdateTimeToLive', uses: { init: T }, why: 'init' },
  { command: 'dynamodb:UpdateContinuousBackups', uses: { init: T }, why: 'init: point-in-time recovery' },
  { command: 'dynamodb:DescribeContinuousBackups', uses: { operator: T, init: T }, why: 'doctor/init: PITR check' },
  {
    command: 'dynamodb:UpdateTable',
    actions: ['dynamodb:UpdateTable', 'kms:CreateGrant', 'kms:DescribeKey'],
    uses: { init: ['table', 'kmsKey'] },
    why: 'init: put the table under the KMS key (DynamoDB creates its grant with the caller’s permission)',
  },

  // ---- SQS: the work queue (runtime) and the DLQ (operator only) ----
  {
    command: 'sqs:SendMessage',
    uses: { runtime: [...Q, 'dlq'], operator: Q, sweeper: Q },
    why: 'queue(); the consumer moves a message whose failed dispatches reached the limit to the DLQ; redrive re-sends DLQ messages to the queue; backstop: a run’s wake',
  },
  {
    command: 'sqs:ReceiveMessage',
    uses: { runtime: Q, operator: ['dlq'] },
    why: 'in-process poller / Lambda event source mapping; redrive reads the DLQ',
  },
  { command: 'sqs:DeleteMessage', uses: { runtime: Q, operator: ['dlq'] }, why: 'ack; redrive removes moved messages' },
  {
    command: 'sqs:ChangeMessageVisibility',
    uses: { runtime: Q, operator: ['dlq'] },
    why: '{timeoutSeconds} redelivery; redrive releases messages it did not move',
  },
  {
    command: 'sqs:DeleteMessageBatch',
    actions: ['sqs:DeleteMessage'],
    uses: { runtime: Q },
    why: 'a host that consumes its own queue deletes the records it settled (SQS authorizes a batch by the single action)',
  },
  {
    command: 'sqs:ChangeMessageVisibilityBatch',
    actions: ['sqs:ChangeMessageVisibility'],
    uses: { runtime: Q },
    why: 'a host that consumes its own queue proves each record a live receive before it runs',
  },
  {
    command: 'sqs:GetQueueUrl',
    uses: {
      runtime: [...Q, 'dlq'],
      operator: ['queue', 'dlq'],
      init: ['queue', 'dlq'],
      destroy: ['queue', 'dlq'],
      sweeper: Q,
    },
    why: 'queue name -> URL (backstop: before its first wake; the consumer: the DLQ its redrive policy names)',
  },
  {
    command: 'sqs:GetQueueAttributes',
    uses: { runtime: Q, operator: ['queue', 'dlq'], init: ['queue', 'dlq'], destroy: ['queue', 'dlq'], sweeper: Q },
    why: 'queue ARN for schedules; the preflight of a queue configured as a URL; depth for doctor; event source mapping; the redrive policy (the consumer dead-letters where SQS would); backstop: the backlog that holds a repeat wake',
  },
  { command: 'sqs:CreateQueue', uses: { init: ['queue', 'dlq'] }, why: 'init' },
  {
    command: 'sqs:SetQueueAttributes',
    uses: { init: ['queue', 'dlq'] },
    why: 'init: fix drift, SSE-KMS under the key',
  },

  // ---- S3: large payloads ----
  {
    command: 's3:GetObject',
    uses: { runtime: ['bucketObjects'] },
    why: 'offloaded values; a long wait’s queue body copied to a fresh key',
  },
  {
    command: 's3:PutObject',
    uses: { runtime: ['bucketObjects'] },
    why: 'offloaded values; a long wait’s queue body copied to a fresh key',
  },
  {
    command: 's3:ListObjectsV2',
    actions: ['s3:ListBucket'],
    uses: { runtime: S, sweeper: S, destroy: S },
    why: 'retention: list a finished run’s objects (runs/<runId>/); sweep: list run prefixes and held queue bodies',
  },
  {
    command: 's3:DeleteObjects',
    actions: ['s3:DeleteObject'],
    uses: { runtime: ['bucketObjects'], sweeper: ['bucketObjects'], destroy: ['bucketObjects'] },
    why: 'retention 0: delete a finished run’s objects; sweep: delete orphaned payloads and expired held queue bodies',
  },
  {
    command: 's3:PutObjectTagging',
    uses: { runtime: ['bucketObjects'] },
    why: 'retention N days: tag objects for the lifecycle rule',
  },
  {
    command: 's3:HeadBucket',
    actions: ['s3:ListBucket'],
    uses: { runtime: S, operator: ['bucket'], init: ['bucket'], destroy: ['bucket'] },
    why: 'the preflight (src/preflight/resources.ts): the bucket exists, before the first write (same action as ListObjectsV2); doctor, init verify',
  },
  {
    command: 's3:GetBucketEncryption',
    actions: ['s3:GetEncryptionConfiguration'],
    uses: { operator: ['bucket'], init: ['bucket'] },
    why: 'doctor, init verify',
  },
  {
    command: 's3:GetPublicAccessBlock',
    actions: ['s3:GetBucketPublicAccessBlock'],
    uses: { operator: ['bucket'], init: ['bucket'] },
    why: 'doctor, init verify',
  },
  {
    command: 's3:GetBucketLifecycleConfiguration',
    actions: ['s3:GetLifecycleConfiguration'],
    uses: { operator: ['bucket'], init: ['bucket'] },
    why: 'doctor, init verify',
  },
  {
    command: 's3:GetBucketPolicy',
    uses: { operator: ['bucket'], init: ['bucket'] },
    why: 'doctor, init verify (TLS-only)',
  },
  { command: 's3:CreateBucket', uses: { init: ['bucket'] }, why: 'init' },
  {
    command: 's3:PutBucketEncryption',
    actions: ['s3:PutEncryptionConfiguration'],
    uses: { init: ['bucket'] },
    why: 'init (SSE-S3, or SSE-KMS under the key)',
  },
  {
    command: 's3:PutPublicAccessBlock',
    actions: ['s3:PutBucketPublicAccessBlock'],
    uses: { init: ['bucket'] },
    why: 'init',
  },
  {
    command: 's3:PutBucketLifecycleConfiguration',
    actions: ['s3:PutLifecycleConfiguration'],
    uses: { init: ['bucket'] },
    why: 'init',
  },
  { command: 's3:PutBucketPolicy', uses: { init: ['bucket'] }, why: 'init: TLS-only policy' },

  // ---- EventBridge Scheduler: waits longer than the SQS delay ----
  {
    command: 'scheduler:CreateSchedule',
    actions: ['scheduler:CreateSchedule', 'iam:PassRole'],
    uses: { runtime: ['scheduleGroupSchedules', 'schedulerRole'] },
    why: 'one-time at() schedule targeting the queue; passes the Scheduler role (PassedToService condition)',
  },
  {
    command: 'scheduler:GetScheduleGroup',
    uses: { operator: ['scheduleGroup'], init: ['scheduleGroup'], destroy: ['scheduleGroup'] },
    why: 'doctor, init verify: the World’s own schedule group exists and is active',
  },
  {
    command: 'scheduler:CreateScheduleGroup',
    uses: { init: ['scheduleGroup'] },
    why: 'init: the World’s own schedule group, when a scheduler role is configured',
  },

  // ---- destroy: removing what init created ----
  { command: 'dynamodb:Scan', uses: { destroy: T }, why: 'destroy: whether the table holds an item (Limit 1)' },
  { command: 'dynamodb:DeleteTable', uses: { destroy: T }, why: 'destroy' },
  { command: 'sqs:DeleteQueue', uses: { destroy: ['queue', 'dlq'] }, why: 'destroy' },
  { command: 's3:DeleteBucket', uses: { destroy: ['bucket'] }, why: 'destroy' },
  {
    command: 'scheduler:ListSchedules',
    uses: { destroy: ['scheduleGroup'] },
    why: 'destroy: whether the group holds a schedule (a pending long wait)',
  },
  { command: 'scheduler:DeleteScheduleGroup', uses: { destroy: ['scheduleGroup'] }, why: 'destroy' },

  // ---- KMS: EVE_WORLD_AWS_KMS_KEY_ID (statements only when a key is configured) ----
  {
    command: 'kms:GenerateDataKey',
    uses: { runtime: ['kmsKey'], init: ['kmsKey'], sweeper: ['kmsKey'] },
    why: 'a new run’s data key; SSE-KMS sends to the queue and puts to the bucket; init/doctor prove the key works for the caller; backstop: its wakes (SSE-KMS)',
  },
  {
    command: 'kms:Decrypt',
    uses: { runtime: ['kmsKey'], init: ['kmsKey'] },
    why: 'unwrap a run’s data key (wf web decrypts with it); SSE-KMS receives and gets; init/doctor key check',
  },
  {
    command: 'kms:DescribeKey',
    uses: { operator: ['kmsKey'], init: ['kmsKey'] },
    why: 'doctor/init: key exists, enabled, symmetric',
  },

  // ---- Secrets Manager: EVE_WORLD_AWS_SIGNING_SECRET_ARN (statements only when it is set) ----
  {
    command: 'secretsmanager:GetSecretValue',
    uses: { runtime: ['signingSecret'] },
    why: 'the delivery signing secret, AWSCURRENT and AWSPREVIOUS (src/consumer/shared/secret-source.ts)',
  },
  // ---- Lambda: the host's published versions (deployment affinity in the Lambda shape) ----
  {
    command: 'lambda:Invoke',
    actions: ['lambda:InvokeFunction'],
    uses: { runtime: ['hostVersions'] },
    why: "the worker delivers a message to its run's host version (src/consumer/delivery/invoke.ts); qualified ARNs only",
  },
  {
    command: 'lambda:DeleteFunction',
    uses: { operator: ['hostVersions'] },
    why: "`deployments retire` deletes a retired Lambda deployment's published version (src/cli/deployments.ts); qualified ARNs only, never the function",
  },
];

export const COMMAND_PERMISSIONS: readonly CommandPermission[] = ROWS.map((r) => ({
  ...r,
  actions: r.actions ?? [r.command],
}));

/** Look up a recorded command (`SQSClient` + `SendMessageCommand`, or `sqs:SendMessage`). */
export function permissionFor(command: string): CommandPermission | undefined {
  return COMMAND_PERMISSIONS.find((p) => p.command === command);
}

const CLIENT_SERVICE: Record<string, AwsService> = {
  DynamoDBClient: 'dynamodb',
  SQSClient: 'sqs',
  S3Client: 's3',
  SchedulerClient: 'scheduler',
  KMSClient: 'kms',
  SecretsManagerClient: 'secretsmanager',
  LambdaClient: 'lambda',
};

/** `DynamoDBClient` + `QueryCommand` -> `dynamodb:Query` (the key of {@link COMMAND_PERMISSIONS}). */
export function commandKey(clientName: string, commandName: string): string {
  const service = CLIENT_SERVICE[clientName] ?? clientName;
  return `${service}:${commandName.replace(/Command$/, '')}`;
}
