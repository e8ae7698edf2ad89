/**
 * A live stream ends when its run ends (src/streams/live.ts, "The end of a run"): through the real
 * core on both ends, `run.getReadable()` in the README's `for await` loop ends when the run is
 * cancelled mid-stream or completes without closing its stream, though no writer wrote the EOF.
 * The reader says why (one log line naming the run and its status), and a writer still writing
 * just after the run ended loses nothing, whatever the reader's clock says (skewed +5 s, +60 s,
 * -60 s from the writer's).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { start } from 'workflow/api';
import { END_GRACE_MS } from '../../../src/streams/live.js';
import { type E2e, startE2e } from '../../helpers/e2e.js';
import { createRun, ev, startRun } from '../../helpers/runs.js';

const here = path.dirname(fileURLToPath(import.meta.url));
let e2e: E2e;
const logged: string[] = [];

beforeAll(async () => {
  const { buildE2eApp } = (await import(path.join(here, '../../e2e/build.mjs'))) as { buildE2eApp(): Promise<string> };
  await buildE2eApp(); // no-op when the bundle is fresh
  e2e = await startE2e();
  vi.spyOn(console, 'info').mockImplementation((line: unknown) => void logged.push(String(line)));
});

afterAll(async () => {
  vi.restoreAllMocks();
  await e2e?.close();
});

const wf = (name: string) => {
  const meta = e2e.workflows[name];
  if (!meta) throw new Error(`workflow ${name} is not in the manifest`);
  return meta as never;
};

/** The README's `for await` loop, written with a reader (the DOM lib's async iterator is not typed here). */
async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

const text = (v: unknown) => (typeof v === 'string' ? v : new TextDecoder().decode(v as Uint8Array));

describe('a live stream ends with its run', () => {
  it('run.getReadable() ends when the run is cancelled mid-stream', async () => {
    const token = `stream-end-${Date.now()}`;
    const run = await start(wf('streamThenHook'), [token, 'hello']);
    const got: string[] = [];
    let cancelled: Promise<void> | undefined;
    // The README's loop: it must end by itself, with what was written before the cancel.
    for await (const chunk of chunksOf(run.getReadable<Uint8Array>())) {
      got.push(text(chunk));
      cancelled ??= run.cancel(); // what `wf cancel` and `eve-world-aws cancel` do
    }
    await cancelled;
    expect(got).toEqual(['hello']);
    expect(await run.status).toBe('cancelled');
    const name = (await e2e.world.streams.list(run.runId))[0];
    expect(await e2e.world.streams.getInfo(run.runId, name)).toEqual({ tailIndex: 0, done: true });
    expect(logged.some((l) => l.includes(run.runId) && l.includes('(cancelled)'))).toBe(true);
  });

  it('run.getReadable() ends when the run completed without closing its stream', async () => {
    const run = await start(wf('streamLeftOpen'), ['bye']);
    expect(await run.returnValue).toBe('bye');
    const got: string[] = [];
    for await (const chunk of chunksOf(run.getReadable<Uint8Array>())) got.push(text(chunk));
    expect(got).toEqual(['bye']);
    expect(logged.some((l) => l.includes(run.runId) && l.includes('(completed)'))).toBe(true);
  });

  it('a chunk written just after the run ended is still delivered before the end', async () => {
    const { world } = e2e;
    const runId = await createRun(world, 'wf-stream-end');
    await startRun(world, runId);
    await world.streams.write(runId, 'out', 'a');
    const reader = (await world.streams.get(runId, 'out')).getReader();
    expect(text((await reader.read()).value)).toBe('a');
    await ev(world, runId, { eventType: 'run_cancelled' });
    // A step still finishing after the cancel: its write lands inside the grace, after the idle
    // reader has seen the run end (it reads the run after ACTIVE_MS = 1 s idle), then it stops.
    // Without the grace the reader would have sealed the stream and this chunk would be dropped.
    await new Promise((resolve) => setTimeout(resolve, END_GRACE_MS / 2));
    await world.streams.write(runId, 'out', 'late');
    expect(text((await reader.read()).value)).toBe('late');
    expect((await reader.read()).done).toBe(true);
    expect(await world.streams.getInfo(runId, 'out')).toEqual({ tailIndex: 1, done: true });
  });

  // The reader's clock skewed from the run's writer's (which stamped its end): the grace runs from
  // when the reader saw the end, on its own clock, so no chunk written within it is lost (a reader
  // 5 s or more ahead used to seal about 1 s after the end) and a reader behind is not held longer.
  it.each([
    ['5 s ahead', 5_000],
    ['60 s ahead', 60_000],
    ['60 s behind', -60_000],
  ])(
    'a reader whose clock is %s still delivers a chunk written within the grace, then ends',
    async (_name, skewMs) => {
      const { world } = e2e;
      const runId = await createRun(world, 'wf-stream-skew');
      await startRun(world, runId);
      await world.streams.write(runId, 'out', 'a');
      const reader = (await world.streams.get(runId, 'out')).getReader();
      expect(text((await reader.read()).value)).toBe('a');
      await ev(world, runId, { eventType: 'run_cancelled' }); // stamped on the real clock
      const realNow = Date.now.bind(Date);
      const skewed = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs);
      try {
        const next = reader.read();
        // Written late in the grace: the idle reader has seen the run end well before (after ~1 s).
        await new Promise((resolve) => setTimeout(resolve, END_GRACE_MS - 1000));
        await world.streams.write(runId, 'out', 'late');
        expect(text((await next).value)).toBe('late');
        expect((await reader.read()).done).toBe(true);
      } finally {
        skewed.mockRestore();
      }
      expect(await world.streams.getInfo(runId, 'out')).toEqual({ tailIndex: 1, done: true });
    },
    30_000,
  );

  it('a stream its writer closed ends at that EOF, with nothing logged', async () => {
    const { world } = e2e;
    const runId = await createRun(world, 'wf-stream-end');
    await startRun(world, runId);
    await world.streams.write(runId, 'out', 'a');
    await world.streams.close(runId, 'out');
    const got: string[] = [];
    for await (const chunk of chunksOf(await world.streams.get(runId, 'out'))) got.push(text(chunk));
    expect(got).toEqual(['a']);
    expect(logged.some((l) => l.includes(runId))).toBe(false);
    expect((await world.runs.get(runId)).status).toBe('running');
  });
});
