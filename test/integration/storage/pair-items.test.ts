/**
 * Pair items (src/storage/records/event.ts): the lazy `step_started` (and the resilient
 * `run_started`) stores its synthetic create and itself as ONE log item covering two slots. These
 * tests read the table raw (a Query of the run's partition, not through the World's readers) and
 * count the SDK calls on real DynamoDB Local:
 * - the lazy start is one transaction of 3 actions with one `EVT#` item covering 2 slots;
 * - `events.get` answers both halves; paging with limit 1, 2, 3 both ways (from DynamoDB and from
 *   a delivery's memory) returns every event once, in order, each page at most `limit`;
 * - a writer given a position inside a pair (a half-form cursor) never claims the pair's second
 *   half, alone or racing other writers: the items' covered slots tile 1..N.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { Event, Storage } from '@workflow/world';
import { eventIdToSlot, slotToEventId } from '@workflow/world';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { runInDelivery } from '../../../src/context/delivery-scope.js';
import { createContext } from '../../../src/context/world-context.js';
import { createStorage, encodeEventCursor, type WorldStorage } from '../../../src/storage/index.js';
import { bytes, type StorageFixture, startedRun, storageFixture, sv } from '../../helpers/storage.js';

let f: StorageFixture;
let counted: ReturnType<typeof createClients>;
const sent: { command: string; input: any }[] = [];

beforeAll(async () => {
  f = await storageFixture();
  counted = createClients(f.config);
  (counted.ddb as { middlewareStack: { add: (...a: any[]) => void } }).middlewareStack.add(
    (next: any, context: any) => async (args: any) => {
      sent.push({ command: context.commandName.replace(/Command$/, ''), input: args.input });
      return next(args);
    },
    { step: 'initialize', name: 'recordDdb' },
  );
});
afterAll(() => {
  destroyClients(counted);
  f?.close();
});

/** A Storage of its own ("another process": no shared memory), on the recording clients. */
const process_ = (): WorldStorage => createStorage(createContext(f.config, counted));

const lazy = (stepId: string, extra: Record<string, unknown> = {}) => ({
  eventType: 'step_started' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { stepName: 'step//s', input: bytes(`in-${stepId}`), ...extra },
});
const completed = (stepId: string) => ({
  eventType: 'step_completed' as const,
  specVersion: sv,
  correlationId: stepId,
  eventData: { result: bytes(`out-${stepId}`) },
});
const waitCreated = (id: string) => ({
  eventType: 'wait_created' as const,
  specVersion: sv,
  correlationId: id,
  eventData: { resumeAt: new Date(Date.now() + 3_600_000) },
});

const stepWriter = { type: 'step' as const, stepId: 'step_w', attempt: 1 };

interface RawItem {
  slot: number;
  last: number;
  types: string[];
  gsi: boolean;
}

/** The run's log items as stored, ascending: the slots each covers and the event types it holds. */
async function rawLog(runId: string): Promise<RawItem[]> {
  const items: Record<string, any>[] = [];
  let start: Record<string, any> | undefined;
  do {
    const res = await f.clients.ddb.send(
      new QueryCommand({
        TableName: f.config.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :e)',
        ExpressionAttributeValues: { ':pk': { S: `RUN#${runId}` }, ':e': { S: 'EVT#' } },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(res.Items ?? []));
    start = res.LastEvaluatedKey;
  } while (start);
  return items.map((i) => {
    const slot = Number(i.SK.S.slice(4));
    return {
      slot,
      last: i.e2 ? slot + 1 : slot,
      types: i.e2 ? [i.t.S, i.e2.M.t.S] : [i.t.S],
      gsi: i.GSI1PK !== undefined,
    };
  });
}

/** The items' covered slots tile 1..n: no gap, no overlap; and the World's list agrees. */
async function expectTiled(runId: string, n: number): Promise<RawItem[]> {
  const raw = await rawLog(runId);
  let next = 1;
  for (const it of raw) {
    expect(it.slot, `item EVT#${it.slot} after slot ${next - 1}`).toBe(next);
    next = it.last + 1;
  }
  expect(next - 1).toBe(n);
  const listed = await f.other().events.list({ runId });
  expect(listed.data.map((e) => e.eventId)).toEqual(Array.from({ length: n }, (_, i) => slotToEventId(i + 1)));
  return raw;
}

describe('the lazy start', () => {
  it('is one transaction of 3 actions, writing one EVT# item that covers 2 slots', async () => {
    const s = process_();
    const runId = await startedRun(s);
    sent.length = 0;
    const r = await s.events.create(runId, lazy('step_a'));
    expect(r.stepCreated).toBe(true);
    const tx = sent.filter((c) => c.command === 'TransactWriteItems');
    expect(tx).toHaveLength(1);
    const actions = tx[0].input.TransactItems as Record<string, any>[];
    expect(actions.map((a) => Object.keys(a)[0])).toEqual(['Put', 'ConditionCheck', 'Put']);
    expect(actions.map((a) => (a.Put ?? a.ConditionCheck).Key?.SK?.S ?? a.Put.Item.SK.S)).toEqual([
      'STEP#step_a',
      'RUN#meta',
      'EVT#00000000000000000003',
    ]);
    const raw = await expectTiled(runId, 4);
    expect(raw.at(-1)).toEqual({ slot: 3, last: 4, types: ['step_created', 'step_started'], gsi: false });
    // The step records its first slot: the pair's key.
    const step = await f.clients.ddb.send(
      new QueryCommand({
        TableName: f.config.tableName,
        KeyConditionExpression: 'PK = :pk AND SK = :sk',
        ExpressionAttributeValues: { ':pk': { S: `RUN#${runId}` }, ':sk': { S: 'STEP#step_a' } },
      }),
    );
    expect(step.Items?.[0]?.fs?.N).toBe('3');
    // What the create returned: both events, the second the result's event.
    expect(r.event?.eventId).toBe(slotToEventId(4));
  });

  it('a resilient run_started writes its synthetic run_created and itself as one pair item too', async () => {
    const runId = `wrun_${ulid()}`;
    const r = await process_().events.create(runId, {
      eventType: 'run_started',
      specVersion: sv,
      eventData: { deploymentId: 'd', workflowName: 'w', input: bytes('i') },
    });
    expect(r.run?.status).toBe('running');
    const raw = await expectTiled(runId, 2);
    expect(raw).toEqual([{ slot: 1, last: 2, types: ['run_created', 'run_started'], gsi: false }]);
    expect((await f.other().events.get(runId, slotToEventId(2))).eventType).toBe('run_started');
  });

  it('an item over 400 KB names the field for a pair, whichever event holds it', async () => {
    const runId = await startedRun(f.storage);
    // The start's own fields ride the pair's second event (its input rides the first).
    const err = await f.storage.events
      .create(runId, lazy('step_big', { notesA: 'a'.repeat(250_000), notesB: 'b'.repeat(200_000) }))
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.field).toBe('eventData.notesA');
    expect(err.message).toMatch(/eventData\.notesA makes the event item \d+ KB, over DynamoDB's 400 KB item limit/);
    await expectTiled(runId, 2);
  });
});

describe('reads of a log with pairs', () => {
  /** 1-2 run, 3-4 pair A, 5 wait, 6-7 pair B, 8-9 pair C, 10 A completed: 10 events in 7 items. */
  async function logWithPairs(s: Storage): Promise<{ runId: string; ids: string[] }> {
    const runId = await startedRun(s);
    await s.events.create(runId, lazy('step_a'));
    await s.events.create(runId, waitCreated('wait_1'));
    await s.events.create(runId, lazy('step_b'));
    await s.events.create(runId, lazy('step_c'));
    await s.events.create(runId, completed('step_a'));
    const raw = await expectTiled(runId, 10);
    expect(raw.map((i) => i.slot)).toEqual([1, 2, 3, 5, 6, 8, 10]);
    return { runId, ids: Array.from({ length: 10 }, (_, i) => slotToEventId(i + 1)) };
  }

  type Page = { data: Event[]; cursor: string | null; hasMore: boolean };
  async function pages(read: (cursor?: string) => Promise<Page>): Promise<Page[]> {
    const out: Page[] = [];
    let cursor: string | undefined;
    for (;;) {
      const p = await read(cursor);
      out.push(p);
      if (!p.hasMore) return out;
      expect(out.length).toBeLessThan(50);
      cursor = p.cursor!;
    }
  }

  /** Every event once, in order; every page at most `limit`, and full unless it is the last. */
  function expectPaged(ps: Page[], limit: number, ids: string[]) {
    expect(ps.flatMap((p) => p.data.map((e) => e.eventId))).toEqual(ids);
    for (const [i, p] of ps.entries()) {
      expect(p.data.length).toBeLessThanOrEqual(limit);
      if (i < ps.length - 1) expect(p.data.length).toBe(limit);
    }
  }

  it('events.get answers both halves of a pair, one Query each', async () => {
    const w = process_();
    const { runId } = await logWithPairs(w);
    const r = process_();
    sent.length = 0;
    const first = await r.events.get(runId, slotToEventId(6));
    const second = await r.events.get(runId, slotToEventId(7));
    expect(sent.map((c) => c.command)).toEqual(['Query', 'Query']);
    expect([first.eventType, first.correlationId]).toEqual(['step_created', 'step_b']);
    expect([second.eventType, second.correlationId]).toEqual(['step_started', 'step_b']);
    expect((first as { eventData?: { input?: unknown } }).eventData?.input).toEqual(bytes('in-step_b'));
    const all = await r.events.list({ runId });
    expect(await r.events.get(runId, slotToEventId(7))).toEqual(all.data[6]);
    expect(await r.events.get(runId, slotToEventId(9))).toEqual(all.data[8]);
    await expect(r.events.get(runId, slotToEventId(11))).rejects.toThrow(/not found/);
  });

  it('pages with limit 1, 2, 3 both ways: every event once, in order, no page over its limit', async () => {
    const { runId, ids } = await logWithPairs(process_());
    const r = process_();
    for (const limit of [1, 2, 3]) {
      const asc = await pages((cursor) => r.events.list({ runId, pagination: { limit, cursor } }));
      expectPaged(asc, limit, ids);
      const desc = await pages((cursor) => r.events.list({ runId, pagination: { limit, cursor, sortOrder: 'desc' } }));
      expectPaged(desc, limit, [...ids].reverse());
    }
    // A page ending on a pair's first half says so in its cursor; the next page starts at the
    // second half, both ways.
    const onFirst = await r.events.list({ runId, pagination: { limit: 1, cursor: encodeEventCursor(2) } });
    expect(onFirst.data.map((e) => e.eventId)).toEqual([ids[2]]);
    expect(onFirst.cursor).toBe(encodeEventCursor(3, true));
    const rest = await r.events.list({ runId, pagination: { limit: 1, cursor: onFirst.cursor! } });
    expect(rest.data.map((e) => e.eventId)).toEqual([ids[3]]);
    expect(rest.cursor).toBe(encodeEventCursor(4));
    const down = await r.events.list({
      runId,
      pagination: { limit: 2, sortOrder: 'desc', cursor: encodeEventCursor(8) },
    });
    expect(down.data.map((e) => e.eventId)).toEqual([ids[6], ids[5]]);
    expect(down.cursor).toBe(encodeEventCursor(6, true));
    // A plain cursor inside a pair (e.g. `tail --since`) reads the same.
    const plain = await r.events.list({ runId, pagination: { cursor: encodeEventCursor(6) } });
    expect(plain.data.map((e) => e.eventId)).toEqual(ids.slice(6));
  });

  it("pages from a delivery's memory exactly as from DynamoDB, with no read", async () => {
    const w = process_();
    const { runId, ids } = await logWithPairs(w);
    const tail = w.logTail(runId)!;
    expect(tail).toBe(10);
    for (const limit of [1, 2, 3]) {
      sent.length = 0;
      const mem = await runInDelivery({ messageId: 'm', attempt: 1, logTails: new Map([[runId, tail]]) }, () =>
        pages((cursor) => w.events.list({ runId, pagination: { limit, cursor } })),
      );
      expect(sent).toEqual([]);
      expectPaged(mem, limit, ids);
      const read = await pages((cursor) => process_().events.list({ runId, pagination: { limit, cursor } }));
      expect(mem.map((p) => [p.cursor, p.hasMore])).toEqual(read.map((p) => [p.cursor, p.hasMore]));
    }
  });

  it('listByCorrelationId pages a step whose first two events are one pair', async () => {
    const { runId } = await logWithPairs(process_());
    const r = process_();
    const types = ['step_created', 'step_started', 'step_completed'];
    for (const limit of [1, 2, 3]) {
      const asc = await pages((cursor) =>
        r.events.listByCorrelationId({ runId, correlationId: 'step_a', pagination: { limit, cursor } }),
      );
      expect(asc.flatMap((p) => p.data.map((e) => e.eventType))).toEqual(types);
      for (const p of asc) expect(p.data.length).toBeLessThanOrEqual(limit);
      const desc = await pages((cursor) =>
        r.events.listByCorrelationId({
          runId,
          correlationId: 'step_a',
          pagination: { limit, cursor, sortOrder: 'desc' },
        }),
      );
      expect(desc.flatMap((p) => p.data.map((e) => e.eventType))).toEqual([...types].reverse());
      for (const p of desc) expect(p.data.length).toBeLessThanOrEqual(limit);
    }
  });
});

describe('writers at a position inside a pair', () => {
  /** The half-form cursor on the pair at `slot`, as a reader is handed it (a page of one). */
  async function midCursor(runId: string, slot: number): Promise<string> {
    const page = await process_().events.list({ runId, pagination: { limit: 1, cursor: encodeEventCursor(slot - 1) } });
    expect(page.data.map((e) => e.eventType)).toEqual(['step_created']);
    expect(page.cursor).toBe(encodeEventCursor(slot, true));
    return page.cursor!;
  }

  it('each kind of writer, alone and knowing nothing else, lands above the pair with its second half in the delta', async () => {
    const runId = await startedRun(f.storage);
    const pairWriter = process_();
    type Write = (s: Storage, sinceCursor: string, pairStep: string) => Promise<unknown>;
    const writers: [string, number, Write][] = [
      ['wait_created', 1, (s, c) => s.events.create(runId, waitCreated('wait_x'), { sinceCursor: c })],
      [
        'hook_created',
        1,
        (s, c) =>
          s.events.create(
            runId,
            { eventType: 'hook_created', specVersion: sv, correlationId: 'hook_x', eventData: { token: `t-${runId}` } },
            { sinceCursor: c },
          ),
      ],
      ['step_started (lazy)', 2, (s, c) => s.events.create(runId, lazy('step_other'), { sinceCursor: c })],
      [
        'attr_set',
        1,
        (s, c) =>
          s.events.create(
            runId,
            {
              eventType: 'attr_set',
              specVersion: sv,
              eventData: { changes: [{ key: 'k', value: 'v' }], writer: stepWriter },
            },
            { sinceCursor: c },
          ),
      ],
      // The pair's own step completes from the cursor of its start (the inline step's path).
      ['step_completed', 1, (s, c, step) => s.events.create(runId, completed(step), { sinceCursor: c })],
    ];
    let n = 2;
    for (const [kind, slots, write] of writers) {
      const pair = n + 1;
      await pairWriter.events.create(runId, lazy(`step_pair_${pair}`));
      const r = (await write(process_(), await midCursor(runId, pair), `step_pair_${pair}`)) as {
        event?: Event;
        events?: Event[];
      };
      expect(r.event?.eventId, kind).toBe(slotToEventId(pair + 1 + slots));
      const delta = Array.from({ length: 1 + slots }, (_, i) => slotToEventId(pair + 1 + i));
      expect(
        r.events?.map((e) => e.eventId),
        kind,
      ).toEqual(delta);
      n = pair + 1 + slots;
      await expectTiled(runId, n);
    }
  });

  it('a process that remembers the run but not the pair ends the run above the pair', async () => {
    // `owner` created and started the run, so it remembers the run view, and has seen slot 2 only.
    const owner = process_();
    const runId = await startedRun(owner);
    await process_().events.create(runId, lazy('step_p'));
    const r = await owner.events.create(
      runId,
      { eventType: 'run_completed', specVersion: sv, eventData: { output: bytes('o') } },
      { sinceCursor: await midCursor(runId, 3) },
    );
    expect(r.event?.eventId).toBe(slotToEventId(5));
    expect(r.events?.map((e) => e.eventType)).toEqual(['step_started', 'run_completed']);
    await expectTiled(runId, 5);
  });

  it('many writers racing from a cursor inside a pair and from a stale count: the items tile 1..N', async () => {
    const runId = await startedRun(f.storage);
    await f.storage.events.create(runId, lazy('step_p'));
    const c = await midCursor(runId, 3);
    const writes: { since: boolean; slots: number; p: Promise<{ event?: Event; events?: Event[] }> }[] = [];
    const add = (since: boolean, slots: number, p: Promise<unknown>) =>
      writes.push({ since, slots, p: p as Promise<{ event?: Event; events?: Event[] }> });
    for (let i = 0; i < 8; i++)
      add(true, 1, process_().events.create(runId, waitCreated(`wait_${i}`), { sinceCursor: c }));
    for (let i = 0; i < 6; i++) add(true, 2, process_().events.create(runId, lazy(`step_${i}`), { sinceCursor: c }));
    for (let i = 0; i < 3; i++)
      add(
        true,
        1,
        process_().events.create(
          runId,
          {
            eventType: 'attr_set',
            specVersion: sv,
            eventData: { changes: [{ key: `k${i}`, value: 'v' }], writer: stepWriter },
          },
          { sinceCursor: c },
        ),
      );
    add(true, 1, process_().events.create(runId, completed('step_p'), { sinceCursor: c }));
    for (let i = 0; i < 4; i++)
      add(false, 1, process_().events.create(runId, waitCreated(`late_${i}`), { eventCount: 2 }));
    for (let i = 0; i < 4; i++) add(false, 2, process_().events.create(runId, lazy(`bare_${i}`)));
    const results = await Promise.all(writes.map((w) => w.p));
    const n = 4 + writes.reduce((s, w) => s + w.slots, 0);
    const raw = await expectTiled(runId, n);
    expect(raw.filter((i) => i.last > i.slot)).toHaveLength(1 + 6 + 4);
    expect(raw.filter((i) => i.gsi && i.last > i.slot)).toEqual([]);
    // Each delta from the cursor is the log from the pair's second half through the write's own
    // events, gap-free.
    for (const [i, r] of results.entries()) {
      if (!writes[i].since) continue;
      const got = r.events!.map((e) => e.eventId);
      const to = eventIdToSlot(r.event!.eventId)!;
      expect(got).toEqual(Array.from({ length: to - 3 }, (_, k) => slotToEventId(4 + k)));
    }
  });
});
