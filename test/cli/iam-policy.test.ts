/**
 * `init --print-iam-policy [--operator | --scheduler-role]`: generated from the IAM command table,
 * partition-aware, PassRole limited to EventBridge Scheduler, the DLQ only in the operator policy.
 * Printing touches no AWS endpoint (the env points at a closed port).
 */
import { describe, expect, it } from 'vitest';
import { actionsByResource } from '../../src/aws/iam-actions.js';
import { partitionOf } from '../../src/aws/iam-policy.js';
import { runCli } from './helpers.js';

const ROLE = 'arn:aws-us-gov:iam::123456789012:role/eve-sched';

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    EVE_WORLD_AWS_PREFIX: 'pol',
    AWS_REGION: 'us-gov-west-1',
    // Nothing listens here: printing a policy must not call AWS.
    AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
    ...extra,
  };
}

type Doc = { Version: string; Statement: Array<{ Sid: string; Action: string[]; Resource: string[]; Condition?: object }> };

async function print(args: string[], extra?: Record<string, string>): Promise<Doc & Record<string, unknown>> {
  const r = await runCli(['init', '--print-iam-policy', '--account', '123456789012', ...args], env(extra));
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('init --print-iam-policy', () => {
  it('World policy: the runtime rows of the table, partition-aware ARNs, PassRole only to scheduler.amazonaws.com, no DLQ', async () => {
    const doc = await print([], { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE });
    expect(doc.Version).toBe('2012-10-17');
    const all = doc.Statement.flatMap((s) => s.Resource);
    for (const r of all) if (!r.startsWith('arn:aws-us-gov:s3:::')) expect(r).toMatch(/^arn:aws-us-gov:[a-z]+:(us-gov-west-1)?:123456789012:/);
    expect(all).not.toContain('arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-dlq');
    expect(new Set(doc.Statement.flatMap((s) => s.Action))).toEqual(new Set([...actionsByResource('runtime').values()].flat()));
    const passRole = doc.Statement.find((s) => s.Action.includes('iam:PassRole'));
    expect(passRole).toEqual({
      Sid: 'WorldPassSchedulerRole',
      Effect: 'Allow',
      Action: ['iam:PassRole'],
      Resource: [ROLE],
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    });
    expect(doc.Statement.find((s) => s.Action.includes('scheduler:CreateSchedule'))?.Resource).toEqual([
      'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule/default/*',
    ]);
    expect(doc.Statement.find((s) => s.Action.includes('dynamodb:Scan'))?.Resource).toEqual(['arn:aws-us-gov:dynamodb:us-gov-west-1:123456789012:table/pol']);
  });

  it('without a scheduler role there are no Scheduler or PassRole statements', async () => {
    const doc = await print([]);
    expect(doc.Statement.flatMap((s) => s.Action).filter((a) => a.startsWith('scheduler:') || a.startsWith('iam:'))).toEqual([]);
  });

  it('--operator adds exactly what redrive needs on the DLQ, on top of the World policy', async () => {
    const doc = await print(['--operator']);
    const dlq = doc.Statement.find((s) => s.Resource.includes('arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-dlq'));
    expect(dlq?.Action).toEqual(['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage']);
    expect(dlq?.Action).not.toContain('sqs:SendMessage');
    const queue = doc.Statement.find((s) => s.Resource.includes('arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-queue'));
    expect(queue?.Action).toContain('sqs:SendMessage');
  });

  it("--scheduler-role prints the role's trust policy (this account only) and its one permission", async () => {
    const doc = (await print(['--scheduler-role'], { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE })) as unknown as {
      trustPolicy: { Statement: Array<Record<string, unknown>> };
      policy: Doc;
    };
    expect(doc.trustPolicy.Statement).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Action: 'sts:AssumeRole',
        Condition: { StringEquals: { 'aws:SourceAccount': '123456789012' } },
      },
    ]);
    expect(doc.policy.Statement).toEqual([
      { Sid: 'SchedulerSendToQueue', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: ['arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-queue'] },
    ]);
  });

  it('--operator without --print-iam-policy is a usage error', async () => {
    const r = await runCli(['init', '--operator'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/only go with --print-iam-policy/);
  });

  it('partitions follow the region', () => {
    expect(partitionOf('us-east-1')).toBe('aws');
    expect(partitionOf('cn-north-1')).toBe('aws-cn');
    expect(partitionOf('us-gov-west-1')).toBe('aws-us-gov');
    expect(partitionOf(undefined)).toBe('aws');
  });
});
