/**
 * Variables set but not read: former variables (now tuning options) and typos, each named once
 * per process with what to do instead.
 */

import { editDistance } from '../util/edit-distance.js';
import { SETTINGS } from './catalogue.js';
import type { Env } from './setting.js';
import type { WorldTuning } from './tuning.js';
import type { WorldConfig } from './world-config.js';

/**
 * Variables earlier versions read, each with the `createWorld({ tuning })` option that replaced
 * it (docs/configuration.md, "What is no longer a variable"). One still set is ignored, and
 * {@link variableWarnings} says what to do instead.
 */
export const FORMER_VARIABLES: Readonly<Record<string, keyof WorldTuning>> = Object.freeze({
  EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES: 'payloadThresholdBytes',
  EVE_WORLD_AWS_STORAGE_INLINE_BYTES: 'storageInlineBytes',
  EVE_WORLD_AWS_STREAM_POLL_MS: 'streamPollMs',
  EVE_WORLD_AWS_STREAM_IDLE_POLL_MS: 'streamIdlePollMs',
  EVE_WORLD_AWS_STREAM_FLUSH_MS: 'streamFlushMs',
  EVE_WORLD_AWS_STREAM_BURST_MS: 'streamBurstMs',
  EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS: 'maxDelayHopSeconds',
  EVE_WORLD_AWS_IDEMPOTENCY_TTL_SECONDS: 'idempotencyTtlSeconds',
  EVE_WORLD_AWS_CONSUMER_VISIBILITY_SECONDS: 'consumerVisibilitySeconds',
  EVE_WORLD_AWS_CONNECT_TIMEOUT_MS: 'connectTimeoutMs',
  EVE_WORLD_AWS_REQUEST_TIMEOUT_MS: 'requestTimeoutMs',
});

/** `EVE_WORLD_AWS_*` names read by the CLI and the test tooling, not by the World. */
export const TOOL_VARIABLES: readonly string[] = Object.freeze([
  'EVE_WORLD_AWS_DEBUG',
  'EVE_WORLD_AWS_JAVA',
  'EVE_WORLD_AWS_SKIP_BUILD',
]);

/** Every variable this World or its CLI reads, in the table's order. */
const READ_VARIABLES: readonly string[] = [...Object.values(SETTINGS.variables).map((v) => v.name), ...TOOL_VARIABLES];

export function ignoredVariables(env: Env): string[] {
  const read = new Set(READ_VARIABLES);
  return Object.keys(env)
    .filter((k) => k.startsWith('EVE_WORLD_AWS_') && !read.has(k) && (env[k]?.trim() ?? '') !== '')
    .sort();
}

/**
 * One line per ignored variable ({@link WorldConfig.ignoredVariables}): a former variable with the
 * option that replaced it, any other with the closest name this World reads ({@link
 * closestVariable}).
 */
export function variableWarnings(config: Pick<WorldConfig, 'ignoredVariables'>): string[] {
  return config.ignoredVariables.map((name) => {
    const option = FORMER_VARIABLES[name];
    return option
      ? `[eve-world-aws] ${name} is set but no longer read: it is the option createWorld({ tuning: { ${option} } }) now; unset it (docs/configuration.md).`
      : `[eve-world-aws] ${name} is set but is not a variable of this World (a typo?); it is ignored. Did you mean ${closestVariable(name)}? The variables are listed in docs/configuration.md.`;
  });
}

/** Variables {@link variableWarningsOnce} has named in this process. */
const warnedVariables = new Set<string>();

/**
 * {@link variableWarnings} for the variables no earlier call in this process named: `createWorld()`
 * and the Lambda consumer log these, so each ignored variable is named once per process however
 * many Worlds it builds.
 */
export function variableWarningsOnce(config: Pick<WorldConfig, 'ignoredVariables'>): string[] {
  const fresh = config.ignoredVariables.filter((name) => !warnedVariables.has(name));
  for (const name of fresh) warnedVariables.add(name);
  return variableWarnings({ ignoredVariables: fresh });
}

/**
 * The `EVE_WORLD_AWS_*` name this World (or its CLI) reads that is closest to `name` by edit
 * distance (the first of the table's order on a tie), e.g. EVE_WORLD_AWS_PREFIX for the prefix
 * variable with a letter left out.
 */
export function closestVariable(name: string): string {
  const known = READ_VARIABLES.filter((n) => n.startsWith('EVE_WORLD_AWS_'));
  const upper = name.toUpperCase();
  return known.reduce((best, k) => (editDistance(upper, k) < editDistance(upper, best) ? k : best));
}
