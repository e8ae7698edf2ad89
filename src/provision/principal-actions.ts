/**
 * What each principal of the IAM command table (./iam-actions.ts) gets, as ./iam-policy.ts prints
 * it and src/cdk/grants.ts binds it: the actions per resource (only the actions of a resource's own
 * service land on it), and the conditions its statements carry: `iam:PassRole` only to EventBridge
 * Scheduler, `kms:CreateGrant` only for an AWS resource. And what the Scheduler role itself may do.
 */
import { COMMAND_PERMISSIONS } from './iam-actions.js';
import { type IamPrincipal, type IamResource, RESOURCE_SERVICE } from './iam-resources.js';

/**
 * Actions per resource for one principal. `operator` includes `runtime` (the CLI opens a World);
 * `init` (deploy-time) and `sweeper` (the scheduled sweep) are standalone.
 */
export function actionsByResource(principal: IamPrincipal): Map<IamResource, string[]> {
  const principals: IamPrincipal[] = principal === 'operator' ? ['runtime', 'operator'] : [principal];
  const out = new Map<IamResource, Set<string>>();
  for (const p of COMMAND_PERMISSIONS) {
    for (const who of principals) {
      for (const r of p.uses[who] ?? []) {
        // Only the IAM actions of the resource's service land on it: CreateSchedule needs
        // scheduler:CreateSchedule on the schedule and iam:PassRole on the role; UpdateTable needs
        // dynamodb:UpdateTable on the table and kms:CreateGrant + DescribeKey on the key.
        const set = out.get(r) ?? new Set<string>();
        out.set(r, set);
        for (const a of p.actions) if (a.startsWith(`${RESOURCE_SERVICE[r]}:`)) set.add(a);
      }
    }
  }
  return new Map([...out].map(([r, s]) => [r, [...s].sort()]));
}

/** The condition every `iam:PassRole` carries: the role can only be handed to EventBridge Scheduler. */
export const PASS_ROLE_CONDITION = { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } } as const;

/**
 * The condition on `kms:CreateGrant`: only grants for an AWS service acting for the caller (the
 * grant DynamoDB creates when the table goes under the key), never grants to arbitrary principals.
 * It is a separate statement: on other KMS actions the key is absent and the condition would fail.
 */
export const GRANT_CONDITION = { Bool: { 'kms:GrantIsForAWSResource': 'true' } } as const;

/** KMS actions that need {@link GRANT_CONDITION}. */
export const GRANT_ACTIONS: readonly string[] = ['kms:CreateGrant'];

/** What the Scheduler role itself may do: send to the work queue, nothing else. */
export const SCHEDULER_ROLE_ACTIONS = ['sqs:SendMessage'] as const;

/** With the queue under a KMS key, sending to it also needs these on the key (SSE-KMS producer). */
export const SCHEDULER_ROLE_KMS_ACTIONS = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;
