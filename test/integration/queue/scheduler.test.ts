/**
 * Long delays through EventBridge Scheduler. Most cases run over the wire against the embedded
 * emulator's Scheduler (emulator/scheduler.ts): the World creates its schedule in its own
 * group (made by the fixture's reconcile, as `init` does), reads back as sent, and the schedule
 * fires into the real (emulated) queue. Two cases need a schedule to fire EARLY, which the
 * Scheduler never does: for those a recording fake stands in for the client, records every
 * CreateSchedule, and "fires" by sending its Input to the queue itself, to prove the consumer
 * still holds the message until it is due.
 */
import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ListSchedulesCommand,
} from '@aws-sdk/client-scheduler';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import type { WorldTuning } from '../../../src/config/index.js';
import { bodyAliveUntil } from '../../../src/queue/body-lifetime.js';
import { createOneTimeSchedule, type SchedulerPort } from '../../../src/queue/delays.js';
import { decodeEnvelope, decodePayload } from '../../../src/queue/encoding.js';
import { sweepHeldBodies } from '../../../src/sweep/held-bodies.js';
import { deliverAtClock, makeWorld, receiveAll, sleep, type World, waitFor } from '../../helpers/queue.js';

const Q = '__wkf_workflow_sleepy' as ValidQueueName;
const ROLE = 'arn:aws:iam::123456789012:role/eve-world-scheduler';

class RecordingScheduler implements SchedulerPort {
  readonly calls: CreateScheduleCommand['input'][] = [];
  /** `sqs` is read lazily: the World (and its client) is built after the fake. */
  constructor(private readonly sqs: () => SQSClient) {}

  async send(command: CreateScheduleCommand): Promise<unknown> {
    if (!(command instanceof CreateScheduleCommand)) throw new Error(`unexpected command ${String(command)}`);
    if (this.calls.some((c) => c.Name === command.input.Name && c.GroupName === command.input.GroupName)) {
      throw Object.assign(new Error('schedule exists'), { name: 'ConflictException' });
    }
    this.calls.push(command.input);
    return {
      ScheduleArn: `arn:aws:scheduler:us-east-1:123456789012:schedule/${command.input.GroupName}/${command.input.Name}`,
    };
  }

  /** Deliver schedule `i`'s Input to its SQS target now, as the Scheduler would at its time. */
  async fire(i: number): Promise<void> {
    const target = this.calls[i].Target!;
    const name = target.Arn!.split(':').pop()!;
    const { QueueUrl } = await this.sqs().send(new GetQueueUrlCommand({ QueueName: name }));
    await this.sqs().send(new SendMessageCommand({ QueueUrl, MessageBody: target.Input! }));
  }
}

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

async function schedWorld(tuning: Partial<WorldTuning> = {}) {
  let sqs: SQSClient | undefined;
  const fake = new RecordingScheduler(() => sqs as SQSClient);
  const w = await makeWorld({
    env: {
      EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2',
      EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE,
    },
    tuning: { maxDelayHopSeconds: 1, ...tuning },
    start: false,
    queueOptions: { scheduler: fake },
  });
  sqs = w.fixture.clients.sqs;
  worlds.push(w);
  return { w, fake };
}

async function arnOf(w: World, url: string): Promise<string> {
  const out = await w.fixture.clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  return out.Attributes!.QueueArn!;
}

/** A World whose long waits go through the emulator's Scheduler (its own group, created by reconcile). */
async function wireWorld(tuning: Partial<WorldTuning> = {}) {
  const w = await makeWorld({
    env: { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2', EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: ROLE },
    tuning: { maxDelayHopSeconds: 1, ...tuning },
    start: false,
  });
  worlds.push(w);
  return w;
}

async function schedulesOf(w: World) {
  const scheduler = await w.fixture.clients.scheduler();
  const group = w.fixture.config.schedulerGroup;
  const { Schedules = [] } = await scheduler.send(new ListSchedulesCommand({ GroupName: group }));
  return Promise.all(Schedules.map((s) => scheduler.send(new GetScheduleCommand({ Name: s.Name, GroupName: group }))));
}

async function deleteSchedules(w: World) {
  const scheduler = await w.fixture.clients.scheduler();
  for (const s of await schedulesOf(w))
    await scheduler.send(new DeleteScheduleCommand({ Name: s.Name, GroupName: s.GroupName }));
}

describe.concurrent('EventBridge Scheduler long waits (the emulator, over the wire)', () => {
  test("creates one one-time schedule in the World's own group at the due time targeting the queue, deleted after completion", async ({
    expect,
  }) => {
    const w = await wireWorld();
    expect(w.fixture.config.schedulerGroup).toBe(w.fixture.config.prefix);
    const before = Date.now();
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_sched' }, { delaySeconds: 82_800 });
    const all = await schedulesOf(w);
    expect(all).toHaveLength(1);
    const s = all[0];
    expect(s.GroupName).toBe(w.fixture.config.prefix);
    expect(s.Name).toMatch(/^[0-9A-Za-z_.-]{1,64}$/);
    expect(s.ActionAfterCompletion).toBe('DELETE');
    expect(s.FlexibleTimeWindow).toEqual({ Mode: 'OFF' });
    expect(s.ScheduleExpressionTimezone).toBe('UTC');
    expect(s.State).toBe('ENABLED');
    const at = Date.parse(`${/^at\((.+)\)$/.exec(s.ScheduleExpression!)![1]}Z`);
    expect(at).toBeGreaterThanOrEqual(before + 82_800_000);
    expect(at).toBeLessThanOrEqual(Date.now() + 82_800_000 + 1000);
    expect(s.Target?.Arn).toBe(await arnOf(w, await w.queue.transport.queueUrl()));
    expect(s.Target?.RoleArn).toBe(ROLE);
    expect(s.Target?.DeadLetterConfig?.Arn).toBe(await arnOf(w, await w.queue.transport.dlqUrl()));
    const env = decodeEnvelope(s.Target!.Input!)!;
    expect(env).toMatchObject({ queueName: Q, messageId });
    expect(env.deliverAt).toBeGreaterThanOrEqual(before + 82_800_000);
    // Nothing went to SQS directly.
    expect(await receiveAll(w, await w.queue.transport.queueUrl())).toHaveLength(0);
    await deleteSchedules(w);
  });

  test('every schedule has a unique name; short delays stay on SQS', async ({ expect }) => {
    const w = await wireWorld();
    await Promise.all([
      w.queue.queue(Q, { runId: 'a' }, { delaySeconds: 5000 }),
      w.queue.queue(Q, { runId: 'b' }, { delaySeconds: 5000 }),
      w.queue.queue(Q, { runId: 'c' }, { delaySeconds: 20_000 }),
      w.queue.queue(Q, { runId: 'd' }, { delaySeconds: 1 }),
    ]);
    const all = await schedulesOf(w);
    expect(all).toHaveLength(3);
    expect(new Set(all.map((c) => c.Name)).size).toBe(3);
    expect(await receiveAll(w, await w.queue.transport.queueUrl(), 2)).toHaveLength(1);
    await deleteSchedules(w);
  });

  test('a wait longer than the hop fires from the Scheduler into the queue and is delivered once, when due', async ({
    expect,
  }) => {
    const w = await wireWorld();
    await w.queue.start();
    const sentAt = Date.now();
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_wire', input: new Uint8Array([7, 0]) } as any, {
      delaySeconds: 3,
    });
    expect(await schedulesOf(w)).toHaveLength(1);
    await waitFor(() => w.deliveries.length === 1, 20_000, 'scheduled delivery');
    expect(w.deliveries[0].at - sentAt).toBeGreaterThanOrEqual(3000);
    expect(w.deliveries[0].meta).toMatchObject({ messageId, queueName: Q, attempt: 1 });
    expect(Array.from(w.deliveries[0].body.input)).toEqual([7, 0]);
    // The schedule deleted itself after it fired.
    expect(await schedulesOf(w)).toHaveLength(0);
    await sleep(1500);
    expect(w.deliveries).toHaveLength(1);
  });
});

describe.concurrent('EventBridge Scheduler long waits (recording fake: schedules that fire early)', () => {
  test('a schedule that fires early is held by the consumer until due, then delivered once', async ({ expect }) => {
    const { w, fake } = await schedWorld();
    await w.queue.start();
    const sentAt = Date.now();
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_early', input: new Uint8Array([0, 9]) } as any, {
      delaySeconds: 4,
    });
    expect(fake.calls).toHaveLength(1);
    await fake.fire(0); // about 4 s early
    await waitFor(() => w.deliveries.length === 1, 20_000, 'scheduled delivery');
    expect(w.deliveries[0].at - sentAt).toBeGreaterThanOrEqual(4000);
    expect(w.deliveries[0].meta).toMatchObject({ messageId, queueName: Q, attempt: 1 });
    expect(Array.from(w.deliveries[0].body.input)).toEqual([0, 9]);
    await sleep(1500);
    expect(w.deliveries).toHaveLength(1);
  });

  test('a body too large for the schedule input goes to S3 first and still arrives intact', async ({ expect }) => {
    const { w, fake } = await schedWorld();
    await w.queue.start();
    const input = new Uint8Array(20_000).map((_, i) => i % 251);
    await w.queue.queue(Q, { runId: 'wrun_bigsched', input } as any, { delaySeconds: 2 });
    const env = decodeEnvelope(fake.calls[0].Target!.Input!)!;
    expect(env.s3Key).toMatch(/^queue\/msg_/);
    expect(env.body).toBeUndefined();
    expect(fake.calls[0].Target!.Input!.length).toBeLessThanOrEqual(8192);
    await fake.fire(0);
    await waitFor(() => w.deliveries.length === 1, 20_000, 'delivery');
    expect(Array.from(w.deliveries[0].body.input as Uint8Array)).toEqual(Array.from(input));
  });
});

describe('the body of a scheduled message outlives its schedule', () => {
  const DAY = 86_400_000;

  test('a schedule 60 days out keeps its body under queue-held/ until the copy it sends is gone; the sweep then deletes it', async () => {
    const { w, fake } = await schedWorld({ payloadThresholdBytes: 1000 });
    const input = new Uint8Array(20_000).map((_, i) => i % 241);
    const { messageId } = await w.queue.queue(Q, { runId: 'wrun_far', input } as any, {
      delaySeconds: 60 * 86_400,
    });
    // A near schedule of the same size stays under the expiring prefix.
    await w.queue.queue(Q, { runId: 'wrun_near', input } as any, { delaySeconds: 2 * 86_400 });
    expect(fake.calls).toHaveLength(2);
    const far = decodeEnvelope(fake.calls[0].Target!.Input!)!;
    const near = decodeEnvelope(fake.calls[1].Target!.Input!)!;
    expect(near.s3Key).toMatch(/^queue\/msg_[^/]+\/\d+$/);
    expect(far.s3Key).toMatch(new RegExp(`^queue-held/${messageId}/\\d+$`));
    const until = bodyAliveUntil(far.s3Key!);
    // Alive past the schedule's time + the Scheduler's 1-day retries + 14 days of SQS retention.
    expect(until).toBeGreaterThanOrEqual(far.deliverAt! + 16 * DAY - 1000);

    // The schedule fires 60 days later: the copy it sends is delivered with the original bytes.
    await fake.fire(0);
    const [copy] = await receiveAll(w, await w.queue.transport.queueUrl());
    const r = await deliverAtClock(w, copy, far.deliverAt! + 1);
    expect(r.outcome).toMatchObject({ action: 'delete', reason: 'ack', messageId });
    expect(Array.from((decodePayload(r.delivered ?? '') as { input: Uint8Array }).input)).toEqual(Array.from(input));

    // Before its time the sweep keeps the held body; after it, a dry run lists it and a sweep deletes it.
    expect((await sweepHeldBodies(w.ctx, { now: until - 1000 })).expired).toBe(0);
    const dry = await sweepHeldBodies(w.ctx, { now: until + 1000, dryRun: true });
    expect(dry.keys).toEqual([far.s3Key]);
    expect(Buffer.from(await w.ctx.payloads.getBytes(far.s3Key!)).length).toBeGreaterThan(0);
    const swept = await sweepHeldBodies(w.ctx, { now: until + 1000 });
    expect(swept).toMatchObject({ scanned: 1, expired: 1, failures: [] });
    await expect(w.ctx.payloads.getBytes(far.s3Key!)).rejects.toThrow();
    // The near body is not the sweep's: it expires by the bucket's lifecycle rule.
    expect((await w.ctx.payloads.getBytes(near.s3Key!)).byteLength).toBeGreaterThan(0);
  });
});

test('re-creating an existing schedule name is treated as already scheduled', async () => {
  const fake = new RecordingScheduler(() => undefined as unknown as SQSClient);
  const s = {
    name: 'eve_X_1',
    group: 'g',
    at: new Date(Date.now() + 3_600_000),
    queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
    roleArn: ROLE,
    input: '{}',
  };
  await createOneTimeSchedule(fake, s);
  await expect(createOneTimeSchedule(fake, s)).resolves.toBeUndefined();
  expect(fake.calls).toHaveLength(1);
});
