import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../src/aws/clients.js';
import { hasProblems, reconcile } from '../../src/provision/index.js';
import { createTableWithoutIndexes, testConfig } from '../helpers/aws.js';

describe('reconcile (init)', () => {
  const config = testConfig();
  const clients = createClients(config);
  afterAll(() => destroyClients(clients));

  it('dry run on an empty account plans every resource and creates nothing', async () => {
    const plan = await reconcile(clients, config, 'dry-run');
    expect(plan.map((r) => [r.kind, r.state])).toEqual([
      ['table', 'would-create'],
      ['dlq', 'would-create'],
      ['queue', 'would-create'],
      ['bucket', 'would-create'],
    ]);
    const verify = await reconcile(clients, config, 'verify');
    expect(verify.every((r) => r.state === 'missing')).toBe(true);
    await expect(clients.sqs.send(new GetQueueUrlCommand({ QueueName: `${config.prefix}-queue` }))).rejects.toThrow();
  });

  it('creates everything, then a second run reports every resource present', async () => {
    const first = await reconcile(clients, config, 'apply');
    expect(first.map((r) => r.state)).toEqual(['created', 'created', 'created', 'created']);
    const second = await reconcile(clients, config, 'apply');
    expect(second.map((r) => r.state)).toEqual(['present', 'present', 'present', 'present']);
    expect(hasProblems(second)).toBe(false);
  });

  it('reports drift: a table without its GSIs; fixes a queue without a redrive policy', async () => {
    const drifted = testConfig();
    const c = createClients(drifted);
    try {
      await createTableWithoutIndexes(c, drifted.tableName);
      await c.sqs.send(new CreateQueueCommand({ QueueName: `${drifted.prefix}-queue` }));
      const out = await reconcile(c, drifted, 'apply');
      const table = out.find((r) => r.kind === 'table')!;
      const queue = out.find((r) => r.kind === 'queue')!;
      expect(table.state).toBe('drift');
      expect(table.details.join('\n')).toMatch(/GSI1 is missing/);
      expect(table.fix).toBeTruthy();
      expect(queue.state).toBe('updated');
      expect(queue.details.join('\n')).toMatch(/no redrive policy/);
      expect(hasProblems(out)).toBe(true); // the table
      const again = await reconcile(c, drifted, 'verify');
      expect(again.find((r) => r.kind === 'queue')?.state).toBe('present');
    } finally {
      await c.ddb.send(new DeleteTableCommand({ TableName: drifted.tableName })).catch(() => {});
      destroyClients(c);
    }
  });

  it('detects queue visibility, redrive and retention drift; dry run plans the fix, apply fixes it', async () => {
    const drifted = testConfig();
    const c = createClients(drifted);
    try {
      await reconcile(c, drifted, 'apply');
      const url = (await c.sqs.send(new GetQueueUrlCommand({ QueueName: `${drifted.prefix}-queue` }))).QueueUrl!;
      const dlqUrl = (await c.sqs.send(new GetQueueUrlCommand({ QueueName: `${drifted.prefix}-dlq` }))).QueueUrl!;
      const dlqArn = (
        await c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))
      ).Attributes!.QueueArn!;
      await c.sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: url,
          Attributes: {
            VisibilityTimeout: '30',
            MessageRetentionPeriod: '345600',
            RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 }),
          },
        }),
      );
      const verify = (await reconcile(c, drifted, 'verify')).find((r) => r.kind === 'queue')!;
      expect(verify.state).toBe('drift');
      const text = verify.details.join('\n');
      expect(text).toMatch(/visibility timeout is 30 s, configured 900 s/);
      expect(text).toMatch(/redrives after 3 receives, configured 10/);
      expect(text).toMatch(/message retention is 345600 s/);
      expect(verify.fix).toMatch(/eve-world-aws init/);
      expect((await reconcile(c, drifted, 'dry-run')).find((r) => r.kind === 'queue')?.state).toBe('would-update');
      expect((await reconcile(c, drifted, 'apply')).find((r) => r.kind === 'queue')?.state).toBe('updated');
      const attrs = (await c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] })))
        .Attributes!;
      expect(attrs.VisibilityTimeout).toBe('900');
      expect(JSON.parse(attrs.RedrivePolicy!).maxReceiveCount).toBe(10);
      expect((await reconcile(c, drifted, 'verify')).every((r) => r.state === 'present')).toBe(true);
    } finally {
      destroyClients(c);
    }
  });
});
