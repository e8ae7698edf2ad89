/**
 * Tables for the CLI's reports (`runs`, `doctor`, `init`, `destroy`, `deployments`, `redrive`): laid out to fit a
 * terminal's width, or at their natural width when piped.
 *
 * On a terminal of `width` columns:
 * 1. `box`: bordered columns (the piped look), cells wrapped inside their column;
 * 2. `open`: the same columns without borders, two spaces apart (one when two do not fit), used when the box does not
 *    fit or when its wider columns take fewer lines;
 * 3. `records`: one block per row, a `Heading  value` line per column, when neither fits.
 * A layout fits when every column can be as narrow as its widest word of up to UNBREAKABLE columns (names, times,
 * URLs), or, for `open` as a last resort, of up to ID_WIDTH (a run, step or message id), and the first column (what a
 * row is: a run, a message, a deployment) as its widest word: an id is never split over lines. Columns wider than that
 * give way, widest first. Records fit any width that holds the headings and an id. Cells are wrapped and padded by
 * src/cli/shared/terminal-text.ts, so a colour code is never cut and text from a run cannot move the cursor. Piped (no
 * width), every cell keeps its lines as they are.
 */
import { displayWidth, longestWord, padEnd, sanitize, wrapText } from './terminal-text.js';

/** Words up to this many columns are kept whole while the table fits with them so. */
const UNBREAKABLE = 40;
/** The runtime's ids (`wrun_`/`step_`/`msg_` + a 26-character ULID): never split. */
const ID_WIDTH = 31;

export interface TablePlan {
  layout: 'box' | 'open' | 'records';
  /** Content width of each column (without padding and borders); for `records`, the value width. */
  widths: number[];
  /** `open`: spaces between columns. */
  gap?: number;
}

/** Widest line of every column, headings included. */
function naturalWidths(head: string[], rows: string[][]): number[] {
  return head.map((h, i) =>
    Math.max(...[h, ...rows.map((r) => r[i] ?? '')].flatMap((c) => c.split('\n').map(displayWidth)), 1),
  );
}

/**
 * How narrow each column may get: its widest heading word, and its widest word up to `unbreakable`;
 * the first column (what a row is: a run, a message, a deployment) keeps every word whole.
 */
function minimumWidths(head: string[], rows: string[][], unbreakable: number): number[] {
  return head.map((h, i) => {
    const word = Math.max(0, ...rows.map((r) => longestWord(r[i] ?? '')));
    return Math.max(longestWord(h), i === 0 ? word : Math.min(unbreakable, word), 1);
  });
}

/** Column widths for `layout` within `width`, the widest columns giving way first; undefined when it cannot fit. */
function fitWidths(natural: number[], min: number[], room: number): number[] | undefined {
  if (min.reduce((a, b) => a + b, 0) > room) return undefined;
  const widths = [...natural];
  let excess = widths.reduce((a, b) => a + b, 0) - room;
  while (excess > 0) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++)
      if (widths[i] > min[i] && (widest < 0 || widths[i] > widths[widest])) widest = i;
    widths[widest]--;
    excess--;
  }
  return widths;
}

/** Each width down to what its wrapped cells use (a date wrapped to 10 of 14 columns keeps 10). */
function tighten(head: string[], rows: string[][], widths: number[]): number[] {
  return widths.map((w, i) =>
    Math.max(1, ...[head[i], ...rows.map((r) => r[i] ?? '')].flatMap((c) => wrapText(c, w).map(displayWidth))),
  );
}

/** Terminal lines the rows take at these widths. */
function height(rows: string[][], widths: number[]): number {
  return rows.reduce((t, r) => t + Math.max(1, ...widths.map((w, i) => wrapText(r[i] ?? '', w).length)), 0);
}

/**
 * Which layout fits `width` and the column widths in it (see the header): `box` when it fits,
 * unless `open` (wider columns) takes fewer lines; `records` when neither fits.
 */
export function planTable(head: string[], rows: string[][], width: number): TablePlan {
  const n = head.length;
  const natural = naturalWidths(head, rows);
  const min = minimumWidths(head, rows, UNBREAKABLE);
  const box = fitWidths(natural, min, width - 3 * n - 1);
  let open: TablePlan | undefined;
  for (const [gap, least] of [
    [2, min],
    [2, minimumWidths(head, rows, ID_WIDTH)],
    [1, minimumWidths(head, rows, ID_WIDTH)],
  ] as const) {
    const widths = fitWidths(natural, least, width - gap * (n - 1));
    if (widths) {
      open = { layout: 'open', widths: tighten(head, rows, widths), gap };
      break;
    }
  }
  if (box && (!open || height(rows, box) <= height(rows, open.widths)))
    return { layout: 'box', widths: tighten(head, rows, box) };
  if (open) return open;
  const label = Math.max(...head.map(displayWidth));
  return { layout: 'records', widths: head.map(() => Math.max(1, width - label - 2)) };
}

type Paint = (s: string) => string;

function boxRule(widths: number[], [left, mid, right]: string): string {
  return `${left}${widths.map((w) => '─'.repeat(w + 2)).join(mid)}${right}`;
}

/** The lines of one row: each cell's lines, padded, side by side. */
function rowLines(cells: string[][], widths: number[], join: (padded: string[]) => string): string[] {
  const height = Math.max(1, ...cells.map((c) => c.length));
  return Array.from({ length: height }, (_, k) => join(cells.map((c, i) => padEnd(c[k] ?? '', widths[i]))));
}

/**
 * Render `rows` under `head` (headings painted with `bold`): fitted to `width` columns on a
 * terminal (see the header), or, with `width` undefined, a box at natural widths.
 */
export function layoutTable(head: string[], input: string[][], bold: Paint, width: number | undefined): string {
  const rows = input.map((r) => r.map(sanitize));
  if (width === undefined) {
    const widths = naturalWidths(head, rows);
    const cells = rows.map((r) => widths.map((_w, i) => (r[i] ?? '').split('\n')));
    return box(
      head.map((h) => [bold(h)]),
      cells,
      widths,
    );
  }
  const plan = planTable(head, rows, width);
  const wrap = (r: string[]) => plan.widths.map((w, i) => wrapText(r[i] ?? '', w));
  const headLines = wrap(head).map((lines) => lines.map((l) => bold(l)));
  if (plan.layout === 'box') return box(headLines, rows.map(wrap), plan.widths);
  if (plan.layout === 'open') {
    const joinOpen = (padded: string[]) => padded.join(' '.repeat(plan.gap ?? 2)).trimEnd();
    return [headLines, ...rows.map(wrap)].flatMap((cells) => rowLines(cells, plan.widths, joinOpen)).join('\n');
  }
  const label = Math.max(...head.map(displayWidth));
  const blocks = rows.map((r) =>
    head
      .flatMap((h, i) =>
        wrapText(r[i] ?? '', plan.widths[i]).map((l, k) =>
          `${k === 0 ? bold(padEnd(h, label)) : ' '.repeat(label)}  ${l}`.trimEnd(),
        ),
      )
      .join('\n'),
  );
  return blocks.join('\n\n');
}

function box(head: string[][], rows: string[][][], widths: number[]): string {
  const join = (padded: string[]) => `│ ${padded.join(' │ ')} │`;
  return [
    boxRule(widths, '┌┬┐'),
    ...rowLines(head, widths, join),
    boxRule(widths, '├┼┤'),
    ...rows.flatMap((r) => rowLines(r, widths, join)),
    boxRule(widths, '└┴┘'),
  ].join('\n');
}
