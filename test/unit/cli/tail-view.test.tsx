/**
 * The live tail view's layout (src/cli/tail-view.tsx), rendered with ink-testing-library from
 * records as the follow loop produces them: at 80×24 every line fits the width with the time and
 * data columns intact, the view stays under the terminal height, and the newest of everything
 * (last events, each stream's last lines) stays visible.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import type { TailRow } from '../../../src/cli/tail-rows.js';
import { emptyTailState, eventColumns, reduceTail, TailView, tailLayout } from '../../../src/cli/tail-view.js';

const RUN = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
const t0 = Date.parse('2026-12-01T10:00:00.000Z');
const ulid = (i: number) => `01KB2Z3Y4X5W6V7T8S9R0Q${String(i).padStart(4, '0')}`;

/** A run with `events` events (steps with their ids), `steps` steps and a stream of `chunks` chunks. */
function state(opts: { events: number; steps: number; chunks: number; status?: 'running' | 'completed' }) {
  const recs: TailRow[] = [
    {
      kind: 'run',
      runId: RUN,
      workflowName: 'workflow//./workflows/forecast//forecastDemo',
      status: opts.status ?? 'completed',
      createdAt: new Date(t0).toISOString(),
      startedAt: new Date(t0).toISOString(),
      ...(opts.status === 'running' ? {} : { completedAt: new Date(t0 + 4200).toISOString(), durationMs: 4200 }),
    },
  ];
  for (let i = 1; i <= opts.events; i++)
    recs.push({
      kind: 'event',
      runId: RUN,
      slot: i,
      eventId: `evnt_${i}`,
      eventType: i % 2 ? 'step_started' : 'step_completed',
      correlationId: `step_${ulid(i)}`,
      stepName: 'step//./workflows/forecast//fetchForecastForCity',
      createdAt: new Date(t0 + i * 10).toISOString(),
      preview: `result={"city":"Lisbon","tempC":${i},"summary":"sunny with a light breeze"} #${i}`,
    });
  for (let i = 1; i <= opts.steps; i++)
    recs.push({
      kind: 'step',
      runId: RUN,
      stepId: `step_${ulid(i)}`,
      stepName: 'step//./workflows/forecast//fetchForecastForCity',
      status: 'completed',
      attempt: 1,
      durationMs: 120,
    });
  if (opts.chunks > 0) recs.push({ kind: 'stream', runId: RUN, stream: 'default', done: false });
  for (let i = 1; i <= opts.chunks; i++)
    recs.push({
      kind: 'chunk',
      runId: RUN,
      stream: 'default',
      index: i - 1,
      bytes: 20,
      text: `chunk ${i} of ${opts.chunks}\n`,
    });
  recs.push({ kind: 'stream', runId: RUN, stream: 'default', done: true });
  return { ...recs.reduce(reduceTail, emptyTailState()), finished: true };
}

function frame(s: ReturnType<typeof state>, columns: number, rows: number): string[] {
  const view = render(<TailView runId={RUN} state={s} now={t0 + 5000} columns={columns} rows={rows} follow />);
  const out = view.lastFrame() ?? '';
  view.unmount();
  return out.split('\n');
}

describe('tail view at 80×24', () => {
  it('fits 80 columns with the time column whole and the data shown', () => {
    const lines = frame(state({ events: 6, steps: 2, chunks: 1 }), 80, 24);
    for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(80);
    const event = lines.find((l) => /^\s+3 step_started/.test(l)) ?? '';
    expect(event).toMatch(/ fetchForeca… \d\d:\d\d:\d\d\.\d{3} result=\{"city":"Lis/);
    // The id is cut from the left: its unique tail stays.
    expect(event).toContain(`…${ulid(3).slice(-11)}`);
    expect(lines.some((l) => /^fetchForecastForCity\s+…\S+\s+completed\s+1\s+120ms/.test(l))).toBe(true);
  });

  it('keeps the end visible when the run is taller than the terminal', () => {
    const lines = frame(state({ events: 40, steps: 12, chunks: 9 }), 80, 24);
    expect(lines.length).toBeLessThanOrEqual(23);
    expect(lines[0]).toMatch(/^run wrun_/);
    expect(lines.some((l) => /^\s+40 step_completed /.test(l))).toBe(true);
    expect(lines.join('\n')).toContain('chunk 9 of 9');
    expect(lines.join('\n')).toMatch(/… \d+ earlier events/);
    expect(lines.join('\n')).toMatch(/… \d+ earlier lines/);
  });

  it('shows every chunk of a short stream (4 chunks at 160×30)', () => {
    const lines = frame(state({ events: 30, steps: 3, chunks: 4 }), 160, 30);
    expect(lines.length).toBeLessThanOrEqual(29);
    for (let i = 1; i <= 4; i++) expect(lines).toContain(`  chunk ${i} of 4`);
  });

  it('a running run keeps the follow hint on screen', () => {
    const s = { ...state({ events: 50, steps: 4, chunks: 2, status: 'running' }), finished: false };
    const lines = frame(s, 80, 24);
    expect(lines.length).toBeLessThanOrEqual(23);
    expect(lines.at(-1)).toContain('following… (Ctrl-C to stop)');
  });

  it('the header of a running run says what it waits for on a line of its own, the hook token whole', () => {
    const s = { ...state({ events: 3, steps: 1, chunks: 0, status: 'running' }), finished: false };
    const waiting = ['hook approval-42', 'wait until 2026-12-01T11:00:00.000Z'];
    const run = { ...s.run!, waiting };
    const wide = frame({ ...s, run }, 160, 24);
    const at = wide.findIndex((l) => l.startsWith('status running'));
    expect(wide[at]).not.toContain('waiting');
    expect(wide[at + 1]).toBe('waiting for hook approval-42; wait until 2026-12-01T11:00:00.000Z');
    expect(frame(s, 160, 24).some((l) => l.includes('waiting for'))).toBe(false);

    // 80 columns: the status line is as long as before, and the long token wraps, never cut.
    const token = 'approval-order-2026-12-01-customer-4711-line-3';
    const narrow = frame({ ...s, run: { ...run, waiting: [`hook ${token}`, ...waiting] } }, 80, 24);
    const n = narrow.findIndex((l) => l.startsWith('status running'));
    expect(narrow[n + 1]).toBe(`waiting for hook ${token};`);
    expect(narrow[n + 2]).toBe('hook approval-42; wait until 2026-12-01T11:00:00.000Z');
    for (const l of narrow) expect(l.length).toBeLessThanOrEqual(80);
    expect(narrow.length).toBeLessThanOrEqual(23);

    // Many things waited for: at most three lines, the last one says there is more.
    const many = Array.from({ length: 40 }, (_, i) => `step fetchForecastForCity${i} (queued)`);
    const crowded = frame({ ...s, run: { ...run, waiting: many } }, 80, 24);
    const c = crowded.findIndex((l) => l.startsWith('status running'));
    expect(crowded[c + 3]).toMatch(/ …$/);
    expect(crowded[c + 4]).toBe('');
    expect(crowded.length).toBeLessThanOrEqual(23);
  });
});

describe('tailLayout and eventColumns', () => {
  it('gives the event log what is left, never less than 3 rows while others can shrink', () => {
    const s = state({ events: 100, steps: 20, chunks: 30 });
    const l = tailLayout(s, 24, true);
    expect(l.events).toBeGreaterThanOrEqual(3);
    expect(l.streamLines[0]).toBeGreaterThanOrEqual(2);
    expect(tailLayout(s, Number.POSITIVE_INFINITY, false)).toEqual({ events: 100, steps: 20, streamLines: [30] });
  });

  it('keeps full correlation ids when the terminal is wide, and at least 20 data columns when narrow', () => {
    expect(eventColumns(140)).toMatchObject({ corr: 31, step: 18 });
    expect(eventColumns(80).data).toBeGreaterThanOrEqual(20);
    const c = eventColumns(80);
    expect(c.slot + c.type + c.corr + c.step + c.time + c.data + 5).toBe(80);
  });
});
