/**
 * `eve-world-aws destroy` against the emulators: a plan by default; with `--yes` it refuses (and
 * deletes nothing) while the table or bucket holds data; with `--yes --force` it removes the
 * schedule group, queue, DLQ, bucket (objects first) and table `init` created; a second run finds
 * nothing; another World's resources are never touched.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueNameOf } from '../../../src/aws/arn.js';
import { runCli } from '../../helpers/cli.js';
import { createRun, type OpsFixture, opsFixture } from '../../helpers/runs.js';

const ROLE = 'arn:aws:iam::000000000000:role/destroy-sched';
let f: OpsFixture;
let other: OpsFixture;

beforeAll(async () => {
  f = await opsFixture({ EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE }, 'dstr');
  other = await opsFixture({}, 'keep');
});

afterAll(async () => {
  await f?.close();
  await other?.close();
});

/** Which of the fixture's resources exist, by kind. */
async function present(x: OpsFixture): Promise<Record<string, boolean>> {
  const { config, clients } = x.fixture;
  const exists = (p: Promise<unknown>) =>
    p.then(
      () => true,
      () => false,
    );
  const s3 = await clients.s3();
  return {
    table: await exists(clients.ddb.send(new DescribeTableCommand({ TableName: config.tableName }))),
    queue: await exists(clients.sqs.send(new GetQueueUrlCommand({ QueueName: queueNameOf(config.queue) }))),
    dlq: await exists(clients.sqs.send(new GetQueueUrlCommand({ QueueName: queueNameOf(config.deadLetterQueue) }))),
    bucket: await exists(s3.send(new HeadBucketCommand({ Bucket: config.bucket }))),
    ...(config.schedulerRoleArn
      ? {
          'schedule-group': await exists(
            (await clients.scheduler()).send(new GetScheduleGroupCommand({ Name: config.schedulerGroup })),
          ),
        }
      : {}),
  };
}

type Json = { deleted: boolean; resources: { kind: string; name: string; state: string; holdsData: boolean }[] };
const states = (out: Json) => Object.fromEntries(out.resources.map((r) => [r.kind, r.state]));

describe('destroy', () => {
  it('refuses while the table and bucket hold data, then removes everything with --force, and only this World', async () => {
    await createRun(f.world, 'wf-destroy');
    const s3 = await f.fixture.clients.s3();
    await s3.send(new PutObjectCommand({ Bucket: f.fixture.config.bucket, Key: 'runs/x/a', Body: 'a' }));
    await s3.send(new PutObjectCommand({ Bucket: f.fixture.config.bucket, Key: 'runs/x/b', Body: 'b' }));
    const all = { table: true, queue: true, dlq: true, bucket: true, 'schedule-group': true };
    expect(await present(f)).toEqual(all);

    const plan = await runCli(['destroy', '--json'], f.env);
    expect(plan.code).toBe(0);
    const planned = JSON.parse(plan.stdout) as Json;
    expect(planned.deleted).toBe(false);
    expect(states(planned)).toEqual({
      'schedule-group': 'would-delete',
      queue: 'would-delete',
      dlq: 'would-delete',
      bucket: 'kept',
      table: 'kept',
    });

    const refused = await runCli(['destroy', '--yes'], f.env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('nothing was deleted');
    // The rows say what happened, not the plan: no "would delete" above "nothing was deleted".
    expect(refused.stdout).not.toContain('would delete');
    expect(refused.stdout).toMatch(/queue\s+│\s+\S+-queue\s+│\s+not deleted/);
    const refusedJson = await runCli(['destroy', '--yes', '--json'], f.env);
    expect(states(JSON.parse(refusedJson.stdout) as Json)).toEqual({
      'schedule-group': 'not-deleted',
      queue: 'not-deleted',
      dlq: 'not-deleted',
      bucket: 'kept',
      table: 'kept',
    });
    expect(refused.stderr).toContain('holds data');
    expect(await present(f)).toEqual(all);

    const forced = await runCli(['destroy', '--yes', '--force', '--json'], f.env);
    expect(forced.stderr).toBe('');
    expect(forced.code).toBe(0);
    const done = JSON.parse(forced.stdout) as Json;
    expect(done.deleted).toBe(true);
    expect(new Set(Object.values(states(done)))).toEqual(new Set(['deleted']));
    expect(await present(f)).toEqual({
      table: false,
      queue: false,
      dlq: false,
      bucket: false,
      'schedule-group': false,
    });

    const again = await runCli(['destroy', '--yes', '--json'], f.env);
    expect(again.code).toBe(0);
    expect(new Set(Object.values(states(JSON.parse(again.stdout) as Json)))).toEqual(new Set(['absent']));

    expect(await present(other)).toEqual({ table: true, queue: true, dlq: true, bucket: true });
  });

  it('deletes empty resources with --yes alone', async () => {
    const empty = await opsFixture({}, 'dsem');
    try {
      const r = await runCli(['destroy', '--yes'], empty.env);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Deleted 4 resource(s).');
      expect(await present(empty)).toEqual({ table: false, queue: false, dlq: false, bucket: false });
    } finally {
      await empty.close();
    }
  });
});
