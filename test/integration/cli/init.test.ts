/**
 * `eve-world-aws init` through the real CLI against the shared emulator stack, each case with its
 * own EVE_WORLD_AWS_PREFIX.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { CreateScheduleGroupCommand, GetScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../emulator/stack.js';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { loadConfig } from '../../../src/config/index.js';
import { CREDENTIALS_FIX, REGION_FIX } from '../../../src/preflight/aws-environment.js';
import { reconcile } from '../../../src/provision/index.js';
import { createTableWithoutIndexes, stackEnv, uniquePrefix } from '../../helpers/aws.js';
import { runCli } from '../../helpers/cli.js';

function envFor(prefix = uniquePrefix('cli')): Record<string, string> {
  return { ...stackEnv(), EVE_WORLD_AWS_PREFIX: prefix };
}

type Report = { kind: string; name: string; state: string; details: string[]; fix?: string };

describe('eve-world-aws init', () => {
  it('--dry-run lists what it would create and creates nothing', async () => {
    const env = envFor();
    const r = await runCli(['init', '--dry-run', '--json'], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; mode: string; resources: Report[] };
    expect(out.ok).toBe(true);
    expect(out.mode).toBe('dry-run');
    expect(out.resources.map((x) => [x.kind, x.name, x.state])).toEqual([
      ['table', env.EVE_WORLD_AWS_PREFIX, 'would-create'],
      ['dlq', `${env.EVE_WORLD_AWS_PREFIX}-dlq`, 'would-create'],
      ['queue', `${env.EVE_WORLD_AWS_PREFIX}-queue`, 'would-create'],
      ['bucket', `${env.EVE_WORLD_AWS_PREFIX}-payloads`, 'would-create'],
    ]);

    const human = await runCli(['init', '--dry-run'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/would create/);
    expect(human.stdout).toMatch(/Dry run: would create 4 resources; nothing was changed\./);

    const config = loadConfig(env);
    const c = createClients(config);
    try {
      await expect(c.ddb.send(new DescribeTableCommand({ TableName: config.tableName }))).rejects.toThrow();
      await expect(c.sqs.send(new GetQueueUrlCommand({ QueueName: `${config.prefix}-queue` }))).rejects.toThrow();
      await expect(c.sqs.send(new GetQueueUrlCommand({ QueueName: `${config.prefix}-dlq` }))).rejects.toThrow();
      await expect((await c.s3()).send(new HeadBucketCommand({ Bucket: config.bucket }))).rejects.toThrow();
    } finally {
      destroyClients(c);
    }
  });

  it('creates everything, then a second run reports every resource present and changes nothing', async () => {
    const env = envFor();
    const first = await runCli(['init'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Created 4 resources; 0 already present\./);
    expect(first.stdout).not.toMatch(/\u001b\[/); // no colours when stdout is not a terminal

    const second = await runCli(['init', '--json'], env);
    expect(second.code).toBe(0);
    const out = JSON.parse(second.stdout) as { ok: boolean; resources: Report[] };
    expect(out.ok).toBe(true);
    expect(out.resources.map((x) => x.state)).toEqual(['present', 'present', 'present', 'present']);

    const third = await runCli(['init'], env);
    expect(third.stdout).toMatch(/All 4 resources present; nothing changed\./);
    // A dry run on a complete set-up has nothing to do.
    const plan = await runCli(['init', '--dry-run'], env);
    expect(plan.stdout).toMatch(/Dry run: all 4 resources present; nothing to do\./);
  });

  it('reports drift as an error (exit 1) with the fix', async () => {
    const env = envFor();
    const config = loadConfig(env);
    const c = createClients(config);
    try {
      await createTableWithoutIndexes(c, config.tableName);
      const r = await runCli(['init'], env);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/DRIFT/);
      expect(r.stdout).toMatch(/fix: .*EVE_WORLD_AWS_TABLE/);
      // What init can fix itself (the TTL), it fixes; the indexes need a person.
      expect(r.stdout).toMatch(/time to live: not enabled.*fixed: enable TTL/);
      expect(r.stdout).toMatch(/1 resource need attention/);

      const j = await runCli(['init', '--json'], env);
      expect(j.code).toBe(1);
      const out = JSON.parse(j.stdout) as { ok: boolean; resources: Report[] };
      expect(out.ok).toBe(false);
      const table = out.resources.find((x) => x.kind === 'table')!;
      expect(table.state).toBe('drift');
      expect(table.details.join('\n')).toMatch(/GSI1 is missing/);
      expect(table.fix).toBeTruthy();
      // The rest was still reconciled: present after the first (failed) run.
      expect(out.resources.filter((x) => x.kind !== 'table').map((x) => x.state)).toEqual([
        'present',
        'present',
        'present',
      ]);
    } finally {
      await c.ddb.send(new DeleteTableCommand({ TableName: config.tableName })).catch(() => {});
      destroyClients(c);
    }
  });

  it('--print-iam-policy prints the least-privilege policy with the resource ARNs, touching nothing', async () => {
    const env = envFor();
    const p = env.EVE_WORLD_AWS_PREFIX;
    const r = await runCli(['init', '--print-iam-policy', '--account', '123456789012'], env);
    expect(r.code).toBe(0);
    const policy = JSON.parse(r.stdout) as {
      Version: string;
      Statement: Array<{ Action: string[]; Resource: string[] }>;
    };
    expect(policy.Version).toBe('2012-10-17');
    const resources = policy.Statement.flatMap((s) => s.Resource);
    expect(resources).toEqual(
      expect.arrayContaining([
        `arn:aws:dynamodb:us-east-1:123456789012:table/${p}`,
        `arn:aws:dynamodb:us-east-1:123456789012:table/${p}/index/*`,
        `arn:aws:sqs:us-east-1:123456789012:${p}-queue`,
        `arn:aws:s3:::${p}-payloads/*`,
      ]),
    );
    expect(resources.some((x) => x === '*')).toBe(false);
    // At run time the World only sends to the DLQ (the consumer dead-letters poison itself,
    // src/consumer/delivery/failures.ts); reading and deleting there is the operator's (--operator).
    const onDlq = policy.Statement.filter((s) => s.Resource.includes(`arn:aws:sqs:us-east-1:123456789012:${p}-dlq`));
    expect(onDlq.flatMap((s) => s.Action).sort()).toEqual(['sqs:GetQueueUrl', 'sqs:SendMessage']);
    expect(
      policy.Statement.flatMap((s) => s.Action).some((a) => a.endsWith(':*') || a.startsWith('dynamodb:Create')),
    ).toBe(false);

    const bad = await runCli(['init', '--print-iam-policy', '--account', '12'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/12-digit AWS account id/);
  });

  it('a bad variable is a config error: exit 2, one line naming it with an example, no stack trace', async () => {
    const r = await runCli(['init'], { ...envFor(), EVE_WORLD_AWS_QUEUE: 'not a queue!' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^error: EVE_WORLD_AWS_QUEUE is not a valid SQS queue name or URL .* Example: EVE_WORLD_AWS_QUEUE=eve-world-queue/,
    );
    expect(r.stdout).toBe('');
  });

  it('says so when nothing answers at the endpoint (exit 1)', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const r = await runCli(['init'], {
      ...envFor(),
      AWS_ENDPOINT_URL_DYNAMODB: dead,
      AWS_ENDPOINT_URL_SQS: dead,
      AWS_ENDPOINT_URL_S3: dead,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: eve-world-aws: cannot reach the AWS endpoint http.*: ECONNREFUSED.*eve-world-aws emulate/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("no region, no credentials: the World's own one line (exit 2 for the region, 1 for credentials)", async () => {
    // No profile files, no instance metadata: the SDK fails before it opens a connection.
    const home = mkdtempSync(path.join(tmpdir(), 'eve-world-aws-init-'));
    const bare = {
      HOME: home,
      AWS_CONFIG_FILE: path.join(home, 'none'),
      AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'none'),
      AWS_EC2_METADATA_DISABLED: 'true',
      EVE_WORLD_AWS_PREFIX: uniquePrefix('cli'),
    };
    try {
      const noRegion = await runCli(['init'], bare);
      expect(noRegion.code).toBe(2);
      expect(noRegion.stderr).toBe(`error: eve-world-aws: no AWS region configured. ${REGION_FIX}\n`);
      const noCredentials = await runCli(['init'], { ...bare, AWS_REGION: 'us-east-1' });
      expect(noCredentials.code).toBe(1);
      expect(noCredentials.stderr).toMatch(/^error: eve-world-aws: no AWS credentials found \(.+\)\. (.+)\n$/);
      expect(noCredentials.stderr).toContain(CREDENTIALS_FIX);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  describe("with a scheduler role: the World's own schedule group", () => {
    const ROLE = 'arn:aws:iam::000000000000:role/eve-world-init-scheduler';
    const withRole = (extra: Record<string, string> = {}): Record<string, string> => ({
      ...envFor(),
      EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE,
      ...extra,
    });

    it('creates it (named from the prefix), a second init is a no-op, and a dry run plans it first', async () => {
      const env = withRole();
      const prefix = env.EVE_WORLD_AWS_PREFIX;
      const plan = JSON.parse((await runCli(['init', '--dry-run', '--json'], env)).stdout) as { resources: Report[] };
      expect(plan.resources.map((x) => [x.kind, x.name, x.state])).toContainEqual([
        'schedule-group',
        prefix,
        'would-create',
      ]);

      const first = await runCli(['init', '--json'], env);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toBe(''); // its own group: no warning
      const created = JSON.parse(first.stdout) as { resources: Report[] };
      expect(created.resources.map((x) => [x.kind, x.name, x.state])).toEqual([
        ['table', prefix, 'created'],
        ['dlq', `${prefix}-dlq`, 'created'],
        ['queue', `${prefix}-queue`, 'created'],
        ['bucket', `${prefix}-payloads`, 'created'],
        ['schedule-group', prefix, 'created'],
      ]);
      const c = createClients(loadConfig(env));
      try {
        const group = await (await c.scheduler()).send(new GetScheduleGroupCommand({ Name: prefix }));
        expect(group).toMatchObject({ Name: prefix, State: 'ACTIVE' });
      } finally {
        destroyClients(c);
      }

      const second = await runCli(['init'], env);
      expect(second.code).toBe(0);
      expect(second.stdout).toMatch(/All 5 resources present; nothing changed\./);
      expect(second.stdout).toMatch(/schedule-group\s+│\s+\S+\s+│\s+present/);
    });

    it('a group of that name that exists already is verified, not an error', async () => {
      const env = withRole();
      const c = createClients(loadConfig(env));
      try {
        await (await c.scheduler()).send(new CreateScheduleGroupCommand({ Name: env.EVE_WORLD_AWS_PREFIX }));
      } finally {
        destroyClients(c);
      }
      const r = await runCli(['init', '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      const group = (JSON.parse(r.stdout) as { resources: Report[] }).resources.find(
        (x) => x.kind === 'schedule-group',
      );
      expect(group).toMatchObject({ state: 'present', details: ['exists (ACTIVE)'] });
    });

    it('verify mode (doctor) reports a missing group with the fix; without a role there is no group at all', async () => {
      const env = withRole();
      const config = loadConfig(env);
      const c = createClients(config);
      try {
        const reports = await reconcile(c, config, 'verify');
        expect(reports.find((x) => x.kind === 'schedule-group')).toMatchObject({
          name: config.prefix,
          state: 'missing',
          fix: 'run `eve-world-aws init`',
        });
        const none = loadConfig(envFor(config.prefix));
        expect((await reconcile(c, none, 'verify')).map((x) => x.kind)).not.toContain('schedule-group');
      } finally {
        destroyClients(c);
      }
    });

    it('the shared `default` group only as an explicit choice: used as it is, and init warns', async () => {
      const env = withRole({ EVE_WORLD_AWS_SCHEDULER_GROUP: 'default' });
      const r = await runCli(['init', '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(
        /^warning: EVE_WORLD_AWS_SCHEDULER_GROUP=default is the account's shared "default" schedule group, so any schedule there may use the Scheduler role/,
      );
      const group = (JSON.parse(r.stdout) as { resources: Report[] }).resources.find(
        (x) => x.kind === 'schedule-group',
      );
      expect(group?.state).toBe('present');
      expect(group?.details.join('\n')).toMatch(/warning: .*shared "default" schedule group/);
    });
  });
});
