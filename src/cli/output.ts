/**
 * Shared CLI output: colours (only on a TTY, never with NO_COLOR), tables, JSON, progress and the
 * error type commands throw to choose their exit code.
 *
 * Convention: results go to stdout (a table or, with --json, one JSON document), progress and
 * diagnostics to stderr, so `--json | jq` and `> file` always get clean output.
 */
import Table from 'cli-table3';

/** Exit codes shared by every command. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A user-facing failure: printed as one line (no stack trace) and mapped to `exitCode`. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
  ) {
    super(message);
  }
}

interface TtyLike {
  isTTY?: boolean;
}

/** Colours only when the stream is a terminal and the user has not opted out. */
export function colorEnabled(stream: TtyLike = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

type Paint = (s: string) => string;

function sgr(open: number, close: number, on: boolean): Paint {
  return on ? (s) => `\u001b[${open}m${s}\u001b[${close}m` : (s) => s;
}

export interface Palette {
  bold: Paint;
  dim: Paint;
  red: Paint;
  green: Paint;
  yellow: Paint;
  cyan: Paint;
}

export function palette(on: boolean = colorEnabled()): Palette {
  return {
    bold: sgr(1, 22, on),
    dim: sgr(2, 22, on),
    red: sgr(31, 39, on),
    green: sgr(32, 39, on),
    yellow: sgr(33, 39, on),
    cyan: sgr(36, 39, on),
  };
}

/** The terminal's width when stdout is one; undefined for pipes and files (no fitting there). */
export function terminalColumns(stream: NodeJS.WriteStream = process.stdout): number | undefined {
  return stream.isTTY && stream.columns > 0 ? stream.columns : undefined;
}

const ANSI = /\u001b\[[0-9;]*m/g;
const visible = (s: string) => s.replace(ANSI, '').length;

/**
 * `text` wrapped to lines of at most `width` columns: on spaces where it can, and words longer
 * than a line are split (an id stays whole across lines, never cut). Text with colour codes is
 * left as is (only short status words are coloured).
 */
export function wrapCell(text: string, width: number): string {
  if (width < 1 || text.includes('\u001b[')) return text;
  const out: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(/ +/)) {
      let w = word;
      if (line && line.length + 1 + w.length <= width) {
        line += ` ${w}`;
        continue;
      }
      if (line) out.push(line);
      while (w.length > width) {
        out.push(w.slice(0, width));
        w = w.slice(width);
      }
      line = w;
    }
    out.push(line);
  }
  return out.join('\n');
}

/**
 * Column widths (cell text plus 1 column of padding each side) for a table no wider than `width`:
 * the natural widths when they fit, else the widest columns give way first, down to 8 (or their
 * heading) each. Borders take one column per column plus one.
 */
export function fitColumns(head: string[], rows: string[][], width: number): number[] {
  const natural = head.map(
    (h, i) => Math.max(visible(h), ...rows.map((r) => Math.max(0, ...(r[i] ?? '').split('\n').map(visible)))) + 2,
  );
  const min = head.map((h, i) => Math.min(natural[i], Math.max(8, visible(h) + 2)));
  const widths = [...natural];
  let excess = widths.reduce((a, b) => a + b, 0) + widths.length + 1 - width;
  while (excess > 0) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++)
      if (widths[i] > min[i] && (widest < 0 || widths[i] > widths[widest])) widest = i;
    if (widest < 0) break; // every column at its minimum: the table stays wider than the terminal
    widths[widest]--;
    excess--;
  }
  return widths;
}

/**
 * Render rows as a table (plain borders, no colours unless stdout is a colour terminal). On a
 * terminal (`width`, default: stdout's columns) it fits the width, wrapping cells inside their
 * column; piped, every cell stays on its line as it is.
 */
export function renderTable(
  head: string[],
  rows: string[][],
  color = colorEnabled(),
  width: number | undefined = terminalColumns(),
): string {
  const p = palette(color);
  const fitted = width === undefined ? undefined : fitColumns(head, rows, width);
  const table = new Table({
    head: head.map((h) => p.bold(h)),
    style: { head: [], border: [], compact: true },
    ...(fitted ? { colWidths: fitted, wordWrap: true, wrapOnWordBoundary: false } : { wordWrap: true }),
  });
  for (const r of rows) table.push(fitted ? r.map((c, i) => wrapCell(c, fitted[i] - 2)) : r);
  return table.toString();
}

/** Print one JSON document on stdout (the only thing --json writes there). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export interface Progress {
  /** Replace the current progress message. */
  update(message: string): void;
  /** Clear the progress line. */
  done(): void;
}

const FRAMES = ['|', '/', '-', '\\'];

/**
 * A one-line spinner on stderr for slow steps. It draws only when stderr is a terminal, so logs,
 * pipes and tests see nothing from it.
 */
export function progress(initial: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  let message = initial;
  let frame = 0;
  const draw = () => {
    stream.write(`\r\u001b[2K${FRAMES[frame++ % FRAMES.length]} ${message}`);
  };
  draw();
  const timer = setInterval(draw, 120);
  timer.unref();
  return {
    update(m) {
      message = m;
      draw();
    },
    done() {
      clearInterval(timer);
      stream.write('\r\u001b[2K');
    },
  };
}

/** Quote a value for POSIX shells only when it needs it (URLs and names stay readable). */
export function shellQuote(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** `export K=V` lines, in the given order. */
export function exportLines(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `export ${k}=${shellQuote(v)}`);
}
