/**
 * The kinds of setting a table row can be (a whole number in a range, a `1`/`0` flag, a checked
 * text, one read by someone else, a programmatic option, with or without a range) and their
 * constructors: what a row of the tables catalogue.ts composes is written with, and what load.ts
 * parses and rows.ts documents.
 */

export type Env = Record<string, string | undefined>;

export interface Setting {
  readonly name: string;
  readonly description: string;
  /** A valid value, quoted in error messages. */
  readonly example: string;
}

export interface IntSetting extends Setting {
  readonly kind: 'int';
  readonly default?: number;
  readonly min: number;
  readonly max: number;
}

export interface FlagSetting extends Setting {
  readonly kind: 'flag';
}

export interface TextSetting extends Setting {
  readonly kind: 'text';
  /** The default; `<prefix>` stands for EVE_WORLD_AWS_PREFIX. Absent: unset. */
  readonly default?: string;
  /** Without a default: what happens when it is unset, as the docs show it (Markdown: literals in backticks). */
  readonly unset?: string;
  /** Accepted values, in words (the docs' "Values" column). */
  readonly values: string;
  /** Undefined when `value` is acceptable, else the problem, e.g. `is not a region name`. */
  readonly check?: (value: string) => string | undefined;
}

/** Documented, read by someone else (the SDK, Lambda, core). */
export interface ExternalSetting extends Setting {
  readonly kind: 'external';
  readonly default: string;
  readonly values: string;
}

/**
 * A programmatic option (`createWorld({ consumer })`), not parsed from text: documented here, its
 * default read from this row by the code that takes the option.
 */
export interface OptionSetting<T> extends Setting {
  readonly kind: 'option';
  /** Absent: the default depends on the environment, as {@link unset} says. */
  readonly default?: T;
  /** What happens when it is not given, as the docs show it (Markdown), when there is no default. */
  readonly unset?: string;
  /** Accepted values, in words (the docs' "Values" column). */
  readonly values: string;
}

/**
 * A numeric option with a range: a value outside it is taken as the nearest end
 * ({@link clampToRange}), not refused. The docs' "Values" column is written from the range.
 */
export interface RangedOptionSetting extends OptionSetting<number> {
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** The unit, e.g. `s` or `ms`. */
  readonly unit: string;
}

export type AnySetting = IntSetting | FlagSetting | TextSetting | ExternalSetting | OptionSetting<unknown>;

export const int = <S extends Omit<IntSetting, 'kind' | 'example'> & { example?: string }>(s: S): IntSetting & S => ({
  kind: 'int',
  example: String(s.default ?? s.min),
  ...s,
});
export const flag = (s: Omit<FlagSetting, 'kind' | 'example'>): FlagSetting => ({ kind: 'flag', example: '1', ...s });
export const text = <S extends Omit<TextSetting, 'kind'>>(s: S): TextSetting & S => ({ kind: 'text', ...s });
export const external = (s: Omit<ExternalSetting, 'kind' | 'example'>): ExternalSetting => ({
  kind: 'external',
  example: '',
  ...s,
});
export const option = <S extends Omit<OptionSetting<unknown>, 'kind' | 'example'>>(
  s: S,
): OptionSetting<S['default']> & S => ({
  kind: 'option',
  example: s.default === undefined ? '' : String(s.default),
  ...s,
});
export const rangedOption = (s: Omit<RangedOptionSetting, 'kind' | 'example' | 'values'>): RangedOptionSetting => ({
  kind: 'option',
  example: String(s.default),
  values: `${s.min}-${s.max} (${s.unit}; outside, the nearest end)`,
  ...s,
});

/** `value` (the row's default when undefined) brought into the row's range: outside it, the nearest end. */
export function clampToRange(s: RangedOptionSetting, value: number | undefined): number {
  return Math.max(s.min, Math.min(s.max, value ?? s.default));
}
