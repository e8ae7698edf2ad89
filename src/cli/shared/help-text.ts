/**
 * The text every `--help` ends with, built one way for every command: notes (prose paragraphs),
 * then "Examples:" and "Exit codes:", all within HELP_WIDTH columns.
 *
 * Invariants (test/unit/cli/help.test.ts checks them for every command):
 * - Every command and subcommand declares its examples and exit codes here, so `--help` has both
 *   sections and fits HELP_WIDTH columns (commander wraps the options to the same width,
 *   src/cli/main.ts).
 * - The exit codes are docs/cli.md's "Exit codes" table, code by code, word for word.
 */
import type { Command } from 'commander';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './output.js';
import { displayWidth, wrapText } from './terminal-text.js';

/** Columns every help text fits (commander's option list is wrapped to it too). */
export const HELP_WIDTH = 80;

/** Exit code 2 of every command: a usage error or a bad setting. */
export const USAGE_ERROR = 'bad usage or configuration';
/** Exit code 2 of the commands that open the World: its preflight names a missing resource. */
export const CONFIG_ERROR = 'bad usage or configuration (also a table, queue or bucket that does not exist)';

export interface HelpSpec {
  /**
   * Paragraphs, wrapped to the width. A line that starts with spaces (a list item, an indented
   * example) keeps them, and its continuation lines are indented two more.
   */
  notes?: string[];
  /** `[command, what it does]`: the comment goes beside the command when both fit a line, else above it. */
  examples: Array<[string, string?]>;
  /** Exit code -> what it means; 0 and 2 at least. */
  exitCodes: Record<number, string>;
}

const specs = new WeakMap<Command, HelpSpec>();

/** The spec a command was given (for the tests that check every command). */
export function helpSpecOf(cmd: Command): HelpSpec | undefined {
  return specs.get(cmd);
}

/** Exit codes a command shares with every other: 0 done, 1 failure, 2 usage or configuration. */
export function exitCodes(ok: string, failure: string, usage = USAGE_ERROR, more: Record<number, string> = {}) {
  return { [EXIT_OK]: ok, [EXIT_USAGE]: usage, ...more, [EXIT_FAILURE]: failure };
}

function paragraph(text: string): string[] {
  return text.split('\n').flatMap((line) => {
    const indent = /^ */.exec(line)?.[0] ?? '';
    if (!indent) return wrapText(line, HELP_WIDTH);
    const hang = `${indent}  `;
    return wrapText(line.slice(indent.length), HELP_WIDTH - hang.length).map((l, i) => (i === 0 ? indent : hang) + l);
  });
}

/** The text after the options: notes, examples and exit codes (see the header). */
function renderHelp(spec: HelpSpec): string {
  const out: string[] = [];
  for (const note of spec.notes ?? []) out.push('', ...paragraph(note));
  out.push('', 'Examples:');
  // Comments line up two columns after the longest commented command; one too wide goes above.
  const column = Math.max(0, ...spec.examples.filter(([, c]) => c).map(([c]) => displayWidth(c))) + 4;
  for (const [command, comment] of spec.examples) {
    if (!comment) out.push(`  ${command}`);
    else if (column + 2 + displayWidth(comment) <= HELP_WIDTH) out.push(`  ${command.padEnd(column - 2)}# ${comment}`);
    else out.push(...wrapText(comment, HELP_WIDTH - 4).map((l) => `  # ${l}`), `  ${command}`);
  }
  out.push('', 'Exit codes:');
  const codes = Object.entries(spec.exitCodes).sort(([a], [b]) => Number(a) - Number(b));
  const codeWidth = Math.max(...codes.map(([c]) => c.length)) + 2;
  for (const [code, meaning] of codes)
    out.push(
      ...wrapText(meaning, HELP_WIDTH - 2 - codeWidth).map(
        (l, i) => `  ${(i === 0 ? code : '').padEnd(codeWidth)}${l}`,
      ),
    );
  return out.join('\n');
}

/** Give `cmd` its notes, examples and exit codes (see the header); returns it. */
export function withHelp(cmd: Command, spec: HelpSpec): Command {
  specs.set(cmd, spec);
  return cmd.addHelpText('after', renderHelp(spec));
}
