/**
 * Where the liveness backstop sends a wake (src/backstop/wake.ts): the queue the run's last
 * acknowledged workflow delivery came on, recorded on its DUE item by the flow route's
 * acknowledgement (src/storage/write/due-moves.ts), so an app that names its queue namespace in code (eve:
 * `__eve<hex>_wkf_workflow_…`) is woken on its own queue with nothing configured; a run none was
 * acknowledged for falls back to `WORKFLOW_QUEUE_NAMESPACE`'s queue. Real DynamoDB Local; the
 * sender is the test's, so the wake's target is read exactly.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { QueuePayload, ValidQueueName } from '@workflow/world';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBackstopTick } from '../../../src/backstop/index.js';
import { createContext, type WorldContext } from '../../../src/context/world-context.js';
import { createWorld } from '../../../src/index.js';
import { keys } from '../../../src/schema/keys.js';
import { ackTurn, storageContext } from '../../../src/storage/index.js';
import { keysOf } from '../../../src/storage/table/codec.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';

let fixture: Fixture;

beforeAll(async () => {
  fixture = await createFixture({}, 'bwq');
});

/** A run created (`run_created`), never started: it owes its first delivery. */
async function createdRun(ctx: WorldContext): Promise<string> {
  const world = createWorld({ config: ctx.config, clients: fixture.clients, consumer: { consumer: 'none' } });
  try {
    const r = (await world.events.create(null, {
      eventType: 'run_created',
      specVersion: 2,
      eventData: { deploymentId: 'dep-1', workflowName: 'wf', input: [] },
    } as never)) as { run?: { runId: string } };
    return r.run?.runId ?? '';
  } finally {
    await world.close();
  }
}

/** One tick far past the check's due time, with a sender that records what it was asked to send. */
async function wakeTargets(ctx: WorldContext): Promise<Array<{ name: string; payload: QueuePayload }>> {
  const sent: Array<{ name: string; payload: QueuePayload }> = [];
  const sender = {
    queue: async (name: ValidQueueName, payload: QueuePayload) => {
      sent.push({ name, payload });
      return { messageId: `msg_${sent.length}` as never };
    },
  };
  await runBackstopTick(ctx, { sender, now: () => Date.now() + 60 * 60_000 });
  return sent;
}

describe('the backstop wakes a run on its own workflow queue', () => {
  it("on the queue its last acknowledged delivery came on (an app's namespace), with nothing configured", async () => {
    const ctx = createContext(fixture.config, fixture.clients);
    const runId = await createdRun(ctx);
    await ackTurn(storageContext(ctx), runId, 0, '__eve0a1b_wkf_workflow_wf');
    const due = await fixture.clients.ddb.send(
      new GetItemCommand({ TableName: fixture.config.tableName, Key: keysOf(keys.due(runId)), ConsistentRead: true }),
    );
    expect(due.Item?.wq?.S).toBe('__eve0a1b_wkf_workflow_wf');

    const sent = (await wakeTargets(ctx)).filter((s) => (s.payload as { runId?: string }).runId === runId);
    expect(sent.map((s) => s.name)).toEqual(['__eve0a1b_wkf_workflow_wf']);
  });

  it('without an acknowledged delivery: the queue of WORKFLOW_QUEUE_NAMESPACE, else core’s default', async () => {
    const plain = createContext(fixture.config, fixture.clients);
    const a = await createdRun(plain);
    expect(
      (await wakeTargets(plain)).filter((s) => (s.payload as { runId?: string }).runId === a).map((s) => s.name),
    ).toEqual(['__wkf_workflow_wf']);

    const named = createContext({ ...fixture.config, queueNamespace: 'evec0ffee' }, fixture.clients);
    const b = await createdRun(named);
    expect(
      (await wakeTargets(named)).filter((s) => (s.payload as { runId?: string }).runId === b).map((s) => s.name),
    ).toEqual(['__evec0ffee_wkf_workflow_wf']);
  });
});
