/**
 * A real workflow's sleep through EventBridge Scheduler, over the wire: the World is configured
 * with a scheduler role and a hop maximum of 2 s (`maxDelayHopSeconds`), so a 4 s sleep is longer
 * than an SQS hop may be and delays.ts plans it as a one-time `at()` schedule. The schedule goes
 * to the embedded emulator's Scheduler in the World's own group (created by the fixture's
 * reconcile, as `init` does), fires into the emulated queue when due, and the run completes.
 */
import { GetScheduleCommand, type GetScheduleCommandOutput } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { isNotFound } from '../../src/aws/sdk-errors.js';
import { type E2e, startE2e } from '../helpers/e2e.js';

const ROLE = 'arn:aws:iam::000000000000:role/eve-world-e2e-scheduler';

let e2e: E2e;
const created: { Name?: string; GroupName?: string; ScheduleExpression?: string }[] = [];
let sqsDelays: number[] = [];

beforeAll(async () => {
  e2e = await startE2e({ tuning: { maxDelayHopSeconds: 2 }, extraEnv: { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE } });
  const { clients } = e2e.fixture;
  (await clients.scheduler()).middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'CreateScheduleCommand')
        created.push((args as { input: (typeof created)[number] }).input);
      return next(args);
    },
    { step: 'initialize', name: 'e2eRecordSchedules' },
  );
  clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input: { DelaySeconds?: number } }).input;
      if ((context as { commandName?: string }).commandName === 'SendMessageCommand' && input.DelaySeconds)
        sqsDelays.push(input.DelaySeconds);
      return next(args);
    },
    { step: 'initialize', name: 'e2eRecordDelays' },
  );
});
afterAll(async () => {
  await e2e?.close();
});

const wf = (name: string) => e2e.workflows[name] as never;

async function getSchedule(name: string): Promise<GetScheduleCommandOutput | undefined> {
  const scheduler = await e2e.fixture.clients.scheduler();
  try {
    return await scheduler.send(new GetScheduleCommand({ Name: name, GroupName: e2e.fixture.config.schedulerGroup }));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

describe('a sleep longer than the SQS hop, through EventBridge Scheduler', () => {
  it("sleeps 4 s via a one-time schedule in the World's own group and completes; the schedule deletes itself", async () => {
    sqsDelays = [];
    const t0 = Date.now();
    const run = await start(wf('sleepThenStep'), ['4s']);
    // The sleep's wake-up became a schedule (not SQS hops); while it waits, it is on the Scheduler.
    for (let i = 0; i < 100 && created.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(created).toHaveLength(1);
    expect(created[0].GroupName).toBe(e2e.fixture.config.prefix);
    const pending = await getSchedule(created[0].Name!);
    expect(pending).toMatchObject({ State: 'ENABLED', ActionAfterCompletion: 'DELETE' });
    expect(pending?.Target?.Arn).toMatch(new RegExp(`:${e2e.fixture.config.queue}$`));

    expect(await run.returnValue).toBe(3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4000);
    expect(await e2e.world.runs.get(run.runId)).toMatchObject({ status: 'completed' });
    // No SQS delay hop carried the wait; the schedule fired once and is gone.
    expect(sqsDelays).toEqual([]);
    expect(created).toHaveLength(1);
    expect(await getSchedule(created[0].Name!)).toBeUndefined();
  });
});
