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
 * and it fires: an ENABLED one-time `at(yyyy-mm-ddThh:mm:ss)` schedule (UTC) whose target is an
 * SQS queue ARN sends its `Target.Input` as the message body to that queue, on the SQS endpoint it
 * was given (the queue URL resolved by name; `SqsParameters` such as `MessageGroupId` are
 * ignored), at or after its time. A failed send is retried with backoff within the target's
 * `RetryPolicy` (default 185 attempts, 1 day), then the input goes to `DeadLetterConfig.Arn` (an
 * SQS queue) with the error in message attributes. After the last invocation a schedule with
 * `ActionAfterCompletion: DELETE` deletes itself.
 *
 * Invariants:
 * - Errors are the Scheduler's own shapes (`x-amzn-errortype` + `{Message}`), so src/aws/sdk-errors.ts
 *   recognises them: `ConflictException` (409) for a name that exists, `ResourceNotFoundException`
 *   (404) for a missing group or schedule (a schedule in a group that does not exist, as on AWS),
 *   `ValidationException` (400) for a malformed request.
 * - The account's `default` group always exists and cannot be deleted.
 * - Never early: a schedule fires no sooner than its `at()` time by this process's clock.
 * - Listens on 127.0.0.1 only, requires a SigV4 `Authorization` header (not verified) and refuses
 *   bodies over 256 KiB. State is in memory only; `close()` stops every pending timer.
 *
 * Not implemented: `rate()` and `cron()` schedules are stored and listed but never fire; time
 * zones other than UTC for `at()`; targets other than SQS (their invocation fails); IAM (the role
 * is checked for its ARN form only, never assumed); KMS; UpdateSchedule and the tag operations
 * (501; a group's `Tags` are accepted and kept). A group is deleted at once with its schedules
 * (AWS shows it `DELETING` for a while).
 */
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { parseArn, partitionOf } from '../src/aws/arn.js';
import { describeError, errorName } from '../src/aws/sdk-errors.js';
import { ServiceError, type ServiceServer, startServiceServer } from './service-server.js';

export interface SchedulerServerOptions {
  /** Port on 127.0.0.1 (0 = any free port). */
  port?: number;
  region?: string;
  accountId?: string;
  /** The SQS endpoint SQS targets (and dead-letter queues) are sent to, e.g. the stack's fauxqs. */
  sqsEndpoint: string;
}

/** One invocation of a schedule's target (or of its dead-letter queue). */
export interface Invocation {
  readonly scheduleArn: string;
  /** The target's ARN, or the dead-letter queue's when `deadLetter`. */
  readonly arn: string;
  /** 0 for the first attempt. */
  readonly attempt: number;
  readonly at: number;
  readonly ok: boolean;
  readonly deadLetter?: boolean;
  readonly error?: string;
}

export interface SchedulerServer extends ServiceServer {
  /** Every invocation so far, in order. */
  readonly invocations: readonly Invocation[];
}

type Body = Record<string, unknown>;

interface Group {
  name: string;
  arn: string;
  created: number;
  tags: unknown;
}

interface Schedule {
  name: string;
  group: string;
  arn: string;
  expression: string;
  /** Epoch ms of an `at()` expression; undefined for rate/cron (never fired). */
  due?: number;
  timezone?: string;
  description?: string;
  state: 'ENABLED' | 'DISABLED';
  startDate?: number;
  endDate?: number;
  kmsKeyArn?: string;
  target: Body;
  window: Body;
  afterCompletion: 'NONE' | 'DELETE';
  created: number;
  timer?: NodeJS.Timeout;
}

const MAX_BODY = 256 * 1024;
const NAME_RE = /^[0-9a-zA-Z_.-]{1,64}$/;
const ROLE_ARN_RE = /^arn:aws(-[a-z]+)?:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const AT_RE = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/;
const RATE_RE = /^rate\(\d+ (minute|minutes|hour|hours|day|days)\)$/;
const CRON_RE = /^cron\(\S+( \S+){5}\)$/;
const UTC = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);
const SHARED_GROUP = 'default';
/** setTimeout's maximum; longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const DEFAULT_RETRY = { MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 };

/** The operations, by method and path. Known operations without a handler answer 501. */
const ROUTES: readonly [string, RegExp, string][] = [
  ['GET', /^\/schedule-groups$/, 'ListScheduleGroups'],
  ['POST', /^\/schedule-groups\/([^/]+)$/, 'CreateScheduleGroup'],
  ['GET', /^\/schedule-groups\/([^/]+)$/, 'GetScheduleGroup'],
  ['DELETE', /^\/schedule-groups\/([^/]+)$/, 'DeleteScheduleGroup'],
  ['GET', /^\/schedules$/, 'ListSchedules'],
  ['POST', /^\/schedules\/([^/]+)$/, 'CreateSchedule'],
  ['GET', /^\/schedules\/([^/]+)$/, 'GetSchedule'],
  ['DELETE', /^\/schedules\/([^/]+)$/, 'DeleteSchedule'],
  ['PUT', /^\/schedules\/([^/]+)$/, 'UpdateSchedule'],
  ['GET', /^\/tags\/(.+)$/, 'ListTagsForResource'],
  ['POST', /^\/tags\/(.+)$/, 'TagResource'],
  ['DELETE', /^\/tags\/(.+)$/, 'UntagResource'],
];

function route(method: string | undefined, rawUrl: string | undefined): { op: string; name?: string } | undefined {
  const path = new URL(rawUrl ?? '/', 'http://127.0.0.1').pathname;
  for (const [m, re, op] of ROUTES) {
    const hit = m === method ? re.exec(path) : null;
    if (hit) return { op, name: hit[1] === undefined ? undefined : decodeURIComponent(hit[1]) };
  }
  return undefined;
}

const invalid = (message: string) => new ServiceError('ValidationException', message, 400);
const notFound = (message: string) => new ServiceError('ResourceNotFoundException', message, 404);

function str(body: Body, field: string, o: { required?: boolean; max?: number; re?: RegExp } = {}): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (o.required) throw invalid(`${field} is required`);
    return undefined;
  }
  if (typeof v !== 'string' || v.length === 0) throw invalid(`${field} must be a non-empty string`);
  if (o.max !== undefined && v.length > o.max) throw invalid(`${field} must be at most ${o.max} characters`);
  if (o.re && !o.re.test(v)) throw invalid(`${field} "${v}" does not match ${o.re.source}`);
  return v;
}

function obj(body: Body, field: string, required = false): Body | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (required) throw invalid(`${field} is required`);
    return undefined;
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(`${field} must be an object`);
  return v as Body;
}

function int(body: Body, field: string, min: number, max: number): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw invalid(`${field} must be a whole number from ${min} to ${max}`);
  return v;
}

function oneOf<T extends string>(body: Body, field: string, values: readonly T[], fallback?: T): T {
  const v = str(body, field, { required: fallback === undefined }) ?? fallback;
  if (!values.includes(v as T)) throw invalid(`${field} must be one of ${values.join(', ')}`);
  return v as T;
}

function parseBody(text: string): Body {
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw invalid('Request body is not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid('Request body must be a JSON object');
  return v as Body;
}

/** A page of `items` (sorted by `key`) after `NextToken`, at most `MaxResults`. */
function page<T>(items: T[], key: (t: T) => string, query: URLSearchParams): { items: T[]; next?: string } {
  const raw = query.get('MaxResults');
  const max = raw === null ? 100 : Number(raw);
  if (!Number.isInteger(max) || max < 1 || max > 100) throw invalid('MaxResults must be from 1 to 100');
  const token = query.get('NextToken');
  const after = token === null ? undefined : Buffer.from(token, 'base64url').toString('utf8');
  const sorted = items.sort((a, b) => (key(a) < key(b) ? -1 : 1)).filter((t) => after === undefined || key(t) > after);
  const chunk = sorted.slice(0, max);
  return {
    items: chunk,
    next: sorted.length > max ? Buffer.from(key(chunk[chunk.length - 1]), 'utf8').toString('base64url') : undefined,
  };
}

const seconds = (ms: number) => ms / 1000;

export async function startSchedulerServer(opts: SchedulerServerOptions): Promise<SchedulerServer> {
  const region = opts.region ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  const arnBase = `arn:${partitionOf(region)}:scheduler:${region}:${account}`;
  const groups = new Map<string, Group>();
  const schedules = new Map<string, Schedule>();
  const invocations: Invocation[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  let sqs: SQSClient | undefined;

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

  // ---- firing ----

  /** Run `fn` after `ms`, re-arming past setTimeout's limit; cleared by `close()`. */
  const after = (ms: number, fn: () => void): NodeJS.Timeout => {
    const t = setTimeout(
      () => {
        timers.delete(t);
        if (ms > MAX_TIMER_MS) after(ms - MAX_TIMER_MS, fn);
        else fn();
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
    t.unref();
    timers.add(t);
    return t;
  };

  const remove = (s: Schedule) => {
    if (s.timer) {
      clearTimeout(s.timer);
      timers.delete(s.timer);
    }
    if (schedules.get(key(s.group, s.name)) === s) schedules.delete(key(s.group, s.name));
  };

  const sendTo = async (queueArn: string, body: string, attributes?: Record<string, string>) => {
    const parts = parseArn(queueArn);
    if (parts?.service !== 'sqs')
      throw new Error(
        `${queueArn} is not an SQS queue ARN (the eve-world-aws Scheduler emulator delivers to SQS only)`,
      );
    sqs ??= new SQSClient({
      endpoint: opts.sqsEndpoint,
      region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 3,
    });
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: parts.resource }));
    await sqs.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: body,
        MessageAttributes: attributes
          ? Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]))
          : undefined,
      }),
    );
  };

  const invoke = async (s: Schedule, firstAt: number, attempt: number): Promise<void> => {
    if (closed || schedules.get(key(s.group, s.name)) !== s) return; // deleted meanwhile
    const targetArn = String(s.target.Arn);
    const input = typeof s.target.Input === 'string' ? s.target.Input : '';
    try {
      await sendTo(targetArn, input);
      invocations.push({ scheduleArn: s.arn, arn: targetArn, attempt, at: Date.now(), ok: true });
    } catch (err) {
      if (closed) return;
      invocations.push({
        scheduleArn: s.arn,
        arn: targetArn,
        attempt,
        at: Date.now(),
        ok: false,
        error: describeError(err),
      });
      const retry = { ...DEFAULT_RETRY, ...((s.target.RetryPolicy as Body | undefined) ?? {}) };
      const delayMs = Math.min(60_000, 1000 * 2 ** attempt);
      const ageAfterDelay = (Date.now() + delayMs - firstAt) / 1000;
      if (attempt < Number(retry.MaximumRetryAttempts) && ageAfterDelay <= Number(retry.MaximumEventAgeInSeconds)) {
        s.timer = after(delayMs, () => void invoke(s, firstAt, attempt + 1));
        return;
      }
      const dlq = (s.target.DeadLetterConfig as Body | undefined)?.Arn;
      if (typeof dlq === 'string') {
        try {
          await sendTo(dlq, input, {
            ERROR_CODE: errorName(err) || 'Error',
            ERROR_MESSAGE: describeError(err).slice(0, 1000),
            EXHAUSTED_RETRY_CONDITION:
              attempt >= Number(retry.MaximumRetryAttempts) ? 'MaximumRetryAttempts' : 'MaximumEventAgeInSeconds',
            RETRY_ATTEMPTS: String(attempt),
            SCHEDULE_ARN: s.arn,
            TARGET_ARN: targetArn,
          });
          invocations.push({ scheduleArn: s.arn, arn: dlq, attempt, at: Date.now(), ok: true, deadLetter: true });
        } catch (dlqErr) {
          invocations.push({
            scheduleArn: s.arn,
            arn: dlq,
            attempt,
            at: Date.now(),
            ok: false,
            deadLetter: true,
            error: describeError(dlqErr),
          });
        }
      }
    }
    if (s.afterCompletion === 'DELETE') remove(s);
  };

  const arm = (s: Schedule) => {
    if (s.state !== 'ENABLED' || s.due === undefined) return;
    // Never early: Date.now() >= due when the timer runs (a timer may fire a millisecond early).
    const fire = () => {
      const left = (s.due as number) - Date.now();
      if (left > 0) s.timer = after(left, fire);
      else void invoke(s, Date.now(), 0);
    };
    s.timer = after((s.due as number) - Date.now(), fire);
  };

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
      arm(s);
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
    invocations,
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      sqs?.destroy();
      await server.close();
    },
  };
}
