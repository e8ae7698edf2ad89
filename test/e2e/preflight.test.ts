/**
 * Misconfiguration fails before anything is sent (issue 34, item 1): core's real `start()` from
 * `workflow/api` on a World whose queue, or whose table, is misnamed throws the preflight's one
 * error (resource, variable, region and endpoint, the fix), and afterwards no run exists in the
 * table the correct configuration points at and no message waits in its queue. Without the
 * preflight, core writes `run_created` and sends the first message in parallel, so one of them
 * would have landed.
 */
import { GetQueueUrlCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { loadConfig } from '../../src/config/index.js';
import { createWorld } from '../../src/index.js';
import { MissingResourceError } from '../../src/preflight/resources.js';
import { type E2e, startE2e } from '../helpers/e2e.js';

let e2e: E2e;

beforeAll(async () => {
  // No in-process poller: a message that reached the correct queue stays there for the checks.
  e2e = await startE2e({ consumer: 'none' });
});
afterAll(async () => {
  await e2e?.close();
});

/** Every run of the correct table, and whether a message waits in the correct queue. */
async function leftBehind(): Promise<{ runs: number; message: boolean }> {
  const runs = await e2e.world.runs.list({ resolveData: 'none', pagination: { limit: 10 } });
  const { sqs } = e2e.fixture.clients;
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: e2e.fixture.config.queue }));
  const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 10 }));
  return { runs: runs.data.length, message: (received.Messages ?? []).length > 0 };
}

describe('start() on a misconfigured World', () => {
  it('a misnamed queue: start() throws the error naming it, and no run is created in the table', async () => {
    const misnamed = `${e2e.fixture.config.queue}-typo`;
    const world = createWorld({
      config: loadConfig({ ...e2e.fixture.env, EVE_WORLD_AWS_QUEUE: misnamed }),
      consumer: { consumer: 'none' },
    });
    try {
      const err = await start(e2e.workflows.addition as never, [1, 2], { world }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MissingResourceError);
      const message = (err as Error).message;
      expect(message).toContain(
        `the SQS queue ${misnamed} does not exist (named by EVE_WORLD_AWS_QUEUE=${misnamed}; region us-east-1, endpoint ${e2e.fixture.env.AWS_ENDPOINT_URL_SQS}`,
      );
      expect(message).toMatch(/`eve-world-aws doctor`.*`eve-world-aws init` creates them/);
      // Only the queue is named: the table and bucket exist.
      expect((err as MissingResourceError).missing.map((m) => m.resource)).toEqual(['queue']);
      expect(await leftBehind()).toEqual({ runs: 0, message: false });
    } finally {
      await world.close();
    }
  });

  it('a misnamed table: start() throws the error naming it, and no message reaches the queue', async () => {
    const misnamed = `${e2e.fixture.config.tableName}-typo`;
    const world = createWorld({
      config: loadConfig({ ...e2e.fixture.env, EVE_WORLD_AWS_TABLE: misnamed }),
      consumer: { consumer: 'none' },
    });
    try {
      const err = await start(e2e.workflows.addition as never, [1, 2], { world }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MissingResourceError);
      expect((err as Error).message).toContain(
        `the DynamoDB table ${misnamed} does not exist (named by EVE_WORLD_AWS_TABLE=${misnamed}; region us-east-1, endpoint ${e2e.fixture.env.AWS_ENDPOINT_URL_DYNAMODB}`,
      );
      expect(await leftBehind()).toEqual({ runs: 0, message: false });
      // world.start() (the poller's host) refuses the same way, before its consumer polls.
      await expect(world.start()).rejects.toThrow(MissingResourceError);
    } finally {
      await world.close();
    }
  });

  it('the correct World still starts and its run is where it should be (the checks above can fail)', async () => {
    const run = await start(e2e.workflows.addition as never, [1, 2], { world: e2e.world });
    expect(await leftBehind()).toEqual({ runs: 1, message: true });
    expect(run.runId).toMatch(/^wrun_/);
  });
});
