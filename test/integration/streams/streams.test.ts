/**
 * Streamer against DynamoDB Local + fauxqs (S3). No mocks. No assertion depends on wall time.
 */
import { WorkflowWorldError } from '@workflow/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import {
  type AwsStreamer,
  activeStreamReaders,
  createStreamer,
  streamSignalListeners,
} from '../../../src/streams/index.js';
import { StreamQueries } from '../../../src/streams/queries.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';

const dec = new TextDecoder();
let fx: Fixture;
let streamer: AwsStreamer;
const extraClients: AwsClients[] = [];
let seq = 0;
const newRun = () => `wrun_test${Date.now()}${seq++}`;

beforeAll(async () => {
  fx = await createFixture({}, 'strm', { payloadThresholdBytes: 1000, streamPollMs: 10, streamIdlePollMs: 100 });
  streamer = createStreamer(createContext(fx.config, fx.clients));
});

afterAll(async () => {
  await streamer?.close();
  for (const c of extraClients) destroyClients(c);
  if (fx) destroyClients(fx.clients);
});

/**
 * Another World instance on the same table (its own writer queue and clients). With
 * `remote`, it ignores the in-process signal, like a World in another process: polling only.
 */
function otherStreamer(clients = createClients(fx.config), remote = false): AwsStreamer {
  extraClients.push(clients);
  return createStreamer(createContext(fx.config, clients), { inProcessSignal: !remote });
}
const remoteStreamer = () => otherStreamer(undefined, true);

async function readAll(
  stream: ReadableStream<Uint8Array>,
  opts: { slowEvery?: number; stopAfter?: number } = {},
): Promise<string[]> {
  const reader = stream.getReader();
  const out: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out.push(dec.decode(value));
    if (opts.slowEvery && out.length % opts.slowEvery === 0) await new Promise((r) => setTimeout(r, 5));
    if (opts.stopAfter && out.length >= opts.stopAfter) {
      await reader.cancel();
      return out;
    }
  }
}

// Typed by newer @types/node only; present on Node >= 17.3.
const countTimers = () =>
  (process as unknown as { getActiveResourcesInfo(): string[] }).getActiveResourcesInfo().filter((r) => r === 'Timeout')
    .length;

describe('streamer basics', () => {
  it('round-trips strings, bytes, empty and S3-sized chunks; getInfo, list, runId as a Promise', async () => {
    const runId = newRun();
    const s = streamer.streams;
    expect(await s.getInfo(runId, 'out')).toEqual({ tailIndex: -1, done: false });

    const big = new Uint8Array(5000).map((_, i) => i % 256); // over the 1000-byte threshold -> S3
    big[0] = 0;
    await s.write(Promise.resolve(runId) as unknown as string, 'out', 'hello');
    await s.write(runId, 'out', new Uint8Array([0, 1, 2, 0]));
    await s.write(runId, 'out', '');
    await s.writeMulti!(runId, 'out', ['a', big, 'b']);
    await s.write(runId, 'tools/x', 'other stream, slash in name');
    expect(await s.getInfo(runId, 'out')).toEqual({ tailIndex: 5, done: false });
    await s.close(runId, 'out');
    await s.close(runId, 'out'); // idempotent
    await s.write(runId, 'out', 'after close'); // dropped: post-EOF data is never visible
    expect(await s.getInfo(runId, 'out')).toEqual({ tailIndex: 5, done: true });

    const page = await s.getChunks(runId, 'out');
    expect(page.data.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(page.data[1].data).toEqual(new Uint8Array([0, 1, 2, 0]));
    expect(page.data[2].data.byteLength).toBe(0);
    expect(new Uint8Array(page.data[4].data)).toEqual(big);
    expect(page).toMatchObject({ hasMore: false, done: true, cursor: null });

    // The live read replays history, skips the empty chunk and ends at EOF.
    const reader = (await s.get(runId, 'out')).getReader();
    const got: Uint8Array[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) got.push(r.value);
    expect(got.map((b) => b.byteLength)).toEqual([5, 4, 1, 5000, 1]);
    expect(new Uint8Array(got[3])).toEqual(big);

    expect((await s.list(runId)).sort()).toEqual(['out', 'tools/x']);
    expect(await s.list(newRun())).toEqual([]);
  });

  it('live-reads many S3-offloaded chunks in order (fetched a few per pull)', async () => {
    const runId = newRun();
    const chunks = Array.from({ length: 20 }, (_, i) => `${i}:`.padEnd(1500, String.fromCharCode(65 + i)));
    const reading = readAll(await streamer.streams.get(runId, 'big'));
    await streamer.streams.writeMulti!(runId, 'big', chunks);
    await streamer.streams.close(runId, 'big');
    expect(await reading).toEqual(chunks);
  });

  it('keeps call order for overlapping writes (not awaited between calls)', async () => {
    const runId = newRun();
    const s = streamer.streams;
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 60; i++) {
      pending.push(i % 3 === 0 ? s.writeMulti!(runId, 'o', [`${i}a`, `${i}b`]) : s.write(runId, 'o', `${i}`));
    }
    pending.push(s.close(runId, 'o'));
    await Promise.all(pending);
    const expected = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? [`${i}a`, `${i}b`] : [`${i}`])).flat();
    expect(await readAll(await s.get(runId, 'o'))).toEqual(expected);
  });
});

describe('write session', () => {
  it('writes groups in sequence, skips a retried prefix, refuses a hole, closes the stream', async () => {
    const runId = newRun();
    const session = streamer.streams.createWriteSession!(runId, 'sess', { writerId: 'wrtr_test' });
    await session.write(0, ['a', 'b']);
    await session.write(2, ['c']);
    await session.write(1, ['b', 'c', 'd']); // a retry overlapping what is already written
    await expect(session.write(9, ['z'])).rejects.toThrow(/skips ahead/);
    await session.close();
    await session.dispose?.();
    expect(await readAll(await streamer.streams.get(runId, 'sess'))).toEqual(['a', 'b', 'c', 'd']);
    expect(await streamer.streams.getInfo(runId, 'sess')).toEqual({ tailIndex: 3, done: true });
  });

  it('in a burst, a write is stored and delivered at once while its acknowledgement is paced', async () => {
    // A long burst window, so the paced acknowledgement is certainly still pending when the
    // reader in this process has the chunk (published on commit, not on acknowledgement).
    const clients = createClients(fx.config);
    extraClients.push(clients);
    const s = createStreamer(createContext({ ...fx.config, streamBurstMs: 5000 }, clients));
    const runId = newRun();
    const reader = (await s.streams.get(runId, 'paced')).getReader();
    const session = s.streams.createWriteSession!(runId, 'paced', { writerId: 'wrtr_paced' });
    await session.write(0, ['a']); // after quiet: acknowledged once durable
    await session.write(1, ['b']); // a burst's second write: acknowledged once durable too
    let acked = false;
    const third = session.write(2, ['c']).then(() => {
      acked = true;
    });
    expect(dec.decode((await reader.read()).value)).toBe('a');
    expect(dec.decode((await reader.read()).value)).toBe('b');
    expect(dec.decode((await reader.read()).value)).toBe('c');
    // Committed (a Query sees it) and delivered from memory, while the writer is still held.
    expect(await s.streams.getInfo(runId, 'paced')).toEqual({ tailIndex: 2, done: false });
    expect(acked).toBe(false);
    // The paced block tells pollers elsewhere when the writer's next block is due; the blocks
    // acknowledged at once (after quiet, and a burst's second) carry no such hint.
    const blocks = (await new StreamQueries(clients.ddb, fx.config.tableName).blocksFrom(runId, 'paced', 0)).blocks;
    expect(blocks.map((b) => [b.first, b.nextAt === undefined])).toEqual([
      [0, true],
      [1, true],
      [2, false],
    ]);
    await third;
    await session.close();
    expect((await reader.read()).done).toBe(true);
    await s.close();
  });
});

describe('concurrency', () => {
  it('4 concurrent writers x 500 chunks: every chunk exactly once, in index order, for every reader', async () => {
    const runId = newRun();
    const name = 'tokens';
    const writers = [streamer, otherStreamer(), otherStreamer(), remoteStreamer()];
    const PER = 500;

    const early = readAll(await streamer.streams.get(runId, name)); // same process as writer 0
    const remote = readAll(await writers[3].streams.get(runId, name)); // polling only
    const slow = readAll(await streamer.streams.get(runId, name), { slowEvery: 25 });
    const cancelling = readAll(await streamer.streams.get(runId, name), { stopAfter: 100 });
    let midStream: Promise<string[]> | undefined;

    await Promise.all(
      writers.map(async (w, wi) => {
        for (let i = 0; i < PER; ) {
          const batch: Promise<void>[] = [];
          // A burst of un-awaited writes, then a writeMulti, then wait for the burst.
          for (let k = 0; k < 5 && i < PER; k++, i++) batch.push(w.streams.write(runId, name, `w${wi}:${i}`));
          const multi: string[] = [];
          for (let k = 0; k < 7 && i < PER; k++, i++) multi.push(`w${wi}:${i}`);
          if (multi.length) batch.push(w.streams.writeMulti!(runId, name, multi));
          await Promise.all(batch);
          if (wi === 0 && i >= PER / 2 && !midStream) midStream = readAll(await streamer.streams.get(runId, name));
        }
      }),
    );
    await streamer.streams.close(runId, name);

    const all: string[] = [];
    for (let cursor: string | null | undefined; ; ) {
      const page = await streamer.streams.getChunks(runId, name, { limit: 1000, cursor: cursor ?? undefined });
      for (const c of page.data) {
        expect(c.index).toBe(all.length);
        all.push(dec.decode(c.data));
      }
      if (!page.hasMore) {
        expect(page.done).toBe(true);
        break;
      }
      cursor = page.cursor;
    }
    expect(all).toHaveLength(4 * PER);
    // The writers really interleaved (concurrent block claims), not ran one after another: the
    // writer changes along the stream more often than the 3 times back-to-back runs would give.
    // (How soon the first switch comes depends on scheduling, so only the count is asserted.)
    const switches = all.filter((c, i) => i > 0 && c.split(':')[0] !== all[i - 1].split(':')[0]).length;
    expect(switches).toBeGreaterThan(3);
    expect(new Set(all).size).toBe(4 * PER);
    for (let wi = 0; wi < 4; wi++) {
      const mine = all.filter((c) => c.startsWith(`w${wi}:`));
      expect(mine).toEqual(Array.from({ length: PER }, (_, i) => `w${wi}:${i}`));
    }
    expect(await early).toEqual(all);
    expect(await remote).toEqual(all);
    expect(await slow).toEqual(all);
    expect(await midStream).toEqual(all);
    expect(await cancelling).toEqual(all.slice(0, 100));
    expect(await streamer.streams.getInfo(runId, name)).toEqual({ tailIndex: 4 * PER - 1, done: true });
  });
});

describe('live reads', () => {
  it('starts from a negative startIndex and follows the tail until close', async () => {
    const runId = newRun();
    const s = streamer.streams;
    await s.writeMulti!(
      runId,
      'n',
      Array.from({ length: 20 }, (_, i) => `c${i}`),
    );
    const tail = readAll(await s.get(runId, 'n', -3));
    const clamped = readAll(await s.get(runId, 'n', -500));
    await s.write(runId, 'n', 'c20');
    await s.write(runId, 'n', 'c21');
    await s.close(runId, 'n');
    expect(await tail).toEqual(['c17', 'c18', 'c19', 'c20', 'c21']);
    expect(await clamped).toHaveLength(22);
    // Reading a finished stream from the end returns nothing and ends at once.
    expect(await readAll(await s.get(runId, 'n', 22))).toEqual([]);
  });

  it('close ends a reader that is waiting on an idle (or not yet created) stream', async () => {
    const runId = newRun();
    const local = readAll(await streamer.streams.get(runId, 'idle'));
    const remote = readAll(await remoteStreamer().streams.get(runId, 'idle'));
    await new Promise((r) => setTimeout(r, 150)); // let both back off to the idle interval
    await streamer.streams.write(runId, 'idle', 'only');
    await remoteStreamer().streams.close(runId, 'idle'); // closed from "another process"
    expect(await local).toEqual(['only']);
    expect(await remote).toEqual(['only']);
  });

  it('cancel releases the poller: no reader, listener or timer left running', async () => {
    const runId = newRun();
    await streamer.streams.write(runId, 'c', 'x');
    const readersBefore = activeStreamReaders();
    const timersBefore = countTimers();

    // Cancel while parked between polls, and while the first query is in flight.
    const a = (await streamer.streams.get(runId, 'c', 1)).getReader();
    const pendingRead = a.read();
    await new Promise((r) => setTimeout(r, 50));
    expect(activeStreamReaders()).toBe(readersBefore + 1);
    await a.cancel();
    expect(await pendingRead).toEqual({ done: true, value: undefined });
    const b = await streamer.streams.get(runId, 'c', 1);
    await b.cancel();

    expect(activeStreamReaders()).toBe(readersBefore);
    expect(streamSignalListeners()).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(countTimers()).toBeLessThanOrEqual(timersBefore);
  });

  it('World close ends its live readers with an error and releases them', async () => {
    const own = otherStreamer();
    const runId = newRun();
    const reading = readAll(await own.streams.get(runId, 'w'));
    const write = own.streams.write(runId, 'w', 'queued before close');
    await own.close();
    await write;
    await expect(reading).rejects.toThrow(/World was closed/);
    expect(activeStreamReaders()).toBe(0);
  });
});

describe('getChunks', () => {
  it('paginates with a cursor (default 100, max 1000) and reports done only at EOF', async () => {
    const runId = newRun();
    const s = streamer.streams;
    await s.writeMulti!(
      runId,
      'p',
      Array.from({ length: 250 }, (_, i) => `${i}`),
    );
    const p1 = await s.getChunks(runId, 'p');
    expect(p1.data.map((c) => c.index)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(p1).toMatchObject({ hasMore: true, done: false });
    const p2 = await s.getChunks(runId, 'p', { cursor: p1.cursor! });
    expect(p2.data[0].index).toBe(100);
    expect(p2.hasMore).toBe(true);
    const p3 = await s.getChunks(runId, 'p', { cursor: p2.cursor! });
    expect(p3.data.map((c) => c.index)).toEqual(Array.from({ length: 50 }, (_, i) => 200 + i));
    // Live stream: nothing more yet, but the cursor resumes once more chunks land.
    expect(p3).toMatchObject({ hasMore: false, done: false });
    expect(p3.cursor).not.toBeNull();
    await s.write(runId, 'p', 'late');
    await s.close(runId, 'p');
    const p4 = await s.getChunks(runId, 'p', { cursor: p3.cursor! });
    expect(p4.data.map((c) => [c.index, dec.decode(c.data)])).toEqual([[250, 'late']]);
    expect(p4).toMatchObject({ hasMore: false, done: true, cursor: null });

    const capped = await s.getChunks(runId, 'p', { limit: 5000 });
    expect(capped.data).toHaveLength(251);
    const small = await s.getChunks(runId, 'p', { limit: 250 });
    expect(small).toMatchObject({ hasMore: true, done: false });
    const last = await s.getChunks(runId, 'p', { limit: 250, cursor: small.cursor! });
    expect(last).toMatchObject({ hasMore: false, done: true });
    // A bad cursor is the same 400 WorkflowWorldError the event cursors throw.
    for (const cursor of [
      'not-a-cursor',
      Buffer.from('{"i":-1,"k":0}').toString('base64url'),
      Buffer.from('{"i":1,"k":5}').toString('base64url'),
    ]) {
      const err = await s.getChunks(runId, 'p', { cursor }).catch((e: unknown) => e);
      expect(WorkflowWorldError.is(err)).toBe(true);
      expect(err).toMatchObject({ status: 400, message: expect.stringMatching(/Invalid stream cursor/) });
    }
    await expect(s.get(runId, 'p', Number.NaN)).rejects.toMatchObject({ status: 400 });
  });
});

describe('in-process fast path', () => {
  it("a reader in the writer's process takes committed blocks from memory: one Query (the open) for 60 groups", async () => {
    // Polls every 60 s: anything the reader gets after its first Query came from the bus.
    const slow = { ...fx.config, streamPollMs: 60_000, streamIdlePollMs: 60_000 };
    const clients = createClients(fx.config);
    extraClients.push(clients);
    const queries: string[] = [];
    clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        queries.push(String((context as { commandName?: string }).commandName));
        return next(args);
      },
      { step: 'initialize', name: 'countReaderRequests' },
    );
    const reader = createStreamer(createContext(slow, clients));
    const runId = newRun();
    const reading = readAll(await reader.streams.get(runId, 'mem'));
    const expected: string[] = [];
    for (let g = 0; g < 60; g++) {
      const group = [`${g}a`, `${g}b`, `${g}c`];
      expected.push(...group);
      await streamer.streams.writeMulti!(runId, 'mem', group);
    }
    await streamer.streams.close(runId, 'mem');
    expect(await reading).toEqual(expected);
    expect(queries).toEqual(['QueryCommand']);
    await reader.close();
  });
});

describe('leaks', () => {
  it('no live reader is left once every test is done', () => {
    expect(activeStreamReaders()).toBe(0);
    expect(streamSignalListeners()).toBe(0);
  });
});
