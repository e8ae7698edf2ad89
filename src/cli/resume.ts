/**
 * `eve-world-aws resume <token> [json]`: resume a hook from this process, as an app's HTTP route
 * or script would, through core's `resumeHook` on this World (src/cli/core-world.ts): it writes
 * `hook_received` with the payload and wakes the run through the queue; the app's consumer runs
 * the workflow on. The payload is one JSON value (default `null`).
 */
import { HookNotFoundError } from '@workflow/errors';
import { Command } from 'commander';
import { parseJsonArg, withCoreWorld } from './core-world.js';
import { requirePeers } from './peers.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, printJson } from './shared/output.js';

async function resumeByToken(token: string, payload: unknown) {
  return withCoreWorld(async (w, core) => {
    try {
      const hook = await core.resumeHook(token, payload);
      return { token, runId: hook.runId, hookId: hook.hookId };
    } catch (err) {
      if (HookNotFoundError.is(err) || (err as { name?: string })?.name === 'HookNotFoundError')
        throw new CliError(
          `no hook with token "${token}" waits in table ${w.config.tableName}: the token is wrong, the hook was disposed, or its run has ended ` +
            '(`eve-world-aws tail <runId>` shows what a run waits for; check EVE_WORLD_AWS_PREFIX / EVE_WORLD_AWS_TABLE)',
        );
      throw err;
    }
  });
}

const RESUME_HELP: HelpSpec = {
  notes: [
    "Writes hook_received and wakes the run through the queue; the run goes on in your app's consumer (eve start, a Lambda), which must be running for the run to move. Needs the optional peer `workflow` (the app's own copy).",
  ],
  examples: [
    ['eve-world-aws resume approval-42 \'{"approved":true}\''],
    ['eve-world-aws resume approval-42 \'"yes"\' --json'],
  ],
  exitCodes: exitCodes(
    'resumed',
    'no hook waits with that token (wrong token, disposed, or its run ended)',
    `${CONFIG_ERROR}; a payload that is not JSON, or \`workflow\` not installed`,
  ),
};

export function resumeCommand(): Command {
  return withHelp(new Command('resume'), RESUME_HELP)
    .description("Resume a hook by its token with a JSON payload (core's resumeHook, from any process)")
    .argument('<token>', 'the hook token (the one the workflow passed to createHook, or tail shows)')
    .argument('[json]', 'the payload, one JSON value (default null)')
    .option('--json', 'print {token, runId, hookId} as JSON')
    .action(async (token: string, json: string | undefined, opts: { json?: boolean }) => {
      requirePeers('resume', ['workflow']);
      const result = await resumeByToken(token, json === undefined ? null : parseJsonArg('the payload', json));
      if (opts.json) printJson(result);
      else process.stdout.write(`resumed hook ${token} of run ${result.runId}\n`);
    });
}
