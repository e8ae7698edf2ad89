/**
 * `init --print-iam-policy [--operator | --scheduler-role]`: generated from the IAM command table,
 * partition-aware, PassRole limited to EventBridge Scheduler; on the DLQ the World only sends (a
 * message whose failures reached the limit), reading it is the operator policy's.
 * Printing touches no AWS endpoint (the env points at a closed port).
 */
import { describe, expect, it } from 'vitest';
import { actionsByResource } from '../../../src/provision/principal-actions.js';
import { runCli } from '../../helpers/cli.js';

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

type Doc = {
  Version: string;
  Statement: Array<{ Sid: string; Action: string[]; Resource: string[]; Condition?: object }>;
};

async function print(args: string[], extra?: Record<string, string>): Promise<Doc & Record<string, unknown>> {
  const r = await runCli(['init', '--print-iam-policy', '--account', '123456789012', ...args], env(extra));
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('init --print-iam-policy', () => {
  it('World policy: the runtime rows of the table, partition-aware ARNs, PassRole only to scheduler.amazonaws.com, only a send to the DLQ', async () => {
    const doc = await print([], { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE });
    expect(doc.Version).toBe('2012-10-17');
    const all = doc.Statement.flatMap((s) => s.Resource);
    for (const r of all)
      if (!r.startsWith('arn:aws-us-gov:s3:::'))
        expect(r).toMatch(/^arn:aws-us-gov:[a-z]+:(us-gov-west-1)?:123456789012:/);
    // The consumer moves a message whose failures reached the limit (src/consumer/delivery/failures.ts).
    const onDlq = doc.Statement.filter((s) =>
      s.Resource.includes('arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-dlq'),
    );
    expect(onDlq.flatMap((s) => s.Action).sort()).toEqual(['sqs:GetQueueUrl', 'sqs:SendMessage']);
    // Every runtime action of the table, except the KMS, Secrets Manager and Lambda ones (no key,
    // no secret ARN, no host function here).
    const runtime = [...actionsByResource('runtime').values()]
      .flat()
      .filter((a) => !a.startsWith('kms:') && !a.startsWith('secretsmanager:') && !a.startsWith('lambda:'));
    expect(new Set(doc.Statement.flatMap((s) => s.Action))).toEqual(new Set(runtime));
    const passRole = doc.Statement.find((s) => s.Action.includes('iam:PassRole'));
    expect(passRole).toEqual({
      Sid: 'WorldPassSchedulerRole',
      Effect: 'Allow',
      Action: ['iam:PassRole'],
      Resource: [ROLE],
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    });
    // The World's own group by default, named from the prefix like the table (not the account's shared `default`).
    expect(doc.Statement.find((s) => s.Action.includes('scheduler:CreateSchedule'))?.Resource).toEqual([
      'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule/pol/*',
    ]);
    // Creating and reading the group is init's and doctor's business, not the World's.
    expect(doc.Statement.flatMap((s) => s.Action).filter((a) => /ScheduleGroup/.test(a))).toEqual([]);
    expect(doc.Statement.find((s) => s.Action.includes('dynamodb:TransactWriteItems'))).toBeUndefined(); // the action is per item kind
    expect(doc.Statement.find((s) => s.Action.includes('dynamodb:ConditionCheckItem'))?.Resource).toEqual([
      'arn:aws-us-gov:dynamodb:us-gov-west-1:123456789012:table/pol',
    ]);
    expect(doc.Statement.find((s) => s.Action.includes('s3:ListBucket'))?.Resource).toEqual([
      'arn:aws-us-gov:s3:::pol-payloads',
    ]);
    expect(doc.Statement.flatMap((s) => s.Action).filter((a) => a.startsWith('kms:'))).toEqual([]);
  });

  it('--scheduler-role names the configured group; only an explicit shared `default` group is warned about on stderr', async () => {
    const own = await runCli(
      ['init', '--print-iam-policy', '--account', '123456789012', '--scheduler-role'],
      env({ EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE, EVE_WORLD_AWS_SCHEDULER_GROUP: 'pol-waits' }),
    );
    expect(own.code, own.stderr).toBe(0);
    expect(own.stderr).toBe('');
    expect(JSON.parse(own.stdout).trustPolicy.Statement[0].Condition.StringEquals['aws:SourceArn']).toBe(
      'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule-group/pol-waits',
    );
    // Unset: the World's own group, no warning.
    const byDefault = await runCli(
      ['init', '--print-iam-policy', '--account', '123456789012', '--scheduler-role'],
      env({ EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE }),
    );
    expect(byDefault.code, byDefault.stderr).toBe(0);
    expect(byDefault.stderr).toBe('');
    expect(JSON.parse(byDefault.stdout).trustPolicy.Statement[0].Condition.StringEquals['aws:SourceArn']).toBe(
      'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule-group/pol',
    );
    // The account's shared group, only as an explicit choice, and then with a warning.
    const shared = await runCli(
      ['init', '--print-iam-policy', '--account', '123456789012', '--scheduler-role'],
      env({ EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE, EVE_WORLD_AWS_SCHEDULER_GROUP: 'default' }),
    );
    expect(shared.code).toBe(0);
    expect(JSON.parse(shared.stdout).trustPolicy.Statement[0].Condition.StringEquals['aws:SourceArn']).toBe(
      'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule-group/default',
    );
    expect(shared.stderr).toMatch(
      /^warning: EVE_WORLD_AWS_SCHEDULER_GROUP=default is the account's shared "default" schedule group.*any schedule there may use the Scheduler role/s,
    );
  });

  it('with EVE_WORLD_AWS_SIGNING_SECRET_ARN the World may read that secret, and only that one', async () => {
    const arn = 'arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:eve-signing-AbCdEf';
    const doc = await print([], { EVE_WORLD_AWS_SIGNING_SECRET_ARN: arn });
    expect(doc.Statement.filter((s) => s.Action.some((a) => a.startsWith('secretsmanager:')))).toEqual([
      { Sid: 'WorldSigningSecret', Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [arn] },
    ]);
  });

  it("with EVE_WORLD_AWS_HOST_FUNCTION the World (the worker) may invoke that function's published versions, and nothing else", async () => {
    const doc = await print([], { EVE_WORLD_AWS_HOST_FUNCTION: 'agent-Host1234' });
    expect(doc.Statement.filter((s) => s.Action.some((a) => a.startsWith('lambda:')))).toEqual([
      {
        Sid: 'WorldInvokeHostVersions',
        Effect: 'Allow',
        Action: ['lambda:InvokeFunction'],
        Resource: ['arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:agent-Host1234:*'],
      },
    ]);
  });

  it('with EVE_WORLD_AWS_KMS_KEY_ID the World may generate and unwrap data keys under that key only', async () => {
    const keyArn = 'arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const byArn = await print([], { EVE_WORLD_AWS_KMS_KEY_ID: keyArn });
    expect(byArn.Statement.filter((s) => s.Action.some((a) => a.startsWith('kms:')))).toEqual([
      { Sid: 'WorldRunKeys', Effect: 'Allow', Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Resource: [keyArn] },
    ]);
    // A bare key id becomes an ARN in the target partition, region and account.
    const byId = await print([], { EVE_WORLD_AWS_KMS_KEY_ID: '1234abcd-12ab-34cd-56ef-1234567890ab' });
    expect(byId.Statement.find((s) => s.Sid === 'WorldRunKeys')?.Resource).toEqual([keyArn]);
    // An alias ARN: every key of its account and region that carries the alias.
    const byAliasArn = await print([], {
      EVE_WORLD_AWS_KMS_KEY_ID: 'arn:aws-us-gov:kms:us-gov-east-1:210987654321:alias/eve',
    });
    expect(byAliasArn.Statement.find((s) => s.Sid === 'WorldRunKeys')).toMatchObject({
      Resource: ['arn:aws-us-gov:kms:us-gov-east-1:210987654321:key/*'],
      Condition: { 'ForAnyValue:StringEquals': { 'kms:ResourceAliases': 'alias/eve' } },
    });
  });

  it('--deployer: what init needs, CreateGrant only for AWS resources (the table under the key)', async () => {
    const doc = await print(['--deployer'], { EVE_WORLD_AWS_KMS_KEY_ID: 'alias/eve-world' });
    const alias = { 'ForAnyValue:StringEquals': { 'kms:ResourceAliases': 'alias/eve-world' } };
    expect(doc.Statement.filter((s) => s.Sid.startsWith('InitRunKeys'))).toEqual([
      {
        Sid: 'InitRunKeys',
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:DescribeKey', 'kms:GenerateDataKey'],
        Resource: ['arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/*'],
        Condition: alias,
      },
      {
        Sid: 'InitRunKeysGrants',
        Effect: 'Allow',
        Action: ['kms:CreateGrant'],
        Resource: ['arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/*'],
        Condition: { ...alias, Bool: { 'kms:GrantIsForAWSResource': 'true' } },
      },
    ]);
    const actions = doc.Statement.flatMap((s) => s.Action);
    for (const a of [
      'dynamodb:CreateTable',
      'dynamodb:UpdateTable',
      'sqs:SetQueueAttributes',
      's3:PutBucketPolicy',
      's3:PutEncryptionConfiguration',
    ])
      expect(actions).toContain(a);
    // Deploy-time only: no data-plane reads or writes, but for the table's format item, which
    // init reads and records (dynamodb:GetItem, dynamodb:PutItem: src/provision/table-format.ts).
    for (const a of ['dynamodb:PutItem', 'dynamodb:GetItem']) expect(actions).toContain(a);
    for (const a of ['dynamodb:UpdateItem', 'dynamodb:Query', 'sqs:SendMessage', 's3:GetObject'])
      expect(actions).not.toContain(a);
  });

  it('without a scheduler role there are no Scheduler or PassRole statements', async () => {
    for (const flags of [[], ['--deployer'], ['--operator']]) {
      const doc = await print(flags);
      expect(
        doc.Statement.flatMap((s) => s.Action).filter((a) => a.startsWith('scheduler:') || a.startsWith('iam:')),
        flags.join(' '),
      ).toEqual([]);
    }
  });

  it('with a scheduler role, --deployer may create and read the schedule group, --operator (doctor) only read it', async () => {
    const group = 'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule-group/pol';
    const deployer = await print(['--deployer'], { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE });
    expect(deployer.Statement.filter((s) => s.Action.some((a) => a.startsWith('scheduler:')))).toEqual([
      {
        Sid: 'InitScheduleGroup',
        Effect: 'Allow',
        Action: ['scheduler:CreateScheduleGroup', 'scheduler:GetScheduleGroup'],
        Resource: [group],
      },
    ]);
    // init never creates schedules nor passes the role.
    expect(deployer.Statement.flatMap((s) => s.Action)).not.toContain('iam:PassRole');
    const operator = await print(['--operator'], { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE });
    expect(operator.Statement.find((s) => s.Sid === 'OperatorScheduleGroup')).toEqual({
      Sid: 'OperatorScheduleGroup',
      Effect: 'Allow',
      Action: ['scheduler:GetScheduleGroup'],
      Resource: [group],
    });
    // An explicit group name is what every policy and the trust name.
    const own = await print(['--deployer'], {
      EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE,
      EVE_WORLD_AWS_SCHEDULER_GROUP: 'pol-waits',
    });
    expect(own.Statement.find((s) => s.Sid === 'InitScheduleGroup')?.Resource).toEqual([`${group}-waits`]);
  });

  it('--operator adds exactly what redrive needs on the DLQ, on top of the World policy', async () => {
    const doc = await print(['--operator']);
    const dlq = doc.Statement.find((s) => s.Resource.includes('arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-dlq'));
    expect(dlq?.Action).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
      // The World's own (the dead letter it moves there); redrive only reads and deletes.
      'sqs:SendMessage',
    ]);
    const queue = doc.Statement.find((s) =>
      s.Resource.includes('arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-queue'),
    );
    expect(queue?.Action).toContain('sqs:SendMessage');
  });

  it("--scheduler-role prints the role's trust policy (this account's schedule group only) and its one permission", async () => {
    const doc = (await print(['--scheduler-role'], { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE })) as unknown as {
      trustPolicy: { Statement: Array<Record<string, unknown>> };
      policy: Doc;
    };
    expect(doc.trustPolicy.Statement).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Action: 'sts:AssumeRole',
        // Only schedules of this World's group (a schedule elsewhere in the account cannot use the role).
        Condition: {
          StringEquals: {
            'aws:SourceAccount': '123456789012',
            'aws:SourceArn': 'arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule-group/pol',
          },
        },
      },
    ]);
    expect(doc.policy.Statement).toEqual([
      {
        Sid: 'SchedulerSendToQueue',
        Effect: 'Allow',
        Action: ['sqs:SendMessage'],
        Resource: ['arn:aws-us-gov:sqs:us-gov-west-1:123456789012:pol-queue'],
      },
    ]);
  });

  it('--scheduler-role with a KMS key: the role may also use the key, as a producer to the SSE-KMS queue', async () => {
    const keyArn = 'arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const doc = (await print(['--scheduler-role'], {
      EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE,
      EVE_WORLD_AWS_KMS_KEY_ID: keyArn,
    })) as unknown as { policy: Doc };
    expect(doc.policy.Statement[1]).toEqual({
      Sid: 'SchedulerQueueKey',
      Effect: 'Allow',
      Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
      Resource: [keyArn],
    });
  });

  it('--operator without --print-iam-policy is a usage error', async () => {
    const r = await runCli(['init', '--operator'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/only go with --print-iam-policy/);
  });
});
