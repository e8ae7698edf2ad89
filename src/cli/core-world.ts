/**
 * The World for commands that act through `@workflow/core` (resume, start): the CLI's World
 * (src/cli/shared/world.ts, never `start()`ed: it only writes events and sends messages, the app's
 * consumers run them), registered as core's World with `setWorld()` for the command's duration.
 * Without `setWorld()` core would pick its default World (world-local: `.workflow-data/` in the
 * current directory), which knows nothing of this table. Needs the optional `workflow` peer.
 */
import { CliError, EXIT_USAGE } from './shared/output.js';
import { type CliWorld, type OpenWorldOptions, withWorld } from './shared/world.js';

export async function withCoreWorld<T>(
  fn: (w: CliWorld, core: typeof import('workflow/api')) => Promise<T>,
  options: OpenWorldOptions = {},
): Promise<T> {
  const [{ setWorld }, api] = await Promise.all([import('workflow/runtime'), import('workflow/api')]);
  return withWorld(options, async (w) => {
    setWorld(w.world);
    try {
      return await fn(w, api);
    } finally {
      setWorld(undefined as never);
    }
  });
}

/** Parse a JSON argument, or throw a usage error naming it. */
export function parseJsonArg(what: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(
      `${what} is not valid JSON (${(err as Error).message}): ${text}. Quote it for the shell, e.g. '{"approved":true}' or '"text"'.`,
      EXIT_USAGE,
    );
  }
}
