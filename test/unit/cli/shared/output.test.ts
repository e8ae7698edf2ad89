/**
 * Tables and prose on a terminal (src/cli/shared/output.ts, text-table.ts, terminal-text.ts): the tables
 * of `runs`, `redrive`, `init`, `destroy`, `deployments` and `doctor` fit 80 and 120 columns with
 * colours on, lose no character, never split an id or a colour code, and stay as they are when
 * piped (no width). Text from a run cannot move the cursor.
 */
import { describe, expect, it } from 'vitest';
import { fitText, palette, renderTable } from '../../../../src/cli/shared/output.js';
import { displayWidth, sanitize, stripColor, wrapText } from '../../../../src/cli/shared/terminal-text.js';
import { planTable } from '../../../../src/cli/shared/text-table.js';

const RUN = 'wrun_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
const MSG = 'msg_01KB2Z3Y4X5W6V7T8S9R0Q1P2N';
const p = palette(true);

const tables: Array<[string, string[], string[][]]> = [
  [
    'runs',
    ['Run', 'Workflow', 'Status', 'Started', 'Duration'],
    [
      [RUN, 'forecastDemo', p.green('completed'), '2026-12-01 10:00:00Z', '4.2s'],
      [RUN.replace('Q1', 'Q9'), 'placeOrder', p.red('failed'), '2026-12-01 10:01:00Z', '850ms'],
    ],
  ],
  [
    'runs with deployments',
    ['Run', 'Workflow', 'Status', 'Started', 'Duration', 'Deployment'],
    [[RUN, 'forecastDemo', p.cyan('running'), '2026-12-01 10:00:00Z', '3m05s', 'build:0123456789abcdef']],
  ],
  [
    'redrive --stranded',
    ['Run', 'Workflow', 'Status', 'Last event', 'Verdict', 'Reason', 'Action'],
    [
      [
        RUN,
        'forecastDemo',
        'running',
        '2026-12-01 10:00:00Z',
        p.red('stranded'),
        '1 unfinished step and no delivery since 2026-12-01 10:00:00Z',
        'step chargeCard: enqueued',
      ],
    ],
  ],
  [
    'redrive',
    ['Message', 'Queue (logical)', 'Run', 'First sent', 'Result'],
    [[MSG, '__wkf_workflow_forecastDemo', RUN, '2026-12-01 10:00:00Z', p.yellow('would move')]],
  ],
  [
    'init',
    ['Resource', 'Name', 'State', 'Details'],
    [
      [
        'queue',
        'eve-world-demo-queue',
        p.yellow('would fix'),
        'visibility 30 s; DLQ after 10 receives; SSE on; long polling 20 s\narn:aws:sqs:us-east-1:000000000000:eve-world-demo-dlq',
      ],
    ],
  ],
  [
    'destroy',
    ['Resource', 'Name', 'State', 'Details'],
    [['bucket', 'eve-world-payloads', p.red('KEPT (holds data)'), 'holds objects (payloads, queue bodies)']],
  ],
  [
    'deployments',
    ['Deployment', 'Shape', 'Status', 'First seen', 'Last seen', 'Active runs'],
    [
      [
        'lambda:eve-world-host:12',
        'lambda',
        p.yellow('active, no consumer'),
        '2026-12-01 10:00:00Z',
        '2026-12-01 11:00:00Z',
        '3',
      ],
    ],
  ],
  [
    'doctor',
    ['Check', 'Result', 'Details'],
    [
      [
        'queue + redrive policy',
        p.green('pass'),
        'eve-world-queue: redrive to eve-world-dlq after 10 receives; max message 1048576 bytes',
      ],
      [
        'bucket',
        p.dim('skip'),
        'eve-world-payloads: public access block: skipped: not implemented by this endpoint (its answer has no public access block)',
      ],
    ],
  ],
];

/** Every complete SGR code and nothing else that starts with ESC. */
function escapesWhole(text: string): void {
  const rest = text.replace(/\u001b\[[0-9;]*m/g, '');
  expect(rest, 'a cut escape sequence').not.toMatch(/\u001b|\[\d+m|(^|[^\w])\d+m(?!\w)/);
}

/** Every colour opened on a line is closed on it (a line stands alone). */
function balanced(line: string): void {
  const codes = [...line.matchAll(/\u001b\[([0-9;]*)m/g)].map((m) => m[1]);
  let open = 0;
  for (const c of codes) open = ['0', '', '22', '39', '49'].includes(c) ? 0 : open + 1;
  expect(open, JSON.stringify(line)).toBe(0);
}

describe('renderTable on a terminal', () => {
  for (const width of [80, 120])
    it.each(tables)(`%s: fits ${width} columns, ids whole, every character kept, colours whole`, (_n, head, rows) => {
      const table = renderTable(head, rows, true, width);
      for (const line of table.split('\n')) {
        expect(displayWidth(line), line).toBeLessThanOrEqual(width);
        balanced(line);
      }
      escapesWhole(table);
      const plain = stripColor(table);
      for (const id of [RUN, MSG]) if (rows.flat().some((c) => c.includes(id))) expect(plain).toContain(id);
      // Nothing lost: the words of every cell appear, in order, once borders and spaces are gone.
      const squeezed = plain.replace(/[│┌┐└┘├┤┬┴┼─\s]/g, '');
      for (const c of rows.flat()) for (const w of stripColor(c).split(/\s+/)) expect(squeezed).toContain(w);
    });

  it('keeps the box while it fits, goes open then to records as the width shrinks', () => {
    const [, head, rows] = tables[0];
    expect(
      planTable(
        head,
        rows.map((r) => r.map(stripColor)),
        120,
      ).layout,
    ).toBe('box');
    expect(
      planTable(
        head,
        rows.map((r) => r.map(stripColor)),
        80,
      ).layout,
    ).toBe('open');
    expect(
      planTable(
        head,
        rows.map((r) => r.map(stripColor)),
        60,
      ).layout,
    ).toBe('records');
    const records = stripColor(renderTable(head, rows, true, 60)).split('\n');
    expect(records[0]).toBe(`Run       ${RUN}`);
    expect(records).toContain('');
  });

  it('a pipe keeps one line per row at natural widths, borders as before', () => {
    const [, head, rows] = tables[0];
    const table = renderTable(
      head,
      rows.map((r) => r.map(stripColor)),
      false,
      undefined,
    );
    expect(table.split('\n').filter((l) => l.includes(RUN))).toHaveLength(1);
    expect(table.split('\n')[0]).toMatch(/^┌─+┬/);
    expect(table).toContain(`│ ${RUN} │ forecastDemo │ completed │ 2026-12-01 10:00:00Z │ 4.2s     │`);
  });

  it('a cell cannot move the cursor: control sequences from run data are dropped', () => {
    const evil = 'card declined\u001b[2J\u001b]0;pwned\u0007\rdone\tnow';
    const table = renderTable(['Run', 'Error'], [[RUN, evil]], false, 80);
    expect(table).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(table).toContain('card declined');
    expect(sanitize(p.red('ok'))).toBe(p.red('ok'));
  });
});

describe('wrapText and fitText', () => {
  it('wraps on spaces, splits only words longer than the line, and reopens colours on the next line', () => {
    expect(wrapText('no message in flight', 10)).toEqual(['no message', 'in flight']);
    expect(wrapText(RUN, 12)).toEqual([RUN.slice(0, 12), RUN.slice(12, 24), RUN.slice(24)]);
    const red = wrapText(p.red('KEPT (holds data)'), 6);
    expect(red.map(stripColor)).toEqual(['KEPT', '(holds', 'data)']);
    for (const l of red) balanced(l);
    expect(red[1].startsWith('\u001b[31m')).toBe(true);
    expect(displayWidth('日本語')).toBe(6);
  });

  it('fitText wraps prose with a hanging indent on a terminal and leaves a pipe alone', () => {
    const fix = 'x table schema: shop: missing\n  fix: run eve-world-aws init to create the table, queues and bucket';
    expect(fitText(fix, 40).split('\n')).toEqual([
      'x table schema: shop: missing',
      '  fix: run eve-world-aws init to create',
      '  the table, queues and bucket',
    ]);
    expect(fitText(fix, undefined)).toBe(fix);
  });
});
