/**
 * Streams through the real core on both ends: a compiled workflow step writes through
 * `getWritable()` (core's group-committing writer), the caller reads with `run.getReadable()`
 * (core's reconnecting reader, which trusts `getInfo().tailIndex` to decide that it has every
 * chunk). The response of the step's first stream write is lost and the SDK retries it. Before
 * #16 that retry reserved a second block of indices, `tailIndex` counted the burned ones, and
 * core's reader reconnected and delivered chunks twice (c0,c1,c2,c3,c1,c2,c3).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { type E2e, startE2e } from '../../helpers/e2e.js';

const here = path.dirname(fileURLToPath(import.meta.url));
let e2e: E2e;
let tokenStream: { workflowId: string };
/** Stream PutItem responses to drop (1-based ordinal among stream puts since the last reset). */
const drop = { targets: new Set<number>(), seen: 0, dropped: 0 };

beforeAll(async () => {
  const { buildE2eApp } = (await import(path.join(here, '../../e2e/build.mjs'))) as { buildE2eApp(): Promise<string> };
  await buildE2eApp(); // no-op when the bundle is fresh
  e2e = await startE2e();
  const manifest = JSON.parse(
    readFileSync(path.join(here, '../../e2e/app/.well-known/workflow/v1/manifest.json'), 'utf8'),
  );
  tokenStream = manifest.workflows['workflows/tokens.ts'].tokenStream;
  e2e.fixture.clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input: { Item?: { PK?: { S?: string } } } }).input;
      const isStreamPut =
        (context as { commandName?: string }).commandName === 'PutItemCommand' &&
        input.Item?.PK?.S?.startsWith('STREAM#');
      if (!isStreamPut || !drop.targets.has(++drop.seen)) return next(args);
      await next(args).catch(() => undefined); // applied by DynamoDB; only the answer is lost
      drop.dropped++;
      throw Object.assign(new Error('socket hang up (response dropped by the test)'), {
        name: 'TimeoutError',
        code: 'ECONNRESET',
        $metadata: {},
      });
    },
    { step: 'deserialize', name: 'dropStreamPutResponse', priority: 'high' },
  );
});

afterAll(async () => {
  await e2e?.close();
});

async function readThroughCore(run: { getReadable<T>(): ReadableStream<T> }): Promise<number[]> {
  const reader = run.getReadable<Uint8Array>().getReader();
  const got: number[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return got;
    const text = typeof value === 'string' ? value : new TextDecoder().decode(value);
    got.push((JSON.parse(text) as { i: number }).i);
  }
}

describe("core's writer and reader over eve-world-aws", () => {
  for (const [label, targets] of [
    ['no fault', []],
    ['the first stream put answer is lost', [1]],
    ['every other stream put answer is lost', [1, 3, 5, 7, 9, 11]],
  ] as const) {
    it(`4 chunks, ${label}: read back exactly c0,c1,c2,c3`, async () => {
      drop.targets = new Set(targets);
      drop.seen = 0;
      drop.dropped = 0;
      const run = await start(tokenStream, [4, 0]);
      expect(await run.returnValue).toBe(4);
      expect(await readThroughCore(run)).toEqual([0, 1, 2, 3]);
      expect(drop.dropped).toBe(targets.filter((t) => t <= drop.seen).length);
      if (targets.length > 0) expect(drop.dropped).toBeGreaterThan(0);
      const name = (await e2e.world.streams.list(run.runId))[0];
      expect(await e2e.world.streams.getInfo(run.runId, name)).toEqual({ tailIndex: 3, done: true });
    });
  }

  it('50 chunks written while core reads them live: each exactly once, in order', async () => {
    drop.targets = new Set([2, 4]);
    drop.seen = 0;
    drop.dropped = 0;
    const run = await start(tokenStream, [50, 2]);
    const got = await readThroughCore(run);
    expect(await run.returnValue).toBe(50);
    expect(got).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});
