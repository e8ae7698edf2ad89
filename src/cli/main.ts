/**
 * The `eve-world-aws` program: registers the commands and turns errors into exit codes
 * (docs/cli.md, "Exit codes"). User errors print one line without a stack trace
 * (EVE_WORLD_AWS_DEBUG=1 shows it).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { EmulatorError } from '../../emulator/stack.js';
import { ConfigError } from '../config/index.js';
import { packageRoot } from '../util/package-root.js';
import { cancelCommand } from './cancel.js';
import { demoCommand } from './demo.js';
import { deploymentsCommand } from './deployments.js';
import { destroyCommand } from './destroy.js';
import { doctorCommand } from './doctor.js';
import { emulateCommand } from './emulate.js';
import { initCommand } from './init.js';
import { redriveCommand } from './redrive/index.js';
import { resumeCommand } from './resume.js';
import { runsCommand } from './runs.js';
import { exitCodes, HELP_WIDTH, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './shared/output.js';
import { startCommand } from './start.js';
import { sweepCommand } from './sweep.js';
import { tailCommand } from './tail.js';

/** One line per command; each factory returns a fully configured commander `Command`. */
const COMMANDS: Array<() => Command> = [
  initCommand,
  emulateCommand,
  demoCommand,
  tailCommand,
  runsCommand,
  startCommand,
  cancelCommand,
  resumeCommand,
  redriveCommand,
  sweepCommand,
  doctorCommand,
  deploymentsCommand,
  destroyCommand,
];

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Settings every command shares; `addCommand` does not inherit them, so apply them recursively. */
function configure(cmd: Command): void {
  cmd.exitOverride().showHelpAfterError('(add --help for usage)').configureHelp({ helpWidth: HELP_WIDTH });
  for (const sub of cmd.commands) configure(sub);
}

/** The program's `--help` after the commands (src/cli/shared/help-text.ts). */
const PROGRAM_HELP: HelpSpec = {
  notes: [
    'Configuration comes from the environment (EVE_WORLD_AWS_*, AWS_REGION, AWS_ENDPOINT_URL_*, AWS_PROFILE). `eve-world-aws <command> --help` describes each command.',
  ],
  examples: [
    ['eve-world-aws demo', 'all of it at once (Java 17)'],
    ['eve-world-aws emulate --env-out .emulate/env', 'shell 1: local AWS'],
    ['source .emulate/env && eve-world-aws init', 'shell 2: resources'],
    ['eve-world-aws tail <runId>', 'follow a run live'],
  ],
  exitCodes: exitCodes('ok', 'failure (drift, a failed check or run, an AWS error)'),
};

export function buildProgram(): Command {
  const program = withHelp(new Command('eve-world-aws'), PROGRAM_HELP)
    .description(
      'Workflow DevKit World on DynamoDB + SQS + S3: set up, check and remove AWS resources, run a local emulator, follow, start, cancel and resume runs, replay dead letters, sweep orphaned objects.',
    )
    .version(version(), '-V, --version');
  for (const make of COMMANDS) program.addCommand(make());
  configure(program);
  return program;
}

/** Map an error to an exit code, printing it as one line unless it was already reported. */
function reportError(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander has already printed help / the usage error.
    return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  const debug = process.env.EVE_WORLD_AWS_DEBUG === '1';
  const code = err instanceof ConfigError ? EXIT_USAGE : err instanceof CliError ? err.exitCode : EXIT_FAILURE;
  // The errors a user can act on say so themselves; anything else points at the stack.
  const message =
    err instanceof ConfigError || err instanceof CliError || err instanceof EmulatorError
      ? err.message
      : `${(err as Error)?.message ?? String(err)}${debug ? '' : ' (set EVE_WORLD_AWS_DEBUG=1 for details)'}`;
  if (message) process.stderr.write(`error: ${message}\n`);
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return code;
}

/** Entry point used by bin/eve-world-aws. Exits the process when the command is done. */
export async function run(argv: string[] = process.argv): Promise<void> {
  let code = EXIT_OK;
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    code = reportError(err);
  }
  // Exit explicitly (long-running commands may leave idle sockets) once stdout has drained.
  process.stdout.write('', () => process.exit(code));
}
