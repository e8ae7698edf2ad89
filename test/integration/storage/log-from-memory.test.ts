/**
 * Inside a delivery, `events.list` is answered from this process's memory of the log when it has
 * seen the log at least as far as the message's sender had (the message's `eve.tail`), with every
 * event in between remembered; otherwise it reads DynamoDB. Calls are counted by SDK middleware
 * on real DynamoDB Local / S3 emulator clients; what memory answers is compared with what a
 * Query returns to another Storage (another "process"). `run_started`'s preload (the whole log)
 * reads only the events after the prefix this process remembers.
 */
import type { Event, Storage } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { runInDelivery } from '../../../src/context/delivery-scope.js';
import { createContext } from '../../../src/context/world-context.js';
import { createStorage, type WorldStorage } from '../../../src/storage/index.js';
import { spelled } from '../../helpers/expression-text.js';
import { bytes, runCreatedReq, type StorageFixture, storageFixture, sv } from '../../helpers/storage.js';

let f: StorageFixture;
let counted: ReturnType<typeof createClients>;
const ddbCalls: string[] = [];
const ddbInputs: any[] = [];

beforeAll(async () => {
  f = await storageFixture();
  counted = createClients(f.config);
  (counted.ddb as { middlewareStack: { add: (...a: any[]) => void } }).middlewareStack.add(
    (next: any, context: any) => async (args: any) => {
      ddbCalls.push(context.commandName.replace(/Command$/, ''));
      ddbInputs.push(args.input);
      return next(args);
    },
    { step: 'initialize', name: 'countDdb' },
  );
});
afterAll(() => {
  destroyClients(counted);
  f?.close();
});

const process_ = (): WorldStorage => createStorage(createContext(f.config, counted));

async function ddb<T>(fn: () => Promise<T>): Promise<{ out: T; calls: string[]; inputs: any[] }> {
  ddbCalls.length = 0;
  ddbInputs.length = 0;
  const out = await fn();
  return { out, calls: [...ddbCalls], inputs: [...ddbInputs] };
}

const inDelivery = <T>(tails: [string, number][], fn: () => Promise<T>) =>
  runInDelivery({ messageId: 'msg_test', attempt: 1, logTails: new Map(tails) }, fn);

/** A run with a completed lazy step and a created step; `result` is the step's output. */
async function runWithSteps(s: Storage, result = bytes('out')): Promise<string> {
  const { run } = await s.events.create(null, runCreatedReq());
  await s.events.create(run.runId, { eventType: 'run_started', specVersion: sv });
  await s.events.create(run.runId, {
    eventType: 'step_started',
    specVersion: sv,
    correlationId: 'step_1',
    eventData: { stepName: 's', input: bytes('in') },
  });
  await s.events.create(run.runId, {
    eventType: 'step_completed',
    specVersion: sv,
    correlationId: 'step_1',
    eventData: { result },
  });
  await s.events.create(run.runId, {
    eventType: 'step_created',
    specVersion: sv,
    correlationId: 'step_2',
    eventData: { stepName: 's', input: bytes('in2') },
  });
  return run.runId;
}

/** `step_2` started by `s` knowing only that slot 6 (the end of {@link runWithSteps}) exists. */
const startStep2 = (s: Storage, runId: string) =>
  s.events.create(
    runId,
    { eventType: 'step_started', specVersion: sv, correlationId: 'step_2', eventData: { stepName: 's' } },
    { eventCount: 6 },
  );

const plain = (events: Event[]) =>
  JSON.parse(JSON.stringify(events, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)));

describe('events.list inside a delivery', () => {
  it('answers from memory what this process wrote, exactly as a Query returns it to another process', async () => {
    const a = process_();
    const runId = await runWithSteps(a);
    const tail = a.logTail(runId)!;
    expect(tail).toBe(6);

    const mem = await ddb(() => inDelivery([[runId, tail]], () => a.events.list({ runId })));
    expect(mem.calls).toEqual([]);
    const read = await ddb(() => process_().events.list({ runId }));
    expect(read.calls).toEqual(['Query']);
    expect(mem.out.data.map((e) => e.eventType)).toEqual([
      'run_created',
      'run_started',
      'step_created',
      'step_started',
      'step_completed',
      'step_created',
    ]);
    expect(plain(mem.out.data)).toEqual(plain(read.out.data));
    expect({ cursor: mem.out.cursor, hasMore: mem.out.hasMore }).toEqual({
      cursor: read.out.cursor,
      hasMore: read.out.hasMore,
    });

    // Pages and resolveData 'none' too.
    const pages = async (s: Storage, rd?: 'none') => {
      const out: Event[] = [];
      let cursor: string | undefined;
      const flags: boolean[] = [];
      for (;;) {
        const p = await s.events.list({ runId, pagination: { limit: 4, cursor }, resolveData: rd });
        out.push(...p.data);
        flags.push(p.hasMore);
        if (!p.hasMore) return { out, flags, cursor: p.cursor };
        cursor = p.cursor!;
      }
    };
    const memPages = await ddb(() => inDelivery([[runId, tail]], () => pages(a, 'none')));
    expect(memPages.calls).toEqual([]);
    const readPages = await pages(process_(), 'none');
    expect(plain(memPages.out.out)).toEqual(plain(readPages.out));
    expect(memPages.out.flags).toEqual(readPages.flags);
    expect(memPages.out.cursor).toEqual(readPages.cursor);

    // Nothing after the tail: an empty page, from memory.
    const after = await ddb(() =>
      inDelivery([[runId, tail]], () => a.events.list({ runId, pagination: { cursor: mem.out.cursor! } })),
    );
    expect(after.calls).toEqual([]);
    expect(after.out.data).toEqual([]);
  });

  it('reads DynamoDB when the message names a tail this process has not seen, then remembers it', async () => {
    const a = process_();
    const b = process_();
    const runId = await runWithSteps(a);
    // Another process appends to the log and sends a message with its tail.
    await startStep2(b, runId);
    const senderTail = b.logTail(runId)!;
    expect(senderTail).toBe(7);

    const first = await ddb(() => inDelivery([[runId, senderTail]], () => a.events.list({ runId })));
    expect(first.calls).toEqual(['Query']);
    expect(first.out.data.map((e) => e.eventType).at(-1)).toBe('step_started');
    const again = await ddb(() => inDelivery([[runId, senderTail]], () => a.events.list({ runId })));
    expect(again.calls).toEqual([]);
    expect(plain(again.out.data)).toEqual(plain(first.out.data));
  });

  it('reads DynamoDB outside a delivery, in descending order, and for a run the message does not name', async () => {
    const a = process_();
    const runId = await runWithSteps(a);
    const tail = a.logTail(runId)!;
    expect((await ddb(() => a.events.list({ runId }))).calls).toEqual(['Query']);
    expect(
      (await ddb(() => inDelivery([[runId, tail]], () => a.events.list({ runId, pagination: { sortOrder: 'desc' } }))))
        .calls,
    ).toEqual(['Query']);
    expect((await ddb(() => inDelivery([['wrun_other', 1]], () => a.events.list({ runId })))).calls).toEqual(['Query']);
  });

  it('reads DynamoDB when an event in between is not remembered (a write noted only by its slot)', async () => {
    const a = process_();
    const b = process_();
    const runId = await runWithSteps(b);
    // `a` writes at slot 7 knowing only that slot 6 exists (its eventCount): it has not seen 1..6.
    await startStep2(a, runId);
    expect(a.logTail(runId)).toBe(7);
    const r = await ddb(() => inDelivery([[runId, 7]], () => a.events.list({ runId })));
    expect(r.calls).toEqual(['Query']);
    expect(r.out.data).toHaveLength(7);
  });

  it('reads DynamoDB for a log holding an event too large to remember, and returns it whole', async () => {
    const a = process_();
    // Over the inline threshold: the output lives in S3; the event is over the 32 KB memory cap.
    const big = bytes('x'.repeat(320_000));
    const runId = await runWithSteps(a, big);
    const r = await ddb(() => inDelivery([[runId, a.logTail(runId)!]], () => a.events.list({ runId })));
    expect(r.calls).toEqual(['Query']);
    const done = r.out.data.find((e) => e.eventType === 'step_completed') as { eventData?: { result?: Uint8Array } };
    expect(Buffer.from(done.eventData!.result!).equals(Buffer.from(big))).toBe(true);
  });
});

describe("run_started's preload", () => {
  it('reads only the run and the events after the prefix this process remembers, and returns the whole log', async () => {
    const a = process_();
    const runId = await runWithSteps(a);
    // A later delivery of the same run (a hook's message, say): core calls run_started, whose
    // preload returns the whole log. This process wrote slots 1..6, so only what follows is read
    // (from the item of slot 6, inclusive: a bound may be a pair's first half).
    const mem = await ddb(() => a.events.create(runId, { eventType: 'run_started', specVersion: sv }));
    expect(mem.calls).toEqual(['Query']);
    expect(spelled(mem.inputs[0]).KeyConditionExpression).toBe(
      'PK = "RUN#' + runId + '" AND SK BETWEEN "EVT#00000000000000000006" AND "RUN#meta"',
    );
    // Another process remembers nothing: it reads the whole log (after slot 0), and gets the same answer.
    const read = await ddb(() => process_().events.create(runId, { eventType: 'run_started', specVersion: sv }));
    expect(spelled(read.inputs[0]).KeyConditionExpression).toMatch(/SK BETWEEN "EVT#00000000000000000000" AND/);
    const log = (r: unknown) => plain(((r as { events?: Event[] }).events ?? []) as Event[]);
    expect(log(mem.out).map((e: Event) => e.eventType)).toEqual([
      'run_created',
      'run_started',
      'step_created',
      'step_started',
      'step_completed',
      'step_created',
    ]);
    expect(log(mem.out)).toEqual(log(read.out));
  });
});

describe("run_started's preload inside a delivery", () => {
  const started = (s: Storage, runId: string) => s.events.create(runId, { eventType: 'run_started', specVersion: sv });
  const log = (r: unknown) => plain(((r as { events?: Event[] }).events ?? []) as Event[]);
  const runOf = (r: unknown) => plain([(r as { run: unknown }).run as Event]);

  it('answers from memory, with no read, when this process has seen the log as far as the sender', async () => {
    const a = process_();
    const runId = await runWithSteps(a);
    const tail = a.logTail(runId)!;
    const mem = await ddb(() => inDelivery([[runId, tail]], () => started(a, runId)));
    expect(mem.calls).toEqual([]);
    // Another process reads it, and gets the same log and the same run.
    const read = await ddb(() => started(process_(), runId));
    expect(read.calls).toEqual(['Query']);
    expect(log(mem.out).map((e: Event) => e.eventType)).toEqual([
      'run_created',
      'run_started',
      'step_created',
      'step_started',
      'step_completed',
      'step_created',
    ]);
    expect(log(mem.out)).toEqual(log(read.out));
    expect(runOf(mem.out)).toEqual(runOf(read.out));
    expect((mem.out as { run: { status: string } }).run.status).toBe('running');
  });

  it('reads when the sender saw further than this process, and answers with what the sender wrote', async () => {
    const a = process_();
    const b = process_();
    const runId = await runWithSteps(a);
    await startStep2(b, runId);
    const r = await ddb(() => inDelivery([[runId, b.logTail(runId)!]], () => started(a, runId)));
    expect(r.calls).toEqual(['Query']);
    expect(log(r.out).at(-1).eventType).toBe('step_started');
  });

  it('reads outside a delivery, and for a message that names no tail for this run', async () => {
    const a = process_();
    const runId = await runWithSteps(a);
    expect((await ddb(() => started(a, runId))).calls).toEqual(['Query']);
    expect((await ddb(() => inDelivery([['wrun_other', 1]], () => started(a, runId)))).calls).toEqual(['Query']);
  });

  it("reads when the remembered log holds another process's attr_set (the remembered run item predates it)", async () => {
    const a = process_();
    const b = process_();
    const runId = await runWithSteps(a);
    await b.events.create(runId, {
      eventType: 'attr_set',
      specVersion: sv,
      eventData: { changes: [{ key: 'a', value: '1' }], writer: { type: 'step', stepId: 's', attempt: 1 } },
    } as never);
    const tail = b.logTail(runId)!;
    // `a` learns the log as far as the attr_set (its run item is still the one it wrote at start).
    const seen = await ddb(() => inDelivery([[runId, tail]], () => a.events.list({ runId })));
    expect(seen.calls).toEqual(['Query']);
    expect(a.logTail(runId)).toBe(tail);
    const r = await ddb(() => inDelivery([[runId, tail]], () => started(a, runId)));
    expect(r.calls).toEqual(['Query']);
    expect((r.out as { run: { attributes?: Record<string, string> } }).run.attributes).toMatchObject({ a: '1' });
  });

  it('reads a run this process remembers as pending (another process started it)', async () => {
    const a = process_();
    const { run } = await a.events.create(null, runCreatedReq());
    await process_().events.create(run.runId, { eventType: 'run_started', specVersion: sv });
    const r = await ddb(() => inDelivery([[run.runId, a.logTail(run.runId)!]], () => started(a, run.runId)));
    expect(r.calls).toEqual(['Query']);
    expect((r.out as { run: { status: string } }).run.status).toBe('running');
  });
});
