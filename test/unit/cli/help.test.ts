/**
 * `--help` shows defaults as a user would type them: `1h`, not the milliseconds the parser
 * returns, and what an empty list means, not `[]`. Every command's help (the program's, each
 * command's and each subcommand's) fits 80 columns, has "Examples" and "Exit codes", names each
 * option once, and its exit codes are the ones docs/cli.md's table gives (issue 43).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { redriveCommand } from '../../../src/cli/redrive/index.js';
import { durationText } from '../../../src/cli/shared/format.js';
import { HELP_WIDTH, helpSpecOf } from '../../../src/cli/shared/help-text.js';
import { displayWidth } from '../../../src/cli/shared/terminal-text.js';
import { sweepCommand } from '../../../src/cli/sweep.js';
import { tailCommand } from '../../../src/cli/tail.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

describe('--help defaults', () => {
  it.each([
    ['redrive', redriveCommand],
    ['sweep', sweepCommand],
    ['tail', tailCommand],
  ])('%s --help prints no raw default (milliseconds, [])', (_name, make) => {
    const help = make().helpInformation();
    expect(help).not.toMatch(/default: (\d{4,}|\[\])/);
  });

  it('durations print in the unit that divides them, and still parse back', () => {
    expect(redriveCommand().helpInformation()).toMatch(/--older-than <duration>[\s\S]*\(default: 1h\)/);
    expect(sweepCommand().helpInformation()).toMatch(/\(default: 1h\)/);
    expect(tailCommand().helpInformation()).toMatch(/\(default: every stream of\s+the run\)/);
    expect([3_600_000, 90_000, 900_000, 172_800_000, 1500].map(durationText)).toEqual([
      '1h',
      '90s',
      '15m',
      '2d',
      '1500ms',
    ]);
  });

  it('the defaults still reach the action as values', async () => {
    const cmd = sweepCommand();
    cmd.exitOverride();
    expect(cmd.opts().olderThan).toBe(3_600_000);
    expect(tailCommand().opts().stream).toEqual([]);
  });
});

/** Every command and subcommand of the program, by its path (`deployments retire`); '' is the program. */
function allCommands(): Array<[string, Command]> {
  const out: Array<[string, Command]> = [];
  const walk = (cmd: Command, path: string[]) => {
    out.push([path.join(' '), cmd]);
    for (const sub of cmd.commands) if (sub.name() !== 'help') walk(sub, [...path, sub.name()]);
  };
  walk(buildProgram(), []);
  return out;
}

/** docs/cli.md's "Exit codes" table: command path -> code -> meaning. */
function documentedExitCodes(): Map<string, Record<number, string>> {
  const doc = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Exit codes\n'));
  const lines = section.split('\n').filter((l) => l.startsWith('|'));
  const cells = (l: string) =>
    l
      .slice(1, -1)
      .split('|')
      .map((c) => c.trim());
  const codes = cells(lines[0]).slice(1).map(Number);
  const table = new Map<string, Record<number, string>>();
  for (const l of lines.slice(2)) {
    const [name, ...meanings] = cells(l);
    const command = name.replace(/^`(eve-world-aws ?)?/, '').replace(/`$/, '');
    table.set(
      command,
      Object.fromEntries(codes.map((c, i) => [c, meanings[i]]).filter(([, m]) => m !== '' && m !== undefined)),
    );
  }
  return table;
}

describe('--help of every command (issue 43)', () => {
  const commands = allCommands();

  it('covers the program, every command and every subcommand', () => {
    expect(commands.map(([n]) => n)).toEqual(
      expect.arrayContaining(['', 'init', 'emulate', 'demo', 'tail', 'runs', 'deployments retire', 'destroy']),
    );
    expect(commands.length).toBeGreaterThanOrEqual(16);
  });

  it.each(commands)('`%s --help` fits 80 columns and has Examples and Exit codes', (_name, cmd) => {
    const parts: string[] = [];
    cmd.configureOutput({ writeOut: (s) => parts.push(s) });
    cmd.outputHelp();
    const help = parts.join('');
    for (const line of help.split('\n')) expect(displayWidth(line), line).toBeLessThanOrEqual(HELP_WIDTH);
    expect(help).toMatch(/\nExamples:\n( {2}.*\n)* {2}eve-world-aws /);
    expect(help).toMatch(/\nExit codes:\n {2}0 {2}/);
    expect(Object.keys(helpSpecOf(cmd)?.exitCodes ?? {})).toEqual(expect.arrayContaining(['0', '2']));
  });

  it.each(commands)("`%s`: the exit codes --help prints are docs/cli.md's, word for word", (name, cmd) => {
    const documented = documentedExitCodes().get(name);
    expect(documented, `docs/cli.md's exit code table has no row for "${name || 'eve-world-aws'}"`).toBeDefined();
    expect(helpSpecOf(cmd)?.exitCodes).toEqual(documented);
  });

  it('a configuration error is exit 2 everywhere, and one name per option', () => {
    for (const [, cmd] of commands) {
      expect(helpSpecOf(cmd)?.exitCodes[2]).toMatch(/^bad usage/);
      const flags = cmd.options.filter((o) => !o.hidden).flatMap((o) => [o.long, o.short].filter(Boolean));
      expect(new Set(flags).size).toBe(flags.length);
      // An option described as "same as" another is one option under two names.
      for (const o of cmd.options) expect(o.description).not.toMatch(/^same as /);
    }
    const emulate = commands.find(([n]) => n === 'emulate')?.[1];
    expect(emulate?.helpInformation()).toContain('--env-out <path>');
    expect(emulate?.helpInformation()).not.toContain('--env-file <path>');
    // 0.1.0's name still parses (hidden), so scripts written for it keep working.
    expect(emulate?.options.find((o) => o.long === '--env-file')?.hidden).toBe(true);
  });
});
