/**
 * Run lifecycle and attribute events: run_created, run_started (incl. the resilient start),
 * run_completed / run_failed / run_cancelled, attr_set.
 *
 * Each reads the run view and the log tail in one Query (`readRunTail`), decides from that
 * state, and commits one transaction whose `RUN#meta` condition restates the decision; if the
 * state moved in between, the ALL_OLD item names the new state and the handler starts over.
 */
import { BatchWriteItemCommand, DeleteItemCommand, TransactWriteItemsCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { EntityConflictError, RunExpiredError, WorkflowRunNotFoundError, WorkflowWorldError } from '@workflow/errors';
import type { AttributeChange, EventResult, WorkflowRun } from '@workflow/world';
import {
  AttributeValidationError,
  applyAttributeChanges,
  SPEC_VERSION_CURRENT,
  validateAttributeChanges,
  validateAttributeEventDataSize,
  validateUlidTimestamp,
} from '@workflow/world';
import { ulid } from 'ulid';
import { ATTR, GSI1, keys, storageKeys } from '../ddb.js';
import { type Attrs, num, str, toAttr, valueSize } from './codec.js';
import {
  assertSpec,
  type Env,
  NOT_TERMINAL,
  type Outcome,
  putEvent,
  putNew,
  Restart,
  Resolved,
  runGuardError,
  startPosition,
  TERMINAL_VALUES,
  newEvent,
} from './common.js';
import { backoff, cancellationOf, failedCondition, oldItem, transientCancellation } from './errors.js';
import {
  type EventRecord,
  eventItem,
  isTerminal,
  itemSize,
  keysOf,
  parseRun,
  placePayloads,
  type RunRecord,
  runItem,
  runPrefix,
  type StorageCtx,
  toEvent,
  toRun,
} from './items.js';
import { commit, encodeEventCursor, type Position, queryAll, readRunTail } from './slots.js';

type Data = Record<string, any>;

const maxRestarts = 20;

async function restartable<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof Restart) || i >= maxRestarts) throw e;
      await backoff(i);
    }
  }
}

function validateSeedAttributes(ed: Data): void {
  if (ed.attributes === undefined || ed.attributes === null) return;
  if (typeof ed.attributes !== 'object') throw new AttributeValidationError('attributes must be a record of strings');
  const changes: AttributeChange[] = Object.entries(ed.attributes).map(([key, value]) => ({ key, value: value as string }));
  validateAttributeChanges(changes, { allowReservedAttributes: ed.allowReservedAttributes === true });
}


const at = (e: EventRecord, slot: number): EventRecord => ({ ...e, slot });

/** A new run record (pending) from run_created / resilient run_started data. */
function newRun(env: Env, runId: string, ed: Data, specVersion: number, input: unknown): RunRecord {
  return {
    runId,
    status: 'pending',
    deploymentId: ed.deploymentId,
    workflowName: ed.workflowName,
    specVersion,
    executionContext: ed.executionContext,
    input,
    attributes: { ...(ed.attributes ?? {}) },
    encryptionPublicKey: ed.encryptionPublicKey,
    createdAt: env.now,
    updatedAt: env.now,
    attrVer: 0,
  };
}

// ---------------------------------------------------------------- run_created

export async function runCreated(env: Env, runIdArg: string | null, data: Data): Promise<Outcome & { runId: string }> {
  const { ctx } = env;
  let runId: string;
  if (runIdArg === null || runIdArg === undefined || runIdArg === '') runId = `wrun_${ulid()}`;
  else {
    const problem = validateUlidTimestamp(runIdArg, 'wrun_');
    if (problem) throw new WorkflowWorldError(problem, { status: 400, code: 'INVALID_ARGUMENT', field: 'runId' });
    runId = runIdArg;
  }
  const ed: Data = data.eventData ?? {};
  if (typeof ed.deploymentId !== 'string' || typeof ed.workflowName !== 'string') {
    throw new WorkflowWorldError('run_created requires eventData.deploymentId and eventData.workflowName', { status: 400 });
  }
  validateSeedAttributes(ed);
  const sv = data.specVersion ?? SPEC_VERSION_CURRENT;
  const placed = await placePayloads(ctx, { input: ed.input }, runPrefix(runId), 1024 + valueSize({ ...ed, input: undefined }));
  const run = newRun(env, runId, ed, sv, placed.input);
  const ev = at(newEvent(env, runId, data, 'run_created', ed), 1);
  // A new run's first event is slot 1; the run put is the exclusive create.
  for (let attempt = 0; ; attempt++) {
    try {
      await ctx.ddb.send(
        new TransactWriteItemsCommand({
          ClientRequestToken: randomUUID(),
          TransactItems: [putNew(ctx, runItem(run)), putEvent(ctx, eventItem({ ...ev, eventData: { ...ed, input: placed.input } }))],
        }),
      );
      break;
    } catch (err) {
      const c = cancellationOf(err);
      if (c && (failedCondition(c, 0) || failedCondition(c, 1))) throw new EntityConflictError(`Workflow run "${runId}" already exists`);
      if (!c || !transientCancellation(c) || attempt >= 10) throw err;
      await backoff(attempt);
    }
  }
  env.hints.note(runId, 1);
  return { runId, own: [ev], pos: {}, run: await toRun(ctx, { ...run, input: ed.input }, env.rd) };
}

// ---------------------------------------------------------------- run_started

export function runStarted(env: Env, runId: string, data: Data): Promise<Outcome> {
  return restartable(() => runStartedOnce(env, runId, data));
}

async function runStartedOnce(env: Env, runId: string, data: Data): Promise<Outcome> {
  const { ctx, params } = env;
  const preload = params?.skipPreload !== true;
  const ec = startPosition(params).last;
  const read = await readRunTail(ctx, runId, preload ? 0 : ec);
  const pos: Position = { last: read.tail, collect: preload || ec === undefined ? [] : [...read.events] };
  const ev = newEvent(env, runId, data, 'run_started', undefined); // eventData belongs on run_created only

  if (!read.run) {
    const ed: Data | undefined = data.eventData;
    if (!ed || typeof ed.deploymentId !== 'string' || typeof ed.workflowName !== 'string' || ed.input === undefined) {
      throw new WorkflowRunNotFoundError(runId);
    }
    return resilientStart(env, runId, data, ed, pos, preload ? read.events : undefined, ev);
  }
  const rec = parseRun(read.run);
  assertSpec(rec);
  if (isTerminal(rec.status)) {
    throw new RunExpiredError(`Workflow run "${runId}" is already in terminal state "${rec.status}"`, runId, rec.status);
  }
  if (rec.status === 'running') {
    // Idempotent: no new event.
    throw new Resolved({ run: await toRun(ctx, rec, env.rd), ...(preload ? await logPage(env, read.events) : {}) } as EventResult);
  }
  const next: RunRecord = { ...rec, status: 'running', startedAt: rec.startedAt ?? env.now, updatedAt: env.now };
  const done = await commit(ctx, env.hints, pos, {
    runId,
    what: 'run_started',
    build: (slot) => ({
      items: [
        {
          Update: {
            TableName: ctx.table,
            Key: keysOf(keys.runMeta(runId)),
            UpdateExpression: 'SET #st = :run, startedAt = if_not_exists(startedAt, :now), updatedAt = :now',
            ConditionExpression: '#st = :pending',
            ExpressionAttributeNames: { '#st': 'status' },
            ExpressionAttributeValues: { ':run': { S: 'running' }, ':pending': { S: 'pending' }, ':now': { N: String(env.now.getTime()) } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem(at(ev, slot))),
      ],
      eventIdx: [1],
    }),
    onGuard: (c) => {
      if (!oldItem(c, 0)) throw new WorkflowRunNotFoundError(runId);
      throw new Restart(); // started or finished concurrently: re-read and answer from that state
    },
  });
  return { own: [at(ev, done.slot)], pos, run: await toRun(ctx, next, env.rd), preload: preload ? read.events : undefined, fullLog: preload };
}

/** Run missing but the start carries its creation data: create it, with a synthetic run_created. */
async function resilientStart(
  env: Env,
  runId: string,
  data: Data,
  ed: Data,
  pos: Position,
  before: EventRecord[] | undefined,
  started: EventRecord,
): Promise<Outcome> {
  const { ctx } = env;
  validateSeedAttributes(ed);
  const sv = data.specVersion ?? SPEC_VERSION_CURRENT;
  const placed = await placePayloads(ctx, { input: ed.input }, runPrefix(runId), 1024 + valueSize({ ...ed, input: undefined }));
  const run: RunRecord = { ...newRun(env, runId, ed, sv, placed.input), status: 'running', startedAt: env.now };
  const created: EventRecord = { ...newEvent(env, runId, { specVersion: data.specVersion }, 'run_created', ed) };
  const done = await commit(ctx, env.hints, pos, {
    runId,
    what: 'run_started',
    build: (slot) => ({
      items: [
        putNew(ctx, runItem(run)),
        putEvent(ctx, eventItem({ ...at(created, slot), eventData: { ...ed, input: placed.input } })),
        putEvent(ctx, eventItem(at(started, slot + 1))),
      ],
      eventIdx: [1, 2],
    }),
    onGuard: () => {
      throw new Restart(); // a concurrent run_created won: continue as an ordinary start
    },
  });
  return {
    own: [at(created, done.slot), at(started, done.slot + 1)],
    pos,
    run: await toRun(ctx, { ...run, input: ed.input }, env.rd),
    preload: before,
    fullLog: before !== undefined,
  };
}

async function logPage(env: Env, events: EventRecord[]) {
  return {
    events: await Promise.all(events.map((e) => toEvent(env.ctx, e, env.rd))),
    cursor: events.length > 0 ? encodeEventCursor(events[events.length - 1].slot) : null,
    hasMore: false,
  };
}

// ---------------------------------------------------------------- terminal

export function runTerminal(env: Env, runId: string, data: Data): Promise<Outcome> {
  return restartable(() => runTerminalOnce(env, runId, data));
}

async function runTerminalOnce(env: Env, runId: string, data: Data): Promise<Outcome> {
  const { ctx, params } = env;
  const type = data.eventType as 'run_completed' | 'run_failed' | 'run_cancelled';
  const ec = startPosition(params).last;
  const read = await readRunTail(ctx, runId, ec);
  if (!read.run) throw new WorkflowRunNotFoundError(runId);
  const rec = parseRun(read.run);
  assertSpec(rec);
  const pos: Position = { last: read.tail, collect: ec === undefined ? undefined : [...read.events] };
  const ed: Data = data.eventData ?? {};

  if (isTerminal(rec.status)) {
    if (type !== 'run_cancelled' || rec.status !== 'cancelled') {
      throw new EntityConflictError(`Cannot transition run from terminal state "${rec.status}"`);
    }
    // Idempotent cancel: the event is appended, the run is returned unchanged.
    const ev = newEvent(env, runId, data, type, data.eventData);
    const done = await commit(ctx, env.hints, pos, {
      runId,
      what: type,
      build: (slot) => ({
        items: [
          {
            ConditionCheck: {
              TableName: ctx.table,
              Key: keysOf(keys.runMeta(runId)),
              ConditionExpression: '#st = :st_x',
              ExpressionAttributeNames: { '#st': 'status' },
              ExpressionAttributeValues: { ':st_x': { S: 'cancelled' } },
            },
          },
          putEvent(ctx, eventItem(at(ev, slot))),
        ],
        eventIdx: [1],
      }),
      onGuard: () => {
        throw new Restart();
      },
    });
    return { own: [at(ev, done.slot)], pos, run: await toRun(ctx, rec, env.rd) };
  }

  const field = type === 'run_completed' ? 'output' : type === 'run_failed' ? 'error' : undefined;
  const value = type === 'run_completed' ? ed.output : type === 'run_failed' ? ed.error : undefined;
  let stored: unknown;
  if (field) {
    const rest = { ...read.run };
    delete rest.output;
    delete rest.error;
    stored = (await placePayloads(ctx, { [field]: value }, runPrefix(runId), itemSize(rest) + 512))[field];
  }
  const status = type === 'run_completed' ? 'completed' : type === 'run_failed' ? 'failed' : 'cancelled';
  const next: RunRecord = {
    ...rec,
    status,
    output: field === 'output' ? stored : undefined,
    error: field === 'error' ? stored : undefined,
    errorCode: type === 'run_failed' ? ed.errorCode : undefined,
    completedAt: env.now,
    updatedAt: env.now,
  };
  const names: Record<string, string> = { '#st': 'status' };
  const values: Attrs = { ...TERMINAL_VALUES, ':new': { S: status }, ':now': { N: String(env.now.getTime()) } };
  let set = 'SET #st = :new, completedAt = :now, updatedAt = :now';
  if (field && stored !== undefined) {
    set += `, #f = :v`;
    names['#f'] = field;
    values[':v'] = toAttr(stored)!;
  }
  if (type === 'run_failed' && typeof ed.errorCode === 'string') {
    set += ', errorCode = :ec';
    values[':ec'] = { S: ed.errorCode };
  }
  const ev = newEvent(env, runId, data, type, data.eventData);
  const storedEv = field ? { ...ev, eventData: { ...ed, [field]: stored } } : ev;
  const done = await commit(ctx, env.hints, pos, {
    runId,
    what: type,
    build: (slot) => ({
      items: [
        {
          Update: {
            TableName: ctx.table,
            Key: keysOf(keys.runMeta(runId)),
            UpdateExpression: set,
            ConditionExpression: `attribute_exists(PK) AND ${NOT_TERMINAL}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem(at(storedEv, slot))),
      ],
      eventIdx: [1],
    }),
    onGuard: (c) => {
      if (!oldItem(c, 0)) throw new WorkflowRunNotFoundError(runId);
      throw new Restart(); // finished concurrently: re-read, then conflict or idempotent cancel
    },
  });
  await releaseRun(ctx, runId);
  const run = await toRun(ctx, { ...next, output: field === 'output' ? value : undefined, error: field === 'error' ? value : undefined }, env.rd);
  return { own: [at(ev, done.slot)], pos, run };
}

/**
 * A terminal run gives up its hooks (releasing their tokens) and its pending waits. Runs after
 * the terminal transaction committed, so no new hook or wait can appear (their creates carry a
 * run guard); idempotent, and a token missed here (GSI lag) is taken over by the next claimant,
 * which checks that the holder's run is terminal.
 */
export async function releaseRun(ctx: StorageCtx, runId: string): Promise<void> {
  const [hooks, waits] = await Promise.all([
    queryAll(ctx, {
      IndexName: GSI1,
      KeyConditionExpression: `${ATTR.gsi1pk} = :h`,
      ExpressionAttributeValues: { ':h': { S: keys.runHooksGsi(runId) } },
      ProjectionExpression: 'PK, runId, hookId, tokenRetentionUntil',
    }),
    queryAll(ctx, {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :w)',
      FilterExpression: '#st = :waiting',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':pk': { S: keys.runPk(runId) }, ':w': { S: keys.waitSkPrefix }, ':waiting': { S: 'waiting' } },
      ProjectionExpression: 'PK, SK',
      ConsistentRead: true,
    }),
  ]);
  const now = Date.now();
  await Promise.all(
    hooks
      .filter((h) => (num(h, 'tokenRetentionUntil') ?? 0) <= now)
      .map((h) =>
        ctx.ddb
          .send(
            new DeleteItemCommand({
              TableName: ctx.table,
              Key: { PK: h.PK, SK: { S: storageKeys.hookMetaSk } },
              ConditionExpression: 'runId = :r AND hookId = :h',
              ExpressionAttributeValues: { ':r': { S: runId }, ':h': { S: str(h, 'hookId')! } },
            }),
          )
          .catch((e) => {
            if ((e as { name?: string }).name !== 'ConditionalCheckFailedException') throw e;
          }),
      ),
  );
  for (let i = 0; i < waits.length; i += 25) {
    let req = waits.slice(i, i + 25).map((w) => ({ DeleteRequest: { Key: { PK: w.PK, SK: w.SK } } }));
    for (let attempt = 0; req.length > 0; attempt++) {
      const res = await ctx.ddb.send(new BatchWriteItemCommand({ RequestItems: { [ctx.table]: req } }));
      req = (res.UnprocessedItems?.[ctx.table] ?? []) as typeof req;
      if (req.length > 0) await backoff(attempt);
    }
  }
}

// ---------------------------------------------------------------- attr_set

export function attrSet(env: Env, runId: string, data: Data): Promise<Outcome> {
  const ed: Data = data.eventData ?? {};
  const changes: AttributeChange[] = Array.isArray(ed.changes) ? ed.changes : [];
  const allowReservedAttributes = ed.allowReservedAttributes === true;
  validateAttributeEventDataSize(ed as never);
  validateAttributeChanges(changes, { allowReservedAttributes });
  return restartable(() => attrSetOnce(env, runId, data, ed, changes, allowReservedAttributes));
}

async function attrSetOnce(env: Env, runId: string, data: Data, ed: Data, changes: AttributeChange[], allowReservedAttributes: boolean) {
  const { ctx, params } = env;
  const ec = startPosition(params).last;
  const read = await readRunTail(ctx, runId, ec);
  if (!read.run) throw new WorkflowRunNotFoundError(runId);
  const rec = parseRun(read.run);
  assertSpec(rec);
  if (isTerminal(rec.status)) throw new EntityConflictError(`Cannot set attributes on run in terminal state "${rec.status}"`);
  // Post-merge key count, exact against the attributes this transaction is conditioned on.
  validateAttributeChanges(changes, { existingKeys: Object.keys(rec.attributes), allowReservedAttributes });
  const merged = applyAttributeChanges(rec.attributes, changes);
  const claim = data.correlationId && ed.writer?.type === 'workflow' ? (data.correlationId as string) : undefined;
  const pos: Position = { last: read.tail, collect: ec === undefined ? undefined : [...read.events] };
  const ev = newEvent(env, runId, data, 'attr_set', ed);
  const done = await commit(ctx, env.hints, pos, {
    runId,
    what: 'attr_set',
    build: (slot) => {
      const items: TransactWriteItem[] = [
        {
          Update: {
            TableName: ctx.table,
            Key: keysOf(keys.runMeta(runId)),
            UpdateExpression: 'SET attributes = :a, attrVer = :nv, updatedAt = :now',
            ConditionExpression: `attribute_exists(PK) AND ${NOT_TERMINAL} AND attrVer = :v`,
            ExpressionAttributeNames: { '#st': 'status' },
            ExpressionAttributeValues: {
              ...TERMINAL_VALUES,
              ':a': toAttr(merged)!,
              ':v': { N: String(rec.attrVer) },
              ':nv': { N: String(rec.attrVer + 1) },
              ':now': { N: String(env.now.getTime()) },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem(at(ev, slot))),
      ];
      if (claim) items.push(putNew(ctx, { ...keysOf(keys.attrClaim(runId, claim)), slot: { N: String(slot) } }));
      return { items, eventIdx: [1] };
    },
    onGuard: (c) => {
      if (claim && failedCondition(c, 2)) throw new EntityConflictError(`Attribute event "${claim}" already exists`);
      const old = oldItem(c, 0);
      if (!old) throw new WorkflowRunNotFoundError(runId);
      if (isTerminal(str(old, 'status'))) throw runGuardError(runId, old, (s) => new EntityConflictError(`Cannot set attributes on run in terminal state "${s}"`));
      throw new Restart(); // another attr_set moved the version: re-validate against it
    },
  });
  const run: WorkflowRun = await toRun(ctx, { ...rec, attributes: merged, attrVer: rec.attrVer + 1, updatedAt: env.now }, env.rd);
  return { own: [at(ev, done.slot)], pos, run };
}
