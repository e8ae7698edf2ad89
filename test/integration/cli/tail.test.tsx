/**
 * `eve-world-aws tail` against the emulators: snapshots and live follow through the built CLI
 * (NDJSON parsed back, plain lines), exit codes, and the ink view rendered with
 * ink-testing-library from records the follow loop read from the World.
 */
import { dehydrateRunError } from '@workflow/core/serialization';
import { render } from 'ink-testing-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWorld } from '../../../src/cli/shared/world.js';
import { followRun } from '../../../src/cli/tail-follow.js';
import type { TailRow } from '../../../src/cli/tail-rows.js';
import { emptyTailState, reduceTail, TailView } from '../../../src/cli/tail-view.js';
import { CliProcess, runCli } from '../../helpers/cli.js';
import {
  completeRun,
  createRun,
  ev,
  failRun,
  finishedRun,
  type OpsFixture,
  opsFixture,
  startRun,
  step,
} from '../../helpers/runs.js';

let f: OpsFixture;
let done: string;

beforeAll(async () => {
  // A small offload threshold, so one step result lives in S3.
  f = await opsFixture({}, 'tail', { payloadThresholdBytes: 1000 });
  done = await finishedRun(f.world);
});

afterAll(async () => {
  await f?.close();
});

const parse = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TailRow & Record<string, any>);

async function snapshot(runId: string) {
  const state = { s: emptyTailState() };
  const w = openWorld({ env: f.env, resolvePayloads: false });
  try {
    for await (const rec of followRun(w.world, runId, { follow: false })) state.s = reduceTail(state.s, rec);
  } finally {
    await w.close();
  }
  return state.s;
}

describe('tail (CLI)', () => {
  it('--no-follow --json prints NDJSON records of a finished run and exits 0', async () => {
    const r = await runCli(['tail', done, '--no-follow', '--json'], f.env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const recs = parse(r.stdout);
    const run = recs.find((x) => x.kind === 'run');
    expect(run).toMatchObject({ runId: done, workflowName: 'wf-demo', status: 'completed' });
    expect(typeof run?.durationMs).toBe('number');
    const events = recs.filter((x) => x.kind === 'event');
    expect(events.map((e) => e.eventType)).toEqual([
      'run_created',
      'run_started',
      'step_created',
      'step_started',
      'step_completed',
      'run_completed',
    ]);
    expect(events.map((e) => e.slot)).toEqual([1, 2, 3, 4, 5, 6]);
    const completed = events.find((e) => e.eventType === 'step_completed');
    expect(completed).toMatchObject({ correlationId: 'step_01', stepName: 'add', preview: 'result=6' });
    expect(completed?.data).toEqual({ stepName: 'add', result: { bytes: 7, text: 'devl[6]', value: 6 } });
    expect(recs.filter((x) => x.kind === 'step')).toEqual([
      expect.objectContaining({ stepId: 'step_01', stepName: 'add', status: 'completed', attempt: 1 }),
    ]);
    const chunks = recs.filter((x) => x.kind === 'chunk');
    expect(chunks).toEqual([
      expect.objectContaining({ stream: 'default', index: 0, text: 'hello\n', bytes: 6 }),
      expect.objectContaining({ stream: 'default', index: 1, hex: '000102ff', bytes: 4 }),
    ]);
    expect(recs.filter((x) => x.kind === 'stream')).toEqual([
      expect.objectContaining({ stream: 'default', done: false }),
      expect.objectContaining({ stream: 'default', done: true }),
    ]);
  });

  it('prints plain lines when stdout is not a terminal, and follows a finished run to exit 0 at once', async () => {
    const r = await runCli(['tail', done], f.env);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/\u001b\[/);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^run ${done} workflow=wf-demo deployment=test status=completed started=\\S+ \\S+Z duration=`),
    );
    expect(lines).toContain('[default#0] hello');
    expect(lines).toContain('[default#1] 0x000102ff');
    expect(lines.some((l) => /^#5 step_completed step_01 add \d\d:\d\d:\d\d\.\d{3} result=6$/.test(l))).toBe(true);
    expect(lines).toContain('stream default closed');
  });

  it('shows large values as S3 pointers, and resolves them with --data', async () => {
    const runId = await createRun(f.world, 'wf-big');
    await startRun(f.world, runId);
    await step(f.world, runId, 'step_big', 'big', 'x'.repeat(3000));
    const plain = parse((await runCli(['tail', runId, '--no-follow', '--json'], f.env)).stdout);
    const ptr = plain.find((x) => x.kind === 'event' && x.eventType === 'step_completed');
    expect(ptr?.preview).toMatch(/^result=<s3 runs\/\S+ 3\d\d\d B>$/);
    expect(ptr?.data.result).toEqual({ s3: expect.stringMatching(/^runs\//), size: expect.any(Number) });
    const full = parse((await runCli(['tail', runId, '--no-follow', '--json', '--data'], f.env)).stdout);
    const resolved = full.find((x) => x.kind === 'event' && x.eventType === 'step_completed');
    expect(resolved?.preview).toMatch(/^result="xxxx/);
    expect(resolved?.data.result).toMatchObject({ text: `devl["${'x'.repeat(3000)}"]`, value: 'x'.repeat(3000) });
  });

  it('--since and --stream narrow the output', async () => {
    const runId = await createRun(f.world, 'wf-narrow');
    await startRun(f.world, runId);
    await f.world.streams.write(runId, 'a', 'from a');
    await f.world.streams.write(runId, 'b', 'from b');
    await f.world.streams.close(runId, 'a');
    await f.world.streams.close(runId, 'b');
    await completeRun(f.world, runId);
    const r = await runCli(['tail', runId, '--json', '--since', '2', '--stream', 'b'], f.env);
    expect(r.code).toBe(0);
    const recs = parse(r.stdout);
    expect(recs.filter((x) => x.kind === 'event').map((e) => e.slot)).toEqual([2, 3]);
    expect(recs.filter((x) => x.kind === 'chunk').map((c) => c.text)).toEqual(['from b']);
  });

  it('follows a live run: events and chunks as they land, exit when terminal and streams are closed', async () => {
    const runId = await createRun(f.world, 'wf-live');
    await startRun(f.world, runId);
    const tail = new CliProcess(['tail', runId, '--json', '--interval', '50'], f.env);
    try {
      await tail.waitFor(/"eventType":"run_started"/, 20_000);
      await step(f.world, runId, 'step_a', 'first', 1);
      await f.world.streams.write(runId, 'out', 'tick 1');
      await tail.waitFor(/"text":"tick 1"/, 20_000);
      await completeRun(f.world, runId);
      // Terminal, but the stream is still open: tail keeps waiting for it. (The run record: a step
      // record also says "status":"completed".)
      await tail.waitFor(/"kind":"run"[^\n]*"status":"completed"/, 20_000);
      await f.world.streams.write(runId, 'out', 'tick 2');
      await f.world.streams.close(runId, 'out');
      const exit = await tail.exited;
      expect(exit.code).toBe(0);
      const recs = parse(tail.stdout);
      expect(recs.filter((x) => x.kind === 'event').map((e) => e.eventType)).toEqual([
        'run_created',
        'run_started',
        'step_created',
        'step_started',
        'step_completed',
        'run_completed',
      ]);
      // A run record per change of status or of what the run waits for (here its step, while tail
      // saw it pending): statuses in order, each once; a terminal run waits for nothing.
      const runRecs = recs.filter((x) => x.kind === 'run');
      expect(runRecs.map((x) => x.status).filter((st, i, all) => i === 0 || st !== all[i - 1])).toEqual([
        'running',
        'completed',
      ]);
      expect(runRecs[0].waiting).toEqual([]);
      expect(runRecs[runRecs.length - 1].waiting).toBeUndefined();
      expect(recs.filter((x) => x.kind === 'chunk').map((c) => c.text)).toEqual(['tick 1', 'tick 2']);
      expect(recs.at(-1)).toMatchObject({ kind: 'stream', stream: 'out', done: true });
    } finally {
      tail.kill();
    }
  });

  it('exits 1 when the run failed or for an unknown run id; 2 without a run id', async () => {
    const runId = await createRun(f.world, 'wf-fail');
    await startRun(f.world, runId);
    await failRun(f.world, runId, 'kaboom');
    const failed = await runCli(['tail', runId], f.env);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/status=failed/);
    expect(failed.stderr).toMatch(new RegExp(`error: run ${runId} failed: .*kaboom`));

    const unknown = await runCli(['tail', 'wrun_01JZZZZZZZZZZZZZZZZZZZZZZZ', '--json'], f.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/error: run wrun_01JZZZZZZZZZZZZZZZZZZZZZZZ not found in table /);

    const usage = await runCli(['tail'], f.env);
    expect(usage.code).toBe(2);
  });

  it('shows a compressed failure as the error name and message in tail, tail --data and runs --json', async () => {
    const runId = await createRun(f.world, 'wf-gzip');
    await startRun(f.world, runId);
    // What the runtime stores for a failed run: core's serializer, compressed (gzip forced, as on
    // a Node without zstd), with a stack long enough to pass the 1 KiB threshold.
    const err = new TypeError('card declined');
    err.stack = `TypeError: card declined\n${'    at charge (file:///app/workflows/order.ts:1:1)\n'.repeat(30)}`;
    const codec = process.env.WORKFLOW_COMPRESSION_CODEC;
    process.env.WORKFLOW_COMPRESSION_CODEC = 'gzip';
    const error = await dehydrateRunError(err, runId, undefined, globalThis, true);
    if (codec === undefined) delete process.env.WORKFLOW_COMPRESSION_CODEC;
    else process.env.WORKFLOW_COMPRESSION_CODEC = codec;
    expect(String.fromCharCode(...(error as Uint8Array).subarray(0, 4))).toBe('gzip');
    await ev(f.world, runId, { eventType: 'run_failed', eventData: { error, errorCode: 'USER_ERROR' } });

    const plain = await runCli(['tail', runId], f.env);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain('error="TypeError: card declined"');
    expect(plain.stdout).toMatch(/ run_failed - - \S+ error=TypeError: card declined errorCode=USER_ERROR/);
    expect(plain.stderr).toContain(`run ${runId} failed: TypeError: card declined`);
    expect(plain.stdout).not.toContain('<gzip');

    const data = parse((await runCli(['tail', runId, '--json', '--data'], f.env)).stdout);
    const failed = data.find((x) => x.kind === 'event' && x.eventType === 'run_failed');
    expect(failed?.preview).toBe('error=TypeError: card declined errorCode=USER_ERROR');
    expect(failed?.data.error).toMatchObject({
      format: 'gzip',
      decompressed: { value: { TypeError: { message: 'card declined' } } },
    });

    const runs = JSON.parse((await runCli(['runs', '--json', '--workflow', 'wf-gzip'], f.env)).stdout) as {
      runs: Array<{ runId: string; error?: string }>;
    };
    expect(runs.runs).toEqual([expect.objectContaining({ runId, error: 'TypeError: card declined' })]);
  });

  it('--help documents the options and exit codes', async () => {
    const r = await runCli(['tail', '--help']);
    expect(r.code).toBe(0);
    for (const o of ['--no-follow', '--json', '--since <slot>', '--stream <name>', '--data', 'Exit codes'])
      expect(r.stdout).toContain(o);
  });
});

describe('tail (ink view)', () => {
  it('renders a running run: header, event log, steps table, open stream, follow hint', async () => {
    const runId = await createRun(f.world, 'wf-ink');
    await startRun(f.world, runId);
    await step(f.world, runId, 'step_x', 'fetchData', { ok: true });
    await step(f.world, runId, 'step_y', 'summarize', undefined, false);
    await f.world.streams.write(runId, 'log', 'line one\nline two\n');
    await f.world.streams.write(runId, 'log', new Uint8Array([0xff, 0xfe, 0x00]));
    const state = await snapshot(runId);
    const started = Date.parse(state.run?.startedAt ?? '');
    const { lastFrame, unmount } = render(
      <TailView runId={runId} state={state} now={started + 65_000} columns={140} />,
    );
    const frame = lastFrame() ?? '';
    unmount();
    // The run's deployment (deployment affinity: the build it runs on).
    expect(frame).toContain(`run ${runId} · workflow wf-ink · deployment test`);
    expect(frame).toMatch(/status running · started \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ · duration 1m05s/);
    expect(frame).toMatch(/#\s+event\s+correlation id\s+step\s+time\s+data/);
    expect(frame).toMatch(/ 1 run_created\s+-\s+-\s+\d\d:\d\d:\d\d\.\d{3} .*input=1/);
    expect(frame).toMatch(/ 1 run_created .*deploymentId=test/);
    expect(frame).toMatch(/ 5 step_completed\s+step_x\s+fetchData\s+\S+\s+result=\{"ok":true\}/);
    expect(frame).toMatch(/ 7 step_started\s+step_y\s+summarize/);
    expect(frame).toMatch(/step\s+id\s+status\s+attempt\s+duration/);
    expect(frame).toMatch(/fetchData\s+step_x\s+completed\s+1/);
    expect(frame).toMatch(/summarize\s+step_y\s+running\s+1/);
    expect(frame).toContain('stream log (2 chunks, open)');
    expect(frame).toContain('  line one');
    expect(frame).toContain('  line two');
    expect(frame).toContain('  0xfffe00');
    expect(frame).toContain('following… (Ctrl-C to stop)');
    expect(frame).not.toMatch(/\u001b\[/);
  });

  it('renders a finished run and keeps only the newest events when the screen is short', async () => {
    const state = { ...(await snapshot(done)), finished: true };
    const full = render(<TailView runId={done} state={state} now={Date.now()} />);
    const frame = full.lastFrame() ?? '';
    full.unmount();
    expect(frame).toMatch(/status completed · started \S+ \S+Z · duration \d+ms|duration \d+\.\ds/);
    expect(frame).toContain('run_completed');
    expect(frame).toContain('stream default (2 chunks, closed)');
    expect(frame).not.toContain('following…');

    // Events are appended live: a short terminal shows the tail of the log and how much is hidden.
    const many = Array.from({ length: 30 }, (_, i) => i).reduce(
      (s, i) =>
        reduceTail(s, {
          kind: 'event',
          runId: done,
          slot: 7 + i,
          eventId: `x${i}`,
          eventType: 'attr_set',
          createdAt: new Date().toISOString(),
          preview: `n=${i}`,
        }),
      state,
    );
    const short = render(<TailView runId={done} state={many} now={Date.now()} rows={24} />);
    const s = short.lastFrame() ?? '';
    short.unmount();
    expect(s).toMatch(/… \d+ earlier events/);
    expect(s).toContain('n=29');
    expect(s).not.toContain('run_created');
    expect(s.split('\n').length).toBeLessThanOrEqual(24);
  });

  it('colours statuses only when asked (the CLI asks only on a colour TTY)', async () => {
    const state = await snapshot(done);
    const plain = render(<TailView runId={done} state={state} now={Date.now()} color={false} />);
    expect(plain.lastFrame()).not.toMatch(/\u001b\[/);
    plain.unmount();
  });
});
