/**
 * The catalogue: every setting of the World in one place, {@link SETTINGS}, composed from the
 * tables that hold the rows (one file per channel a setting is given through):
 *
 * - `variables`: the environment ({@link VARIABLES}, variables.ts), parsed by load.ts;
 * - `tuning`: `createWorld({ tuning })` / `loadConfig(env, tuning)` ({@link TUNING}, tuning.ts),
 *   parsed by load.ts;
 * - `consumer`: `createWorld({ consumer })` ({@link CONSUMER_OPTIONS}, consumer.ts), read by
 *   src/consumer/;
 * - `world`: `createWorld()`'s own settings ({@link WORLD_OPTIONS}, world-options.ts), read by
 *   src/context/world-context.ts;
 * - `sweep`: the orphan sweep's options ({@link SWEEP_OPTIONS}, sweep-options.ts), read by
 *   src/sweep/.
 *
 * Look a setting up here (`SETTINGS.<channel>.<key>`): the parser's defaults (load.ts), the code
 * that takes an option, the documentation (rows.ts, docs.ts: docs/configuration.md) and the
 * uniqueness test (test/unit/config/catalogue.test.ts: one name per row across the catalogue, every
 * row documented) all read this object or {@link SETTING_ROWS}, its rows in order.
 */
import { CONSUMER_OPTIONS } from './consumer.js';
import type { AnySetting } from './setting.js';
import { SWEEP_OPTIONS } from './sweep-options.js';
import { TUNING } from './tuning.js';
import { VARIABLES } from './variables.js';
import { WORLD_OPTIONS } from './world-options.js';

/** Every setting of the World, by the channel it is given through; the docs' order. */
export const SETTINGS = Object.freeze({
  variables: VARIABLES,
  tuning: TUNING,
  consumer: CONSUMER_OPTIONS,
  world: WORLD_OPTIONS,
  sweep: SWEEP_OPTIONS,
} as const);

/** The channel a setting is given through: a key of {@link SETTINGS}. */
export type SettingChannel = keyof typeof SETTINGS;

/** One setting of the catalogue: its channel, its key in that table and its row. */
export interface CatalogueEntry {
  readonly channel: SettingChannel;
  readonly key: string;
  readonly setting: AnySetting;
}

/** Every row of {@link SETTINGS}, in order: channel by channel, each table's own order. */
export const SETTING_ROWS: readonly CatalogueEntry[] = Object.freeze(
  (Object.keys(SETTINGS) as SettingChannel[]).flatMap((channel) =>
    Object.entries(SETTINGS[channel] as Record<string, AnySetting>).map(([key, setting]) =>
      Object.freeze({ channel, key, setting }),
    ),
  ),
);
