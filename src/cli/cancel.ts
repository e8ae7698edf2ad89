/**
 * `eve-world-aws cancel <runId>`: cancel a run as core's `cancelRun` / `run.cancel()` / `wf cancel`
 * do: one `run_cancelled` event (with the run's own spec version and an optional reason) through
 * the World's `events.create`. The runtime sees it at the run's next replay: no step or wait starts
 * after it, and pending hooks stop accepting payloads. Live stream readers end once no writer is
 * left (src/streams/live.ts).
 *
 * Safe twice: cancelling a cancelled run reports it and exits 0; a completed or failed run exits 1.
 */
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { Command, InvalidArgumentError } from 'commander';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, printJson } from './shared/output.js';
import { getRunOrFail, withWorld } from './shared/world.js';

/** Core's limit on a cancel reason (characters). */
const MAX_REASON = 512;

interface CancelOptions {
  reason?: string;
  json?: boolean;
}

function parseReason(value: string): string {
  if (value.length > MAX_REASON)
    throw new InvalidArgumentError(`at most ${MAX_REASON} characters (got ${value.length}).`);
  return value;
}

/** The run's status after the command; `cancelled: false` when it was already cancelled. */
async function cancelRunById(runId: string, opts: CancelOptions) {
  return withWorld({}, async (w) => {
    const run = await getRunOrFail(w, runId);
    if (run.status === 'cancelled') return { runId, status: run.status, cancelled: false };
    if (run.status === 'completed' || run.status === 'failed')
      throw new CliError(`run ${runId} is already ${run.status}; only a pending or running run can be cancelled`);
    try {
      await w.world.events.create(runId, {
        eventType: 'run_cancelled',
        specVersion: run.specVersion ?? SPEC_VERSION_CURRENT,
        ...(opts.reason !== undefined ? { eventData: { cancelReason: opts.reason } } : {}),
      } as never);
    } catch (err) {
      // Ended between the read and the write (or cancelled by someone else): report what it is now.
      const now = await getRunOrFail(w, runId);
      if (now.status === 'cancelled') return { runId, status: now.status, cancelled: false };
      if (now.status === 'completed' || now.status === 'failed')
        throw new CliError(`run ${runId} ${now.status} before it could be cancelled`);
      throw err;
    }
    return { runId, status: 'cancelled', cancelled: true };
  });
}

const CANCEL_HELP: HelpSpec = {
  notes: [
    'The run stops at its next replay: no new step or wait starts, its hooks stop accepting payloads, and a step already running is not interrupted. Cancelling a cancelled run is a no-op (exit 0, "cancelled": false).',
  ],
  examples: [
    ['eve-world-aws cancel wrun_01JD...'],
    ['eve-world-aws cancel wrun_01JD... --reason "duplicate order" --json'],
  ],
  exitCodes: exitCodes(
    'cancelled (or already cancelled)',
    'no such run, or it already completed or failed',
    CONFIG_ERROR,
  ),
};

export function cancelCommand(): Command {
  return withHelp(new Command('cancel'), CANCEL_HELP)
    .description('Cancel a pending or running run (what `wf cancel` and run.cancel() do)')
    .argument('<runId>', 'the run id (wrun_...)')
    .option(
      '--reason <text>',
      `why, recorded on the run_cancelled event (at most ${MAX_REASON} characters)`,
      parseReason,
    )
    .option('--json', 'print {runId, status, cancelled} as JSON')
    .action(async (runId: string, opts: CancelOptions) => {
      const result = await cancelRunById(runId, opts);
      if (opts.json) printJson(result);
      else process.stdout.write(`run ${runId} ${result.cancelled ? 'cancelled' : 'was already cancelled'}\n`);
    });
}
