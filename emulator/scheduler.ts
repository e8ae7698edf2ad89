/**
 * A minimal Amazon EventBridge Scheduler endpoint for the embedded emulator and the tests. None
 * can be installed here, so this speaks enough of the Scheduler's REST-JSON protocol (as the
 * serializers of `@aws-sdk/client-scheduler` send it: the name in the path, the group of a
 * schedule in the body or the `groupName` query, timestamps as epoch seconds) for the real SDK to
 * talk to it over the wire through `AWS_ENDPOINT_URL_SCHEDULER`:
 *
 *   POST|GET|DELETE /schedule-groups/{Name}   CreateScheduleGroup, GetScheduleGroup, DeleteScheduleGroup
 *   GET /schedule-groups                      ListScheduleGroups (NamePrefix, MaxResults, NextToken)
 *   POST|GET|DELETE /schedules/{Name}         CreateSchedule, GetSchedule, DeleteSchedule
 *   GET /schedules                            ListSchedules (ScheduleGroup, NamePrefix, State, ...)
 *
 * and it fires an ENABLED one-time `at(yyyy-mm-ddThh:mm:ss)` schedule (UTC) whose target is an
 * SQS queue ARN at or after its time (./scheduler-firing.ts; `SqsParameters` such as
 * `MessageGroupId` are ignored). The requests are read by ./scheduler-requests.ts.
 *
 * Invariants:
 * - Errors are the Scheduler's own shapes (`x-amzn-errortype` + `{Message}`), so src/aws/sdk-errors.ts
 *   recognises them: `ConflictException` (409) for a name that exists, `ResourceNotFoundException`
 *   (404) for a missing group or schedule (a schedule in a group that does not exist, as on AWS),
 *   `ValidationException` (400) for a malformed request.
 * - The account's `default` group always exists and cannot be deleted.
 * - Listens on 127.0.0.1 only, requires a SigV4 `Authorization` header (not verified) and refuses
 *   bodies over 256 KiB. State is in memory only; `close()` stops every pending timer.
 *
 * Not implemented: `rate()` and `cron()` schedules are stored and listed but never fire; time
 * zones other than UTC for `at()`; targets other than SQS (their invocation fails); IAM (the role
 * is checked for its ARN form only, never assumed); KMS; UpdateSchedule and the tag operations
 * (501; a group's `Tags` are accepted and kept). A group is deleted at once with its schedules
 * (AWS shows it `DELETING` for a while).
 */
import { parseArn, partitionOf } from '../src/aws/arn.js';
import { type Invocation, type Schedule, startFiring } from './scheduler-firing.js';
import { type Body, int, invalid, notFound, obj, oneOf, page, parseBody, route, str } from './scheduler-requests.js';
import { ServiceError, type ServiceServer, startServiceServer } from './service-server.js';

export interface SchedulerServerOptions {
  /** Port on 127.0.0.1 (0 = any free port). */
  port?: number;
  region?: string;
  accountId?: string;
  /** The SQS endpoint SQS targets (and dead-letter queues) are sent to, e.g. the stack's fauxqs. */
  sqsEndpoint: string;
}

export interface SchedulerServer extends ServiceServer {
  /** Every invocation so far, in order. */
  readonly invocations: readonly Invocation[];
}

interface Group {
  name: string;
  arn: string;
  created: number;
  tags: unknown;
}

const MAX_BODY = 256 * 1024;
const NAME_RE = /^[0-9a-zA-Z_.-]{1,64}$/;
const ROLE_ARN_RE = /^arn:aws(-[a-z]+)?:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const AT_RE = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/;
const RATE_RE = /^rate\(\d+ (minute|minutes|hour|hours|day|days)\)$/;
const CRON_RE = /^cron\(\S+( \S+){5}\)$/;
const UTC = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);
const SHARED_GROUP = 'default';
const seconds = (ms: number) => ms / 1000;

export async function startSchedulerServer(opts: SchedulerServerOptions): Promise<SchedulerServer> {
  const region = opts.region ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  const arnBase = `arn:${partitionOf(region)}:scheduler:${region}:${account}`;
  const groups = new Map<string, Group>();
  const schedules = new Map<string, Schedule>();

  const addGroup = (name: string, tags?: unknown): Group => {
    const g: Group = { name, arn: `${arnBase}:schedule-group/${name}`, created: Date.now(), tags };
    groups.set(name, g);
    return g;
  };
  addGroup(SHARED_GROUP);

  const key = (group: string, name: string) => `${group}/${name}`;
  const groupOf = (name: string | undefined): Group => {
    const g = groups.get(name ?? SHARED_GROUP);
    if (!g) throw notFound(`Schedule group ${name} does not exist.`);
    return g;
  };
  const scheduleOf = (group: string, name: string): Schedule => {
    const s = schedules.get(key(group, name));
    if (!s) throw notFound(`Schedule ${name} does not exist.`);
    return s;
  };

  const remove = (s: Schedule) => {
    firing.disarm(s);
    if (schedules.get(key(s.group, s.name)) === s) schedules.delete(key(s.group, s.name));
  };
  const firing = startFiring({
    sqsEndpoint: opts.sqsEndpoint,
    region,
    isCurrent: (s) => schedules.get(key(s.group, s.name)) === s,
    remove,
  });

  // ---- operations ----

  const describeGroup = (g: Group) => ({
    Arn: g.arn,
    Name: g.name,
    State: 'ACTIVE',
    CreationDate: seconds(g.created),
    LastModificationDate: seconds(g.created),
  });

  const operations: Record<string, (name: string | undefined, body: Body, query: URLSearchParams) => unknown> = {
    CreateScheduleGroup(name) {
      const n = str({ Name: name }, 'Name', { required: true, re: NAME_RE }) as string;
      if (groups.has(n)) throw new ServiceError('ConflictException', `Schedule group ${n} already exists.`, 409);
      return { ScheduleGroupArn: addGroup(n).arn };
    },
    GetScheduleGroup(name) {
      return describeGroup(groupOf(name));
    },
    DeleteScheduleGroup(name) {
      const g = groupOf(name);
      if (g.name === SHARED_GROUP) throw invalid(`The ${SHARED_GROUP} schedule group cannot be deleted.`);
      for (const s of [...schedules.values()]) if (s.group === g.name) remove(s);
      groups.delete(g.name);
      return {};
    },
    ListScheduleGroups(_name, _body, query) {
      const prefix = query.get('NamePrefix') ?? '';
      const p = page(
        [...groups.values()].filter((g) => g.name.startsWith(prefix)),
        (g) => g.name,
        query,
      );
      return { ScheduleGroups: p.items.map(describeGroup), ...(p.next ? { NextToken: p.next } : {}) };
    },
    CreateSchedule(name, body) {
      const n = str({ Name: name }, 'Name', { required: true, re: NAME_RE }) as string;
      const group = groupOf(str(body, 'GroupName', { re: NAME_RE }));
      const expression = str(body, 'ScheduleExpression', { required: true, max: 256 }) as string;
      const at = AT_RE.exec(expression);
      if (!at && !RATE_RE.test(expression) && !CRON_RE.test(expression))
        throw invalid(`Invalid Schedule Expression ${expression}.`);
      const due = at ? Date.parse(`${at[1]}Z`) : undefined;
      if (due !== undefined && Number.isNaN(due)) throw invalid(`Invalid Schedule Expression ${expression}.`);
      const timezone = str(body, 'ScheduleExpressionTimezone', { max: 50 });
      if (at && timezone !== undefined && !UTC.has(timezone))
        throw new ServiceError(
          'NotImplemented',
          `ScheduleExpressionTimezone ${timezone} is not implemented by the eve-world-aws Scheduler emulator (UTC only)`,
          501,
        );
      const window = obj(body, 'FlexibleTimeWindow', true) as Body;
      const mode = oneOf(window, 'Mode', ['OFF', 'FLEXIBLE'] as const);
      const minutes = int(window, 'MaximumWindowInMinutes', 1, 1440);
      if (mode === 'FLEXIBLE' && minutes === undefined)
        throw invalid('MaximumWindowInMinutes is required with FLEXIBLE');
      const target = obj(body, 'Target', true) as Body;
      const targetArn = str(target, 'Arn', { required: true, max: 1600 }) as string;
      if (!parseArn(targetArn)) throw invalid(`Target.Arn ${targetArn} is not an ARN`);
      str(target, 'RoleArn', { required: true, max: 1600, re: ROLE_ARN_RE });
      str(target, 'Input');
      const retry = obj(target, 'RetryPolicy');
      if (retry) {
        int(retry, 'MaximumEventAgeInSeconds', 60, 86_400);
        int(retry, 'MaximumRetryAttempts', 0, 185);
      }
      const dlq = obj(target, 'DeadLetterConfig');
      const dlqArn = dlq ? str(dlq, 'Arn', { max: 1600 }) : undefined;
      if (dlqArn !== undefined && parseArn(dlqArn)?.service !== 'sqs')
        throw invalid(`DeadLetterConfig.Arn ${dlqArn} is not an SQS queue ARN`);
      const s: Schedule = {
        name: n,
        group: group.name,
        arn: `${arnBase}:schedule/${group.name}/${n}`,
        expression,
        due,
        timezone,
        description: str(body, 'Description', { max: 512 }),
        state: oneOf(body, 'State', ['ENABLED', 'DISABLED'] as const, 'ENABLED'),
        startDate: typeof body.StartDate === 'number' ? body.StartDate : undefined,
        endDate: typeof body.EndDate === 'number' ? body.EndDate : undefined,
        kmsKeyArn: str(body, 'KmsKeyArn', { max: 2048 }),
        target: structuredClone(target),
        window: structuredClone(window),
        afterCompletion: oneOf(body, 'ActionAfterCompletion', ['NONE', 'DELETE'] as const, 'NONE'),
        created: Date.now(),
      };
      if (schedules.has(key(s.group, n)))
        throw new ServiceError('ConflictException', `Schedule ${n} already exists.`, 409);
      schedules.set(key(s.group, n), s);
      firing.arm(s);
      return { ScheduleArn: s.arn };
    },
    GetSchedule(name, _body, query) {
      const s = scheduleOf(groupOf(query.get('groupName') ?? undefined).name, name as string);
      return {
        Arn: s.arn,
        GroupName: s.group,
        Name: s.name,
        ScheduleExpression: s.expression,
        ...(s.timezone !== undefined ? { ScheduleExpressionTimezone: s.timezone } : {}),
        ...(s.description !== undefined ? { Description: s.description } : {}),
        ...(s.startDate !== undefined ? { StartDate: s.startDate } : {}),
        ...(s.endDate !== undefined ? { EndDate: s.endDate } : {}),
        ...(s.kmsKeyArn !== undefined ? { KmsKeyArn: s.kmsKeyArn } : {}),
        State: s.state,
        CreationDate: seconds(s.created),
        LastModificationDate: seconds(s.created),
        Target: s.target,
        FlexibleTimeWindow: s.window,
        ActionAfterCompletion: s.afterCompletion,
      };
    },
    DeleteSchedule(name, _body, query) {
      remove(scheduleOf(groupOf(query.get('groupName') ?? undefined).name, name as string));
      return {};
    },
    ListSchedules(_name, _body, query) {
      const group = query.get('ScheduleGroup');
      if (group !== null) groupOf(group);
      const prefix = query.get('NamePrefix') ?? '';
      const state = query.get('State');
      const p = page(
        [...schedules.values()].filter(
          (s) =>
            (group === null || s.group === group) && s.name.startsWith(prefix) && (state === null || s.state === state),
        ),
        (s) => key(s.group, s.name),
        query,
      );
      return {
        Schedules: p.items.map((s) => ({
          Arn: s.arn,
          Name: s.name,
          GroupName: s.group,
          State: s.state,
          CreationDate: seconds(s.created),
          LastModificationDate: seconds(s.created),
          Target: { Arn: s.target.Arn },
        })),
        ...(p.next ? { NextToken: p.next } : {}),
      };
    },
  };

  const server = await startServiceServer({
    service: 'EventBridge Scheduler',
    maxBodyBytes: MAX_BODY,
    contentType: 'application/json',
    tooLargeType: 'ValidationException',
    internalType: 'InternalServerException',
    port: opts.port,
    operation: (req) => route(req.method, req.url)?.op ?? '',
    errorBody: (e) => ({ Message: e.message }),
    answer(op, req) {
      const r = route(req.method, req.path);
      if (!r)
        throw new ServiceError(
          'UnknownOperationException',
          `${req.method} ${req.path} is not a Scheduler operation`,
          404,
        );
      const handler = Object.hasOwn(operations, op) ? operations[op] : undefined;
      if (!handler)
        throw new ServiceError(
          'NotImplemented',
          `${op} is not implemented by the eve-world-aws Scheduler emulator`,
          501,
        );
      return handler(r.name, parseBody(req.text), req.query);
    },
  });

  return {
    endpoint: server.endpoint,
    port: server.port,
    calls: server.calls,
    invocations: firing.invocations,
    async close() {
      firing.close();
      await server.close();
    },
  };
}
