/**
 * The documentation rows of the settings, as docs/configuration.md prints them (docs.ts renders
 * them): derived from the catalogue's rows ({@link SETTING_ROWS}, catalogue.ts), the rows the
 * parser and the code that takes an option read, so names, defaults and ranges are written once.
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

export const ENV_DOCS = docsOf('variables');
export const TUNING_DOCS = docsOf('tuning');
export const CONSUMER_DOCS = docsOf('consumer');
export const WORLD_DOCS = docsOf('world');
export const SWEEP_DOCS = docsOf('sweep');
