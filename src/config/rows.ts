/**
 * The documentation rows of the settings, as docs/configuration.md prints them (docs.ts renders
 * them): derived from the catalogue's rows ({@link SETTING_ROWS}, catalogue.ts), the rows the parser
 * and the code that takes an option read, so names, defaults and ranges are written once.
 */

import { SETTING_ROWS, type SettingChannel } from './catalogue.js';
import type { AnySetting, ExternalSetting, OptionSetting, TextSetting } from './setting.js';

/** One row of the documentation, as docs/configuration.md prints it. */
export interface EnvDoc {
  readonly name: string;
  /** The default as the docs show it, in Markdown: a value in code font, prose for a rule (`—`: none). */
  readonly default: string;
  /** Accepted values, e.g. `1-1000`. */
  readonly values: string;
  readonly description: string;
}

export function documented(s: AnySetting): EnvDoc {
  const values =
    s.kind === 'int'
      ? `${s.min}-${s.max}`
      : s.kind === 'flag'
        ? '`1` / `0`'
        : (s as TextSetting | ExternalSetting | OptionSetting<unknown>).values;
  const def =
    s.kind === 'flag'
      ? '`0`'
      : s.default !== undefined && s.default !== '-'
        ? `\`${s.default}\``
        : s.kind === 'text' || s.kind === 'option'
          ? (s.unset ?? '—')
          : '—';
  return { name: s.name, default: def, values, description: s.description };
}

/** The documented rows of one channel of the catalogue, in its table's order. */
export function docsOf(channel: SettingChannel): readonly EnvDoc[] {
  return Object.freeze(SETTING_ROWS.filter((r) => r.channel === channel).map((r) => documented(r.setting)));
}

/** The documented environment (`SETTINGS.variables`). */
export const ENV_DOCS: readonly EnvDoc[] = docsOf('variables');
/** The documented tuning options (`SETTINGS.tuning`). */
export const TUNING_DOCS: readonly EnvDoc[] = docsOf('tuning');
/** The documented consumer options (`createWorld({ consumer })`, `SETTINGS.consumer`). */
export const CONSUMER_DOCS: readonly EnvDoc[] = docsOf('consumer');
/** The documented settings among `createWorld()`'s own options (`SETTINGS.world`). */
export const WORLD_DOCS: readonly EnvDoc[] = docsOf('world');
/** The documented options of the orphan sweep (`SETTINGS.sweep`). */
export const SWEEP_DOCS: readonly EnvDoc[] = docsOf('sweep');
