/**
 * The logger every World part writes to. Lines start with `[eve-world-aws]` so operators can grep
 * them; the default writes to the console.
 */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export const consoleLogger: Logger = {
  info: (m) => console.info(m),
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};
