/** The one error of configuration: names the setting, what was wrong and an example of a good value. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    /** The environment variable, or `tuning.<option>` for an option. */
    readonly variable: string,
    problem: string,
    example: string,
  ) {
    const option = variable.startsWith('tuning.') ? variable.slice('tuning.'.length) : undefined;
    super(
      `${variable} ${problem}. Example: ${option === undefined ? `${variable}=${example}` : `{ tuning: { ${option}: ${example} } }`}`,
    );
  }
}
