/**
 * The documentation rows of the settings tables, as docs/configuration.md prints them (docs.ts
 * renders them): derived from the rows the parser reads, so names, defaults and ranges are
 * written once.
 */
import { CONSUMER_OPTIONS } from './consumer.js';
import type { AnySetting, ExternalSetting, OptionSetting, TextSetting } from './setting.js';
import { TUNING } from './tuning.js';
import { VARIABLES } from './variables.js';

/** One row of the documentation, as docs/configuration.md prints it. */
export interface EnvDoc {
  readonly name: string;
  /** The default as the docs show it, in Markdown: a value in code font, prose for a rule (`—`: none). */
  readonly default: string;
  /** Accepted values, e.g. `1-1000`. */
  readonly values: string;
  readonly description: string;
}

function documented(s: AnySetting): EnvDoc {
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

/** The documented environment, from {@link VARIABLES}. */
export const ENV_DOCS: readonly EnvDoc[] = Object.values(VARIABLES).map(documented);
/** The documented tuning options, from {@link TUNING}. */
export const TUNING_DOCS: readonly EnvDoc[] = Object.values(TUNING).map(documented);

/** The documented consumer options (`createWorld({ consumer })`), from {@link CONSUMER_OPTIONS}. */
export const CONSUMER_DOCS: readonly EnvDoc[] = Object.values(CONSUMER_OPTIONS).map(documented);
