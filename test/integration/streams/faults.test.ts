/**
 * Streams under lost responses. SDK middleware below the retry layer lets a stream request reach
 * DynamoDB Local, discards the response and throws a retryable network error, so the SDK sends
 * the same request again (exactly what a response lost on the wire does). Each stream call is
 * dropped in turn; the readers must get every chunk exactly once, in order, and the table must
 * hold exactly one block per group (a retried write never allocates a second block).
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import { keys } from '../../../src/schema/keys.js';
import { type AwsStreamer, activeStreamReaders, createStreamer } from '../../../src/streams/index.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';

const dec = new TextDecoder();
let fx: Fixture;
let seq = 0;
const newRun = () => `wrun_fault${Date.now()}${seq++}`;

/** Drops the response of the `target`-th stream request of kind `command` (1-based). */
interface Dropper {
  command?: string;
  target: number;
  seen: Record<string, number>;
  dropped: number;
}

function streamKeyOf(input: Record<string, any>): string | undefined {
  // A put names its key; a Query's partition key is one of its values.
  const values = Object.values(input.ExpressionAttributeValues ?? {}) as Array<{ S?: string }>;
  return input.Item?.PK?.S ?? values.find((v) => v.S?.startsWith('STREAM#'))?.S;
}

function faultyClients(dropper: Dropper): AwsClients {
  const clients = createClients(fx.config);
  clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String((context as { commandName?: string }).commandName).replace(/Command$/, '');
      const input = (args as { input: Record<string, any> }).input;
      const isStream = streamKeyOf(input)?.startsWith('STREAM#') ?? false;
      if (!isStream || command !== dropper.command) return next(args);
      dropper.seen[command] = (dropper.seen[command] ?? 0) + 1;
      if (dropper.seen[command] !== dropper.target) return next(args);
      await next(args).catch(() => undefined); // the request reached DynamoDB and was applied
      dropper.dropped++;
      throw Object.assign(new Error('socket hang up (response dropped by the test)'), {
        name: 'TimeoutError',
        code: 'ECONNRESET',
        $metadata: {},
      });
    },
    // Below the SDK's retry middleware (finalizeRequest), so the SDK retries the dropped call.
    { step: 'deserialize', name: 'dropOneStreamResponse', priority: 'high' },
  );
  return clients;
}

beforeAll(async () => {
  fx = await createFixture({}, 'sflt', { streamPollMs: 10, streamIdlePollMs: 50 });
});

afterAll(() => {
  if (fx) destroyClients(fx.clients);
});

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  const reader = stream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(dec.decode(r.value));
  return out;
}

/** The block items of a stream, read without faults: [first index, chunk count | 'eof']. */
async function blocks(runId: string, name: string): Promise<[number, number | 'eof'][]> {
  const out = await fx.clients.ddb.send(
    new QueryCommand({
      TableName: fx.config.tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': { S: keys.stream(runId, name) } },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map((it) => [
    keys.indexFromChunkSk(it.SK.S as string),
    it.eof?.BOOL ? 'eof' : (it.c?.L?.length ?? 0),
  ]);
}

/**
 * Two writers (the second is another World instance, so its first put collides and it reads the
 * tail), a polling reader and an in-process reader on the faulty clients, one bus-less reader on
 * clean clients. Expected layout: [0,3] [3,1] [4,2] [6,2] [8,eof].
 */
async function scenario(dropper: Dropper) {
  const clients = faultyClients(dropper);
  const a: AwsStreamer = createStreamer(createContext(fx.config, clients));
  const b: AwsStreamer = createStreamer(createContext(fx.config, clients), { inProcessSignal: false });
  const remote: AwsStreamer = createStreamer(createContext(fx.config, clients), { inProcessSignal: false });
  const runId = newRun();
  const name = 'tokens';
  try {
    const local = readAll(await a.streams.get(runId, name));
    const polling = readAll(await remote.streams.get(runId, name));
    await a.streams.writeMulti!(runId, name, ['c0', 'c1', 'c2']);
    await a.streams.write(runId, name, 'c3');
    await a.streams.writeMulti!(runId, name, ['c4', 'c5']);
    await b.streams.writeMulti!(runId, name, ['c6', 'c7']);
    await a.streams.close(runId, name);
    const all = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'];
    expect(await local).toEqual(all);
    expect(await polling).toEqual(all);
    expect(await readAll(await remote.streams.get(runId, name, 2))).toEqual(all.slice(2));
    expect(await a.streams.getInfo(runId, name)).toEqual({ tailIndex: 7, done: true });
    const page = await b.streams.getChunks(runId, name);
    expect(page.data.map((c) => [c.index, dec.decode(c.data)])).toEqual(all.map((c, i) => [i, c]));
    expect(page).toMatchObject({ done: true, hasMore: false });
    expect(await blocks(runId, name)).toEqual([
      [0, 3],
      [3, 1],
      [4, 2],
      [6, 2],
      [8, 'eof'],
    ]);
  } finally {
    for (const s of [a, b, remote]) await s.close();
    destroyClients(clients);
  }
}

describe('lost responses on every stream call', () => {
  it('counts the stream calls of the scenario without faults', async () => {
    const dropper: Dropper = { target: 0, seen: {}, dropped: 0 };
    await scenario(dropper);
    expect(dropper.dropped).toBe(0);
  });

  // 5 block puts (4 data groups + EOF), plus b's first put that collides at 0.
  for (let n = 1; n <= 6; n++) {
    it(`PutItem #${n}: its response is lost and the SDK retries it`, async () => {
      const dropper: Dropper = { command: 'PutItem', target: n, seen: {}, dropped: 0 };
      await scenario(dropper);
      expect(dropper.dropped).toBe(1);
    });
  }

  // Query #1..#4 cover the readers' first polls and the second writer's tail read.
  for (let n = 1; n <= 4; n++) {
    it(`Query #${n}: its response is lost and the SDK retries it`, async () => {
      const dropper: Dropper = { command: 'Query', target: n, seen: {}, dropped: 0 };
      await scenario(dropper);
      expect(dropper.dropped).toBe(1);
    });
  }

  it('leaves no live reader behind', () => {
    expect(activeStreamReaders()).toBe(0);
  });
});
