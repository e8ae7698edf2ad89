/**
 * Run lifecycle and attribute events: run_created, run_started (incl. the resilient start),
 * run_completed / run_failed / run_cancelled, attr_set.
 *
 * Each reads the run view and the log tail in one Query (`readRunTail`), decides from that
 * state, and commits one transaction whose `RUN#meta` condition restates the decision; if the
 * state moved in between, the ALL_OLD item names the new state and the handler starts over.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
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
import { keys } from '../../ddb.js';
import { formatStamp } from '../../formats.js';
import { readRunTail } from '../read/log-tail.js';
import { dueOnCreate } from '../records/due.js';
import {
  atSlot as at,
  cursorAt,
  type EventRecord,
  eventItem,
  newEvent,
  pairEvents,
  toEvent,
} from '../records/event.js';
import { isTerminalRun, NOT_TERMINAL, TERMINAL_VALUES } from '../records/lifecycle.js';
import { placePayloads, runPrefix } from '../records/payloads.js';
import { parseRun, type RunRecord, runItem, toRun } from '../records/run.js';
import { backoff } from '../table/backoff.js';
import { type Attrs, itemSize, keysOf, str, toAttr, valueSize } from '../table/codec.js';
import { getItem } from '../table/reads.js';
import { commit } from './commit.js';
import { failedCondition, oldItem, putEvent, putNew } from './conditions.js';
import { type CreateCall, type Outcome, Resolved, Restart } from './create-call.js';
import { type Position, startPosition } from './position.js';
import { applyRetention, purgesOnFinish } from './retention.js';
import { assertSpec, HOLDS, mayHold, runGuardError } from './run-guard.js';
import { releaseRun } from './run-release.js';

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
  const changes: AttributeChange[] = Object.entries(ed.attributes).map(([key, value]) => ({
    key,
    value: value as string,
  }));
  validateAttributeChanges(changes, { allowReservedAttributes: ed.allowReservedAttributes === true });
}

/** A new run record (pending) from run_created / resilient run_started data. */
function newRun(call: CreateCall, runId: string, ed: Data, specVersion: number, input: unknown): RunRecord {
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
    createdAt: call.now,
    updatedAt: call.now,
    attrVer: 0,
  };
}

// ---------------------------------------------------------------- run_created

export async function runCreated(
  call: CreateCall,
  runIdArg: string | null,
  data: Data,
): Promise<Outcome & { runId: string }> {
  const { ctx } = call;
  let runId: string;
  if (runIdArg === null || runIdArg === undefined || runIdArg === '') runId = `wrun_${ulid()}`;
  else {
    const problem = validateUlidTimestamp(runIdArg, 'wrun_');
    if (problem) throw new WorkflowWorldError(problem, { status: 400, code: 'INVALID_ARGUMENT', field: 'runId' });
    runId = runIdArg;
  }
  const ed: Data = data.eventData ?? {};
  if (typeof ed.deploymentId !== 'string' || typeof ed.workflowName !== 'string') {
    throw new WorkflowWorldError('run_created requires eventData.deploymentId and eventData.workflowName', {
      status: 400,
    });
  }
  validateSeedAttributes(ed);
  const sv = data.specVersion ?? SPEC_VERSION_CURRENT;
  // Nothing is uploaded for a run that exists already (a redelivered create).
  const unclaimed = async () => {
    if (await getItem(ctx, keys.runMeta(runId)))
      throw new EntityConflictError(`Workflow run "${runId}" already exists`);
  };
  const placed = await placePayloads(
    ctx,
    { input: ed.input },
    `${runPrefix(runId)}/run`,
    1024 + valueSize({ ...ed, input: undefined }),
    unclaimed,
  );
  const run = newRun(call, runId, ed, sv, placed.input);
  const ev = at(newEvent(call.stamp, runId, data, 'run_created', ed), 1);
  // A new run's first event is slot 1 and the run put is the exclusive create: either claim
  // failing means the run exists.
  const exists = (): never => {
    throw new EntityConflictError(`Workflow run "${runId}" already exists`);
  };
  await commit(
    ctx,
    call.hints,
    { last: 0 },
    {
      runId,
      what: 'run_created',
      build: (slot) => ({
        items: [
          putNew(ctx, runItem(run)),
          putEvent(ctx, eventItem({ ...at(ev, slot), eventData: { ...ed, input: placed.input } })),
          dueOnCreate(ctx, runId, Date.now() + ctx.config.backstopSeconds * 1000, slot),
        ],
        eventIdx: 1,
      }),
      onGuard: exists,
      onSlotTaken: exists,
    },
  );
  call.runs.remember(runId, runItem(run));
  return { runId, own: [ev], pos: {}, run: await toRun(ctx, { ...run, input: ed.input }, call.rd) };
}

// ---------------------------------------------------------------- run_started

export function runStarted(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  return restartable(() => runStartedOnce(call, runId, data));
}

async function runStartedOnce(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const { ctx, params } = call;
  const preload = params?.skipPreload !== true;
  const start = startPosition(params);
  const ec = start.last;
  // Warm, without a preload: the run as this process created it, the tail from memory (no read).
  // The start is conditioned on what it relies on (pending, the attributes' version).
  const hint = call.hints.get(runId);
  const remembered = !preload && (ec !== undefined || hint !== undefined) ? call.runs.known(runId) : undefined;
  // The log is append-only: a prefix this process remembers (it wrote or read those slots) is
  // exactly what a read would return, so the preload reads only the run and the events after it.
  const prefix = preload && !remembered && hint !== undefined ? call.hints.recent(runId, 0, hint) : undefined;
  const read = remembered
    ? { run: remembered, events: [] as EventRecord[], tail: ec ?? hint! }
    : await readRunTail(ctx, runId, preload ? (prefix ? hint : 0) : ec);
  if (prefix) read.events = [...prefix, ...read.events];
  // Remembered: the caller's own position as given (a half-form cursor keeps its mark for
  // `advance`); read: the tail the read ended at, never inside a pair (../read/log-tail.ts).
  const pos: Position = remembered
    ? ec !== undefined
      ? start
      : { last: hint, collect: [] }
    : { last: read.tail, collect: preload || ec === undefined ? [] : [...read.events] };
  const ev = newEvent(call.stamp, runId, data, 'run_started', undefined); // eventData belongs on run_created only

  if (!read.run) {
    const ed: Data | undefined = data.eventData;
    if (!ed || typeof ed.deploymentId !== 'string' || typeof ed.workflowName !== 'string' || ed.input === undefined) {
      throw new WorkflowRunNotFoundError(runId);
    }
    return resilientStart(call, runId, data, ed, pos, preload ? read.events : undefined, ev);
  }
  const rec = parseRun(read.run);
  assertSpec(rec);
  if (isTerminalRun(rec.status)) {
    throw new RunExpiredError(
      `Workflow run "${runId}" is already in terminal state "${rec.status}"`,
      runId,
      rec.status,
    );
  }
  if (rec.status === 'running') {
    // Idempotent: no new event.
    throw new Resolved({
      run: await toRun(ctx, rec, call.rd),
      ...(preload ? await logPage(call, read.events) : {}),
    } as EventResult);
  }
  const next: RunRecord = { ...rec, status: 'running', startedAt: rec.startedAt ?? call.now, updatedAt: call.now };
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'run_started',
    build: (slot) => ({
      items: [
        {
          Update: {
            TableName: ctx.table,
            Key: keysOf(keys.runMeta(runId)),
            UpdateExpression: 'SET #st = :run, startedAt = if_not_exists(startedAt, :now), updatedAt = :now',
            ConditionExpression: remembered ? '#st = :pending AND attrVer = :av' : '#st = :pending',
            ExpressionAttributeNames: { '#st': 'status' },
            ExpressionAttributeValues: {
              ':run': { S: 'running' },
              ':pending': { S: 'pending' },
              ':now': { N: String(call.now.getTime()) },
              ...(remembered ? { ':av': { N: String(rec.attrVer) } } : {}),
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem(at(ev, slot))),
      ],
      eventIdx: 1,
    }),
    onGuard: (c) => {
      call.runs.forget(runId);
      if (!oldItem(c, 0)) throw new WorkflowRunNotFoundError(runId);
      // Started or finished concurrently, or the remembered attributes moved: re-read and answer
      // from that state.
      throw new Restart();
    },
  });
  call.runs.remember(runId, {
    ...read.run,
    status: { S: 'running' },
    startedAt: { N: String(next.startedAt!.getTime()) },
    updatedAt: { N: String(call.now.getTime()) },
  });
  return {
    own: [at(ev, done.slot)],
    pos,
    run: await toRun(ctx, next, call.rd),
    preload: preload ? read.events : undefined,
    fullLog: preload,
  };
}

/** Run missing but the start carries its creation data: create it, with a synthetic run_created. */
async function resilientStart(
  call: CreateCall,
  runId: string,
  data: Data,
  ed: Data,
  pos: Position,
  before: EventRecord[] | undefined,
  started: EventRecord,
): Promise<Outcome> {
  const { ctx } = call;
  validateSeedAttributes(ed);
  const sv = data.specVersion ?? SPEC_VERSION_CURRENT;
  const placed = await placePayloads(
    ctx,
    { input: ed.input },
    `${runPrefix(runId)}/run`,
    1024 + valueSize({ ...ed, input: undefined }),
  );
  const run: RunRecord = { ...newRun(call, runId, ed, sv, placed.input), status: 'running', startedAt: call.now };
  const created: EventRecord = { ...newEvent(call.stamp, runId, { specVersion: data.specVersion }, 'run_created', ed) };
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: 'run_started',
    build: (slot) => ({
      items: [
        putNew(ctx, runItem(run)),
        // One pair item: the synthetic run_created at `slot`, the start at `slot + 1`.
        putEvent(
          ctx,
          eventItem({ ...at(created, slot), eventData: { ...ed, input: placed.input } }, at(started, slot + 1)),
        ),
        dueOnCreate(ctx, runId, Date.now() + ctx.config.backstopSeconds * 1000, slot + 1),
      ],
      eventIdx: 1,
    }),
    onGuard: () => {
      throw new Restart(); // a concurrent run_created won: continue as an ordinary start
    },
  });
  return {
    own: pairEvents(at(created, done.slot), at(started, done.slot + 1)),
    pos,
    run: await toRun(ctx, { ...run, input: ed.input }, call.rd),
    preload: before,
    fullLog: before !== undefined,
  };
}

async function logPage(call: CreateCall, events: EventRecord[]) {
  return {
    events: await Promise.all(events.map((e) => toEvent(call.ctx, e, call.rd))),
    cursor: events.length > 0 ? cursorAt(events[events.length - 1]) : null,
    hasMore: false,
  };
}

// ---------------------------------------------------------------- terminal

export function runTerminal(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  return restartable(() => runTerminalOnce(call, runId, data));
}

async function runTerminalOnce(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const { ctx, params } = call;
  const type = data.eventType as 'run_completed' | 'run_failed' | 'run_cancelled';
  const start = startPosition(params);
  const ec = start.last;
  // Warm: the run view as this process last saw it, and the tail from memory (no read). The write
  // below is conditioned on what it decides from it (see ../memory/items.ts).
  const remembered = ec !== undefined || call.hints.get(runId) !== undefined ? call.runs.known(runId) : undefined;
  const read = remembered
    ? { run: remembered, events: [] as EventRecord[], tail: undefined }
    : await readRunTail(ctx, runId, ec);
  if (!read.run) throw new WorkflowRunNotFoundError(runId);
  const rec = parseRun(read.run);
  assertSpec(rec);
  const pos: Position = remembered
    ? start
    : { last: read.tail, collect: ec === undefined ? undefined : [...read.events] };
  const ed: Data = data.eventData ?? {};

  if (isTerminalRun(rec.status)) {
    if (type !== 'run_cancelled' || rec.status !== 'cancelled') {
      throw new EntityConflictError(`Cannot transition run from terminal state "${rec.status}"`);
    }
    // Idempotent cancel: the event is appended, the run is returned unchanged.
    const ev = newEvent(call.stamp, runId, data, type, data.eventData);
    const done = await commit(ctx, call.hints, pos, {
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
        eventIdx: 1,
      }),
      onGuard: () => {
        throw new Restart();
      },
    });
    return { own: [at(ev, done.slot)], pos, run: await toRun(ctx, rec, call.rd) };
  }

  const field = type === 'run_completed' ? 'output' : type === 'run_failed' ? 'error' : undefined;
  const value = type === 'run_completed' ? ed.output : type === 'run_failed' ? ed.error : undefined;
  // `$retention: '0'`: the run view loses its payloads and gains `expiredAt` in the terminal
  // write itself, and the terminal event is stored without its output/error (retention.ts).
  const purge = purgesOnFinish(rec.attributes);
  let stored: unknown;
  if (field && !purge) {
    const rest = { ...read.run };
    delete rest.output;
    delete rest.error;
    stored = (await placePayloads(ctx, { [field]: value }, `${runPrefix(runId)}/run`, itemSize(rest) + 512))[field];
  }
  const status = type === 'run_completed' ? 'completed' : type === 'run_failed' ? 'failed' : 'cancelled';
  const next: RunRecord = {
    ...rec,
    status,
    input: purge ? undefined : rec.input,
    output: field === 'output' ? stored : undefined,
    error: field === 'error' ? stored : undefined,
    errorCode: type === 'run_failed' ? ed.errorCode : undefined,
    expiredAt: purge ? call.now : rec.expiredAt,
    completedAt: call.now,
    updatedAt: call.now,
  };
  const names: Record<string, string> = { '#st': 'status' };
  const values: Attrs = { ...TERMINAL_VALUES, ':new': { S: status }, ':now': { N: String(call.now.getTime()) } };
  let set = 'SET #st = :new, completedAt = :now, updatedAt = :now';
  // A run that never held a hook or wait has nothing to release; the condition below makes the
  // transition re-read if one was created since this read.
  const release = mayHold(read.run);
  let condition = `attribute_exists(PK) AND ${NOT_TERMINAL}`;
  if (!release) {
    condition += ' AND #holds = :nohold';
    names['#holds'] = HOLDS;
    values[':nohold'] = { BOOL: false };
  }
  if (remembered) {
    // The attributes decide retention and are returned: they must be the ones remembered.
    condition += ' AND attrVer = :av';
    values[':av'] = { N: String(rec.attrVer) };
  }
  if (field && stored !== undefined) {
    set += `, #f = :v`;
    names['#f'] = field;
    values[':v'] = toAttr(stored)!;
  }
  if (type === 'run_failed' && typeof ed.errorCode === 'string') {
    set += ', errorCode = :ec';
    values[':ec'] = { S: ed.errorCode };
  }
  if (purge) {
    set += ', expiredAt = :now REMOVE #in, #out, #err';
    Object.assign(names, { '#in': 'input', '#out': 'output', '#err': 'error' });
  }
  const ev = newEvent(call.stamp, runId, data, type, data.eventData);
  const storedEv = !field ? ev : { ...ev, eventData: purge ? omit(ed, field) : { ...ed, [field]: stored } };
  const done = await commit(ctx, call.hints, pos, {
    runId,
    what: type,
    build: (slot) => ({
      items: [
        {
          Update: {
            TableName: ctx.table,
            Key: keysOf(keys.runMeta(runId)),
            UpdateExpression: set,
            ConditionExpression: condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem(at(storedEv, slot))),
      ],
      eventIdx: 1,
    }),
    onGuard: (c) => {
      call.runs.forget(runId);
      if (!oldItem(c, 0)) throw new WorkflowRunNotFoundError(runId);
      // Finished concurrently (re-read, then conflict or idempotent cancel), or the remembered
      // view / `holds` flag moved (re-read and decide again).
      throw new Restart();
    },
  });
  call.runs.forget(runId);
  if (release) await releaseRun(ctx, runId, purge);
  await applyRetention(ctx, runId, rec.attributes, call.now);
  const run = await toRun(
    ctx,
    purge
      ? next
      : { ...next, output: field === 'output' ? value : undefined, error: field === 'error' ? value : undefined },
    call.rd,
  );
  return { own: [at(ev, done.slot)], pos, run };
}

// ---------------------------------------------------------------- attr_set

export function attrSet(call: CreateCall, runId: string, data: Data): Promise<Outcome> {
  const ed: Data = data.eventData ?? {};
  const changes: AttributeChange[] = Array.isArray(ed.changes) ? ed.changes : [];
  const allowReservedAttributes = ed.allowReservedAttributes === true;
  validateAttributeEventDataSize(ed as never);
  validateAttributeChanges(changes, { allowReservedAttributes });
  return restartable(() => attrSetOnce(call, runId, data, ed, changes, allowReservedAttributes));
}

async function attrSetOnce(
  call: CreateCall,
  runId: string,
  data: Data,
  ed: Data,
  changes: AttributeChange[],
  allowReservedAttributes: boolean,
) {
  const { ctx, params } = call;
  const ec = startPosition(params).last;
  const read = await readRunTail(ctx, runId, ec);
  if (!read.run) throw new WorkflowRunNotFoundError(runId);
  const rec = parseRun(read.run);
  assertSpec(rec);
  if (isTerminalRun(rec.status))
    throw new EntityConflictError(`Cannot set attributes on run in terminal state "${rec.status}"`);
  // Post-merge key count, exact against the attributes this transaction is conditioned on.
  validateAttributeChanges(changes, { existingKeys: Object.keys(rec.attributes), allowReservedAttributes });
  const merged = applyAttributeChanges(rec.attributes, changes);
  const claim = data.correlationId && ed.writer?.type === 'workflow' ? (data.correlationId as string) : undefined;
  const pos: Position = { last: read.tail, collect: ec === undefined ? undefined : [...read.events] };
  const ev = newEvent(call.stamp, runId, data, 'attr_set', ed);
  const done = await commit(ctx, call.hints, pos, {
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
              ':now': { N: String(call.now.getTime()) },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        putEvent(ctx, eventItem(at(ev, slot))),
      ];
      if (claim)
        items.push(
          putNew(ctx, {
            ...keysOf(keys.attrClaim(runId, claim)),
            ...formatStamp('records'),
            slot: { N: String(slot) },
          }),
        );
      return { items, eventIdx: 1 };
    },
    onGuard: (c) => {
      if (claim && failedCondition(c, 2)) throw new EntityConflictError(`Attribute event "${claim}" already exists`);
      const old = oldItem(c, 0);
      if (!old) throw new WorkflowRunNotFoundError(runId);
      if (isTerminalRun(str(old, 'status')))
        throw runGuardError(
          runId,
          old,
          (s) => new EntityConflictError(`Cannot set attributes on run in terminal state "${s}"`),
        );
      throw new Restart(); // another attr_set moved the version: re-validate against it
    },
  });
  call.runs.forget(runId);
  const run: WorkflowRun = await toRun(
    ctx,
    { ...rec, attributes: merged, attrVer: rec.attrVer + 1, updatedAt: call.now },
    call.rd,
  );
  return { own: [at(ev, done.slot)], pos, run };
}

function omit(o: Data, field: string): Data {
  const { [field]: _, ...rest } = o;
  return rest;
}
