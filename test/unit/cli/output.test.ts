/**
 * Tables on a terminal (src/cli/output.ts): the `runs`, `init` and `redrive --stranded` tables fit
 * the terminal width by wrapping cells inside their column, lose no character, and stay as they
 * are when piped (no width).
 */
import { describe, expect, it } from 'vitest';
import { fitColumns, renderTable, wrapCell } from '../../../src/cli/output.js';

const RUN = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
const runsHead = ['Run', 'Workflow', 'Status', 'Started', 'Duration'];
const runsRows = [
  [RUN, 'workflow//./workflows/forecast//forecastDemo', 'completed', '2026-12-01 10:00:00Z', '4.2s'],
  [RUN.replace('Q1', 'Q9'), 'workflow//./workflows/order//placeOrder', 'failed', '2026-12-01 10:01:00Z', '850ms'],
];
const strandedHead = ['Run', 'Workflow', 'Status', 'Last event', 'Verdict', 'Reason', 'Action'];
const strandedRows = [
  [
    RUN,
    'workflow//./workflows/forecast//forecastDemo',
    'running',
    '2026-12-01 10:00:00Z step_started',
    'stranded',
    'no message in flight for the run and its last event is older than the grace period (15m)',
    're-enqueued run message',
  ],
];

/** The cell texts of a rendered table, joined per column, without borders and padding. */
function cells(table: string, columns: number): string[] {
  const out = Array.from({ length: columns }, () => '');
  for (const line of table.split('\n')) {
    if (!line.startsWith('│')) continue;
    const parts = line.split('│').slice(1, -1);
    parts.forEach((p, i) => {
      out[i] += p.trim();
    });
  }
  return out;
}

describe('renderTable', () => {
  it.each([
    ['runs', runsHead, runsRows],
    ['redrive --stranded', strandedHead, strandedRows],
    [
      'init',
      ['Resource', 'Name', 'State', 'Details'],
      [
        [
          'queue',
          'eve-world-demo-queue',
          'present',
          'visibility 30 s; DLQ after 10 receives; SSE on; long polling 20 s',
        ],
      ],
    ],
  ])('%s: fits 80 columns and keeps every character', (_name, head, rows) => {
    const table = renderTable(head, rows, false, 80);
    for (const line of table.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
    const joined = cells(table, head.length).join('|').replace(/\s+/g, '');
    for (const row of rows) for (const c of row) expect(joined).toContain(c.replace(/\s+/g, ''));
  });

  it('a wide terminal or a pipe keeps one line per row', () => {
    for (const width of [400, undefined]) {
      const table = renderTable(runsHead, runsRows, false, width);
      expect(table.split('\n').filter((l) => l.includes(RUN))).toHaveLength(1);
    }
    expect(renderTable(strandedHead, strandedRows, false, undefined).split('\n')[0].length).toBeGreaterThan(200);
  });

  it('fitColumns gives way from the widest column, never below 8 or the heading', () => {
    const w = fitColumns(runsHead, runsRows, 80);
    expect(w.reduce((a, b) => a + b, 0) + w.length + 1).toBeLessThanOrEqual(80);
    expect(w[2]).toBe('completed'.length + 2);
    expect(Math.min(...w)).toBeGreaterThanOrEqual(8);
  });

  it('wrapCell wraps on spaces and splits words longer than the line', () => {
    expect(wrapCell('no message in flight', 10)).toBe('no message\nin flight');
    expect(wrapCell(RUN, 12)).toBe(`${RUN.slice(0, 12)}\n${RUN.slice(12, 24)}\n${RUN.slice(24)}`);
    expect(wrapCell('\u001b[32mcompleted\u001b[39m', 4)).toBe('\u001b[32mcompleted\u001b[39m');
  });
});
