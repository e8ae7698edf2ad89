/**
 * The embedded emulator's EventBridge Scheduler endpoint, driven by the real
 * `@aws-sdk/client-scheduler` over the wire (the endpoint the global setup started, found through
 * AWS_ENDPOINT_URL_SCHEDULER like any client): groups, schedules, the error shapes
 * src/aws/sdk-errors.ts recognises, and schedules that fire into the emulated SQS queues.
 */
import { randomBytes } from 'node:crypto';
import {
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  DeleteScheduleGroupCommand,
  GetScheduleCommand,
  GetScheduleGroupCommand,
  ListScheduleGroupsCommand,
  ListSchedulesCommand,
  SchedulerClient,
} from '@aws-sdk/client-scheduler';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { isConflict, isNotFound, isUnsupported, isValidation } from '../../../src/aws/sdk-errors.js';
import { atExpression, createOneTimeSchedule } from '../../../src/queue/delays.js';
import { stackEndpoint, stackEnv } from '../../helpers/aws.js';

const ROLE = 'arn:aws:iam::000000000000:role/eve-world-local-scheduler';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const scheduler = new SchedulerClient({
  endpoint: stackEndpoint('AWS_ENDPOINT_URL_SCHEDULER'),
  region: 'us-east-1',
  credentials,
  maxAttempts: 1,
});
const sqs = new SQSClient({ endpoint: stackEnv().AWS_ENDPOINT_URL_SQS, region: 'us-east-1', credentials });
afterAll(() => {
  scheduler.destroy();
  sqs.destroy();
});

const unique = (tag: string) => `${tag}-${randomBytes(4).toString('hex')}`;
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

async function queue(): Promise<{ url: string; arn: string }> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: unique('sched-q') }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: QueueUrl!, AttributeNames: ['QueueArn'] }),
  );
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

async function receive(url: string, waitSeconds: number): Promise<Message[]> {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      WaitTimeSeconds: waitSeconds,
      MaxNumberOfMessages: 10,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return out.Messages ?? [];
}

/** A one-time schedule `seconds` from now (whole seconds, UTC) sending `input` to `arn`. */
function oneTime(
  group: string,
  arn: string,
  input: string,
  seconds: number,
  extra: Partial<CreateScheduleCommandInput> = {},
): CreateScheduleCommandInput {
  return {
    Name: unique('s'),
    GroupName: group,
    ScheduleExpression: atExpression(new Date(Math.ceil(Date.now() / 1000 + seconds) * 1000)),
    ScheduleExpressionTimezone: 'UTC',
    FlexibleTimeWindow: { Mode: 'OFF' },
    ActionAfterCompletion: 'DELETE',
    Target: { Arn: arn, RoleArn: ROLE, Input: input },
    ...extra,
  };
}

describe('EventBridge Scheduler endpoint of the embedded emulator', () => {
  it('groups are created once, read, listed and deleted; `default` always exists', async () => {
    const name = unique('g');
    const created = await scheduler.send(new CreateScheduleGroupCommand({ Name: name }));
    expect(created.ScheduleGroupArn).toBe(`arn:aws:scheduler:us-east-1:000000000000:schedule-group/${name}`);
    const again = await failure(scheduler.send(new CreateScheduleGroupCommand({ Name: name })));
    expect(isConflict(again)).toBe(true);
    expect((again as Error).name).toBe('ConflictException');

    const got = await scheduler.send(new GetScheduleGroupCommand({ Name: name }));
    expect(got).toMatchObject({ Name: name, State: 'ACTIVE', Arn: created.ScheduleGroupArn });
    expect(got.CreationDate).toBeInstanceOf(Date);
    expect(Math.abs(got.CreationDate!.getTime() - Date.now())).toBeLessThan(60_000);
    expect((await scheduler.send(new GetScheduleGroupCommand({ Name: 'default' }))).State).toBe('ACTIVE');

    const listed = await scheduler.send(new ListScheduleGroupsCommand({ NamePrefix: name }));
    expect(listed.ScheduleGroups?.map((g) => g.Name)).toEqual([name]);

    await scheduler.send(new DeleteScheduleGroupCommand({ Name: name }));
    const gone = await failure(scheduler.send(new GetScheduleGroupCommand({ Name: name })));
    expect(isNotFound(gone)).toBe(true);
    expect((gone as Error).name).toBe('ResourceNotFoundException');
    expect(isValidation(await failure(scheduler.send(new DeleteScheduleGroupCommand({ Name: 'default' }))))).toBe(true);
  });

  it('pages the group listing', async () => {
    const prefix = unique('pg');
    for (const i of [1, 2, 3]) await scheduler.send(new CreateScheduleGroupCommand({ Name: `${prefix}-${i}` }));
    const first = await scheduler.send(new ListScheduleGroupsCommand({ NamePrefix: prefix, MaxResults: 2 }));
    expect(first.ScheduleGroups?.map((g) => g.Name)).toEqual([`${prefix}-1`, `${prefix}-2`]);
    const second = await scheduler.send(
      new ListScheduleGroupsCommand({ NamePrefix: prefix, MaxResults: 2, NextToken: first.NextToken }),
    );
    expect(second.ScheduleGroups?.map((g) => g.Name)).toEqual([`${prefix}-3`]);
    expect(second.NextToken).toBeUndefined();
  });

  it('a schedule in a group that does not exist is ResourceNotFoundException; malformed ones are ValidationException', async () => {
    const q = await queue();
    const missing = await failure(
      scheduler.send(new CreateScheduleCommand(oneTime(unique('nogroup'), q.arn, 'x', 60))),
    );
    expect(isNotFound(missing)).toBe(true);
    expect((missing as Error).message).toMatch(/Schedule group .* does not exist/);

    const group = unique('g');
    await scheduler.send(new CreateScheduleGroupCommand({ Name: group }));
    for (const bad of [
      { ScheduleExpression: 'at(tomorrow)' },
      { Target: { Arn: q.arn, RoleArn: 'not-a-role', Input: 'x' } },
      { FlexibleTimeWindow: { Mode: 'SOMETIMES' as never } },
      { Name: 'has a space' },
      { Target: { Arn: q.arn, RoleArn: ROLE, RetryPolicy: { MaximumRetryAttempts: 500 } } },
    ]) {
      const err = await failure(
        scheduler.send(new CreateScheduleCommand({ ...oneTime(group, q.arn, 'x', 60), ...bad })),
      );
      expect(isValidation(err), JSON.stringify(bad)).toBe(true);
    }
    const tz = await failure(
      scheduler.send(
        new CreateScheduleCommand({ ...oneTime(group, q.arn, 'x', 60), ScheduleExpressionTimezone: 'Europe/Paris' }),
      ),
    );
    expect(isUnsupported(tz)).toBe(true);
  });

  it('creates, reads back, refuses a second create of the name, lists and deletes a schedule', async () => {
    const q = await queue();
    const group = unique('g');
    await scheduler.send(new CreateScheduleGroupCommand({ Name: group }));
    const input = oneTime(group, q.arn, '{"hello":"world"}', 3600, {
      Description: 'a test',
      Target: {
        Arn: q.arn,
        RoleArn: ROLE,
        Input: '{"hello":"world"}',
        RetryPolicy: { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 3 },
        DeadLetterConfig: { Arn: q.arn },
      },
    });
    const { ScheduleArn } = await scheduler.send(new CreateScheduleCommand(input));
    expect(ScheduleArn).toBe(`arn:aws:scheduler:us-east-1:000000000000:schedule/${group}/${input.Name}`);
    const conflict = await failure(scheduler.send(new CreateScheduleCommand(input)));
    expect(isConflict(conflict)).toBe(true);
    // The same name in another group is another schedule.
    await scheduler.send(new CreateScheduleCommand({ ...input, GroupName: undefined }));

    const got = await scheduler.send(new GetScheduleCommand({ Name: input.Name, GroupName: group }));
    expect(got).toMatchObject({
      Arn: ScheduleArn,
      Name: input.Name,
      GroupName: group,
      ScheduleExpression: input.ScheduleExpression,
      ScheduleExpressionTimezone: 'UTC',
      State: 'ENABLED',
      Description: 'a test',
      ActionAfterCompletion: 'DELETE',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: input.Target,
    });
    expect(got.CreationDate).toBeInstanceOf(Date);
    const listed = await scheduler.send(new ListSchedulesCommand({ GroupName: group }));
    expect(listed.Schedules?.map((s) => [s.Name, s.Target?.Arn])).toEqual([[input.Name, q.arn]]);

    await scheduler.send(new DeleteScheduleCommand({ Name: input.Name, GroupName: group }));
    expect(
      isNotFound(await failure(scheduler.send(new GetScheduleCommand({ Name: input.Name, GroupName: group })))),
    ).toBe(true);
    expect(
      isNotFound(await failure(scheduler.send(new DeleteScheduleCommand({ Name: input.Name, GroupName: group })))),
    ).toBe(true);
    // The copy in `default` is still there; delete it too.
    await scheduler.send(new DeleteScheduleCommand({ Name: input.Name }));
  });

  it('fires a one-time schedule into its SQS queue at its time, then deletes it (ActionAfterCompletion: DELETE)', async () => {
    const q = await queue();
    const group = unique('g');
    await scheduler.send(new CreateScheduleGroupCommand({ Name: group }));
    const s = oneTime(group, q.arn, 'the body, as is', 2, {
      Target: { Arn: q.arn, RoleArn: ROLE, Input: 'the body, as is', SqsParameters: { MessageGroupId: 'ignored' } },
    });
    const due = Date.parse(`${/^at\((.+)\)$/.exec(s.ScheduleExpression!)![1]}Z`);
    await scheduler.send(new CreateScheduleCommand(s));
    expect(await receive(q.url, 0)).toEqual([]);
    const messages: Message[] = [];
    while (messages.length === 0 && Date.now() < due + 15_000) messages.push(...(await receive(q.url, 2)));
    expect(messages.map((m) => m.Body)).toEqual(['the body, as is']);
    // Never early.
    expect(Number(messages[0].Attributes?.SentTimestamp ?? Date.now())).toBeGreaterThanOrEqual(due);
    expect(Date.now()).toBeGreaterThanOrEqual(due);
    expect(isNotFound(await failure(scheduler.send(new GetScheduleCommand({ Name: s.Name, GroupName: group }))))).toBe(
      true,
    );
  });

  it('ActionAfterCompletion NONE keeps the schedule after it fired; a DISABLED one never fires', async () => {
    const q = await queue();
    const group = unique('g');
    await scheduler.send(new CreateScheduleGroupCommand({ Name: group }));
    const kept = oneTime(group, q.arn, 'kept', 1, { ActionAfterCompletion: 'NONE' });
    const disabled = oneTime(group, q.arn, 'disabled', 1, { State: 'DISABLED' });
    await scheduler.send(new CreateScheduleCommand(kept));
    await scheduler.send(new CreateScheduleCommand(disabled));
    const messages: Message[] = [];
    const until = Date.now() + 4000;
    while (Date.now() < until) messages.push(...(await receive(q.url, 1)));
    expect(messages.map((m) => m.Body)).toEqual(['kept']);
    expect((await scheduler.send(new GetScheduleCommand({ Name: kept.Name, GroupName: group }))).State).toBe('ENABLED');
    expect((await scheduler.send(new GetScheduleCommand({ Name: disabled.Name, GroupName: group }))).State).toBe(
      'DISABLED',
    );
  });

  it('an invocation that cannot be delivered goes to the dead-letter queue with the error, once retries are spent', async () => {
    const dlq = await queue();
    const group = unique('g');
    await scheduler.send(new CreateScheduleGroupCommand({ Name: group }));
    const nowhere = 'arn:aws:sqs:us-east-1:000000000000:no-such-queue-for-the-scheduler';
    const s = oneTime(group, nowhere, 'lost?', 1, {
      Target: {
        Arn: nowhere,
        RoleArn: ROLE,
        Input: 'lost?',
        RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        DeadLetterConfig: { Arn: dlq.arn },
      },
    });
    await scheduler.send(new CreateScheduleCommand(s));
    const messages: Message[] = [];
    const until = Date.now() + 15_000;
    while (messages.length === 0 && Date.now() < until) messages.push(...(await receive(dlq.url, 2)));
    expect(messages.map((m) => m.Body)).toEqual(['lost?']);
    expect(messages[0].MessageAttributes?.TARGET_ARN?.StringValue).toBe(nowhere);
    expect(messages[0].MessageAttributes?.SCHEDULE_ARN?.StringValue).toMatch(
      new RegExp(`schedule/${group}/${s.Name}$`),
    );
    expect(messages[0].MessageAttributes?.ERROR_CODE?.StringValue).toBeTruthy();
  });

  it("the World's CreateSchedule (createOneTimeSchedule) is accepted as sent, and a retried send is a no-op", async () => {
    const q = await queue();
    const group = unique('g');
    await scheduler.send(new CreateScheduleGroupCommand({ Name: group }));
    const s = {
      name: unique('eve'),
      group,
      at: new Date(Math.ceil(Date.now() / 1000 + 3600) * 1000),
      queueArn: q.arn,
      roleArn: ROLE,
      input: '{"v":1}',
      deadLetterArn: q.arn,
    };
    await createOneTimeSchedule(scheduler, s);
    await expect(createOneTimeSchedule(scheduler, s)).resolves.toBeUndefined();
    expect(await scheduler.send(new GetScheduleCommand({ Name: s.name, GroupName: group }))).toMatchObject({
      ScheduleExpression: atExpression(s.at),
      ActionAfterCompletion: 'DELETE',
      Target: { Arn: q.arn, RoleArn: ROLE, Input: '{"v":1}', DeadLetterConfig: { Arn: q.arn } },
    });
    // A missing group is an error that names the fix.
    await expect(createOneTimeSchedule(scheduler, { ...s, group: unique('gone') })).rejects.toThrow(
      /schedule group "gone-[0-9a-f]+" does not exist .*eve-world-aws init/,
    );
    await scheduler.send(new DeleteScheduleCommand({ Name: s.name, GroupName: group }));
  });
});
