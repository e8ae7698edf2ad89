/**
 * The principals and the resources of the IAM command table (./iam-actions.ts): who sends AWS
 * commands, and what they may touch. Each resource maps to exactly one ARN pattern in
 * ./iam-policy.ts (and one binding in src/cdk/grants.ts).
 *
 * Principals:
 * - `runtime`: the World inside the host (eve) and the SQS worker: storage, queue send + receive,
 *   streams, payload offload, long-wait schedules.
 * - `operator`: the read/repair CLI commands (`doctor`, `redrive`, `tail`, `runs`) on top of
 *   `runtime`. Only this principal reads the DLQ or deletes from it; at run time the consumer only
 *   sends to it (a message whose failed dispatches reached the redrive policy's limit,
 *   src/consumer/delivery/failures.ts), beside SQS's own moves through the redrive policy.
 * - `init`: creating and reconfiguring the resources (`init`, `emulate`). Deploy-time only.
 * - `destroy`: `eve-world-aws destroy` (src/provision/destroy.ts): reading whether each resource
 *   holds data, emptying the bucket, deleting the resources `init` created. Deploy-time only, and
 *   never part of a printed policy: an operator runs it with their own administrative role.
 * - `sweeper`: the scheduled orphan sweep (src/sweep/sweep-handler.ts, deployed by the CDK
 *   construct): exactly the commands `sweepOrphans` and a liveness backstop tick (src/backstop/)
 *   send, each named in its row's `why` (`sweep:`, `backstop:`); nothing of the Scheduler, and no
 *   Decrypt (it never reads an object's or a message's content).
 *   Every one of them is also a `runtime` row, so the operator policy (which includes `runtime`)
 *   covers `eve-world-aws sweep`. test/integration/sweep/sweep-handler.test.ts records what a sweep
 *   sends and checks it against the table's `sweeper` rows.
 */

export type IamPrincipal = 'runtime' | 'operator' | 'init' | 'sweeper' | 'destroy';

export type AwsService = 'dynamodb' | 'sqs' | 's3' | 'scheduler' | 'kms' | 'secretsmanager' | 'lambda';

/**
 * The resources of one deployment, each with the IAM service prefix of the actions that may land on
 * it (`kms:*` only on the key, `iam:*` only on the role).
 */
export const RESOURCE_SERVICE = {
  table: 'dynamodb',
  tableIndexes: 'dynamodb',
  queue: 'sqs',
  dlq: 'sqs',
  bucket: 's3',
  bucketObjects: 's3',
  scheduleGroup: 'scheduler',
  scheduleGroupSchedules: 'scheduler',
  schedulerRole: 'iam',
  kmsKey: 'kms',
  signingSecret: 'secretsmanager',
  /** The published versions of the host function (`<function ARN>:*`), which the worker invokes. */
  hostVersions: 'lambda',
} as const;

export type IamResource = keyof typeof RESOURCE_SERVICE;
