/** Which variable chose a resource's name, for messages that tell the operator what to change. */
import { VARIABLES } from './variables.js';
import type { WorldConfig } from './world-config.js';

export type ResourceSetting = 'tableName' | 'queue' | 'deadLetterQueue' | 'bucket';

/**
 * The variable that chose a resource's name, as `NAME=value`: its own variable, or
 * EVE_WORLD_AWS_PREFIX when the name is the one the prefix gives (then the variable of its own is
 * unset, or set to that same name).
 */
export function nameChosenBy(config: Pick<WorldConfig, 'prefix' | ResourceSetting>, setting: ResourceSetting): string {
  const own = VARIABLES[setting];
  if (config[setting] !== own.default.replace('<prefix>', config.prefix)) return `${own.name}=${config[setting]}`;
  const isDefault = config.prefix === VARIABLES.prefix.default;
  return `${VARIABLES.prefix.name}=${config.prefix}${isDefault ? ' (the default)' : ''}`;
}
