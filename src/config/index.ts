/**
 * Configuration: the environment, the tuning options and the consumer's options -> one typed,
 * frozen object, validated once. This folder is the World's one home of settings, catalogued in
 * {@link SETTINGS} (catalogue.ts); the rest of the code imports it through this file.
 *
 * Under eve the World factory is called with no arguments, so the environment is the only channel
 * an operator has: it carries the settings a deployment chooses (names, the signing secret, the
 * flow URL, limits, the scheduler role, the KMS key), listed in {@link VARIABLES} (variables.ts).
 * Knobs only tests, benchmarks and embedders turn (poll intervals, thresholds, timeouts) are {@link
 * TUNING} options, never variables; the other channels: catalogue.ts.
 *
 * Invariants:
 * - Each setting's name, default, accepted values and description are written once, in these tables
 *   (their row kinds: setting.ts), and every table is part of the one catalogue {@link SETTINGS}
 *   (catalogue.ts; names unique across it): the parser (load.ts) and the code that takes an option
 *   read their defaults from it, and docs/configuration.md is generated from it (rows.ts, docs.ts;
 *   `npm run docs:config`, checked by test/unit/config-docs.test.ts).
 * - Every failure is a {@link ConfigError} naming the setting, what was wrong and an example.
 * - load.ts is the only module of the runtime that reads `process.env` (components get the parsed
 *   config), and core-defaults.ts the only one that writes it ({@link applyCoreDefaults}, for
 *   `@workflow/core`; why: its header and the `WORKFLOW_OPTIMISTIC_INLINE_START` row). Outside the
 *   runtime, the one other write is the CLI's `emulate --docker` (docs/cli.md says why);
 *   test/unit/config.test.ts allows these two by file.
 * - Closed by default: cleartext to a remote flow route, unsigned remote deliveries and weak
 *   secrets are refused unless an explicit, documented opt-out is set (safety.ts, checks.ts).
 */

export { type CatalogueEntry, SETTING_ROWS, SETTINGS, type SettingChannel } from './catalogue.js';
export { isLoopbackUrl, SECRET_RULE, secretWeakness } from './checks.js';
export { ConfigError } from './config-error.js';
export { CONSUMER_OPTIONS } from './consumer.js';
export { applyCoreDefaults } from './core-defaults.js';
export { getConfig, loadConfig, withTuning } from './load.js';
export { nameChosenBy, type ResourceSetting } from './resource-names.js';
export { CONSUMER_DOCS, ENV_DOCS, type EnvDoc, SWEEP_DOCS, TUNING_DOCS, WORLD_DOCS } from './rows.js';
export { assertDeliveriesSafe, defaultFlowUrl, unsignedWarning } from './safety.js';
export { clampToRange, type RangedOptionSetting } from './setting.js';
export { SWEEP_OPTIONS } from './sweep-options.js';
export { TUNING, type WorldTuning } from './tuning.js';
export { SHARED_SCHEDULE_GROUP, VARIABLES } from './variables.js';
export {
  closestVariable,
  FORMER_VARIABLES,
  TOOL_VARIABLES,
  variableWarnings,
  variableWarningsOnce,
} from './warnings.js';
export type { DeploymentAffinityMode, Endpoints, WorldConfig } from './world-config.js';
export { WORLD_OPTIONS } from './world-options.js';
