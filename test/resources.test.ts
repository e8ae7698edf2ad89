import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../src/aws/clients.js';
import { reconcile, hasProblems } from '../src/resources.js';
import { createTableWithoutIndexes, testConfig } from './helpers/aws.js';

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

  it('reports drift: a table without its GSIs and a queue without a redrive policy', async () => {
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
      expect(queue.state).toBe('drift');
      expect(queue.details.join('\n')).toMatch(/no redrive policy/);
      expect(queue.fix).toMatch(/set-queue-attributes/);
      expect(hasProblems(out)).toBe(true);
    } finally {
      await c.ddb.send(new DeleteTableCommand({ TableName: drifted.tableName })).catch(() => {});
      destroyClients(c);
    }
  });
});
