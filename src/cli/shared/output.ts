/**
 * Shared CLI output: colours (only on a TTY, never with NO_COLOR), tables, JSON, progress and the
 * error type commands throw to choose their exit code.
 *
 * Convention: results go to stdout (a table or, with --json, one JSON document), progress and
 * diagnostics to stderr, so `--json | jq` and `> file` always get clean output.
 */
import { wrapText } from './terminal-text.js';
import { layoutTable } from './text-table.js';

/** Exit codes shared by every command. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** Stopped by Ctrl-C (SIGINT) or another stop signal (tail, demo). */
export const EXIT_INTERRUPTED = 130;

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

/** Colours only when the stream is a terminal and the user has not opted out. */
export function colorEnabled(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

type Paint = (s: string) => string;

function sgr(open: number, close: number, on: boolean): Paint {
  return on ? (s) => `\u001b[${open}m${s}\u001b[${close}m` : (s) => s;
}

export function palette(on: boolean = colorEnabled()) {
  return {
    bold: sgr(1, 22, on),
    dim: sgr(2, 22, on),
    red: sgr(31, 39, on),
    green: sgr(32, 39, on),
    yellow: sgr(33, 39, on),
    cyan: sgr(36, 39, on),
  };
}

export type Palette = ReturnType<typeof palette>;

/** A state's label and the colour it is shown in (none: plain). */
export type Label = readonly [text: string, colour?: keyof Palette];

export const paintLabel = (p: Palette, [text, colour]: Label): string => (colour ? p[colour](text) : text);

/** The terminal's width when stdout is one; undefined for pipes and files (no fitting there). */
function terminalColumns(stream: NodeJS.WriteStream = process.stdout): number | undefined {
  return stream.isTTY && stream.columns > 0 ? stream.columns : undefined;
}

/**
 * Render rows as a table (src/cli/shared/text-table.ts): headings bold when colours are on; on a
 * terminal (`width`, default: stdout's columns) fitted to its width, ids never split; piped, a box
 * with every cell on its own lines as they are.
 */
export function renderTable(
  head: string[],
  rows: string[][],
  color = colorEnabled(),
  width: number | undefined = terminalColumns(),
): string {
  return layoutTable(head, rows, palette(color).bold, width);
}

/**
 * Lines of prose (notes, fixes, summaries) wrapped to the terminal's width on spaces, each
 * continuation indented like its line; piped (no width), unchanged.
 */
export function fitText(text: string, width: number | undefined = terminalColumns()): string {
  if (width === undefined) return text;
  return text
    .split('\n')
    .flatMap((line) => {
      const indent = /^ */.exec(line)?.[0] ?? '';
      return wrapText(line.slice(indent.length), Math.max(20, width - indent.length)).map((l) => indent + l);
    })
    .join('\n');
}

/** A report: a table (`parts[0]`, fitted already) and lines of prose after it, wrapped by {@link fitText}. */
export function tableReport(parts: string[]): string {
  return `${[parts[0], ...parts.slice(1).map((l) => fitText(l))].join('\n')}\n`;
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

/** A one-line spinner on stderr for slow steps, drawn only on a terminal (none in pipes, logs). */
export function progress(initial: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  let message = initial;
  let frame = 0;
  const draw = () => stream.write(`\r\u001b[2K${FRAMES[frame++ % FRAMES.length]} ${message}`);
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

/** `work` under a {@link progress} spinner, cleared however it ends. */
export async function withProgress<T>(initial: string, work: (spin: Progress) => Promise<T>): Promise<T> {
  const spin = progress(initial);
  try {
    return await work(spin);
  } finally {
    spin.done();
  }
}

/** Quote a value for POSIX shells only when it needs it (URLs and names stay readable). */
function shellQuote(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** `export K=V` lines, in the given order. */
export function exportLines(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `export ${k}=${shellQuote(v)}`);
}
