/**
 * The logger every World part writes to. Two formats:
 * - `text` (a terminal, a plain Node host): the line as written, starting with `[eve-world-aws]` so
 *   operators can grep it;
 * - `json` (inside AWS Lambda): one JSON object per line, `{"level", "message", "logger",
 *   "timestamp"}` plus the delivery's fields (run id, message id, delivery id, queue, attempt,
 *   error name) from the call and from {@link withLogContext}, which CloudWatch Logs Insights can
 *   query.
 *
 * Invariants:
 * - A JSON line carries the message and the {@link LogFields} whitelist only: never a payload, a
 *   header or an error's stack (messages name ids and error names, not contents).
 * - Below the level (EVE_WORLD_AWS_LOG_LEVEL, default `info`, see {@link configureLogging}) a call
 *   returns at once.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface LogFields {
  runId?: string;
  /** The message's id, the one `queue()` returned (src/queue/delivery-id.ts). */
  messageId?: string;
  /** The id the delivery was dispatched under, when it is not the message's (an early delivery's own). */
  deliveryId?: string;
  queue?: string;
  attempt?: number;
  errorName?: string;
}

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  debug?(msg: string, fields?: LogFields): void;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'text' | 'json';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
const FIELD_KEYS = ['runId', 'messageId', 'deliveryId', 'queue', 'attempt', 'errorName'] as const;

const context = new AsyncLocalStorage<LogFields>();

/** Run `fn` with `fields` added to every JSON line logged inside it (a delivery's ids). */
export function withLogContext<T>(fields: LogFields, fn: () => T): T {
  const outer = context.getStore();
  return context.run(outer ? { ...outer, ...fields } : fields, fn);
}

export interface LoggerOptions {
  format: LogFormat;
  level: LogLevel;
  /** Where a line goes, by level. Default: console (stderr for warn and error). */
  write?: (level: Exclude<LogLevel, 'silent'>, line: string) => void;
  now?: () => number;
}

const toConsole = (level: Exclude<LogLevel, 'silent'>, line: string) => console[level](line);

export function createLogger(opts: LoggerOptions): Logger {
  const min = RANK[opts.level];
  const write = opts.write ?? toConsole;
  const now = opts.now ?? Date.now;
  const emit = (level: Exclude<LogLevel, 'silent'>) => (msg: string, fields?: LogFields) => {
    if (RANK[level] < min) return;
    if (opts.format === 'text') return write(level, msg);
    const line: Record<string, unknown> = {
      level: level.toUpperCase(),
      message: msg.replace(/^\[eve-world-aws\] /, ''),
      logger: 'eve-world-aws',
      timestamp: new Date(now()).toISOString(),
    };
    const merged = { ...context.getStore(), ...fields };
    for (const k of FIELD_KEYS) if (merged[k] !== undefined) line[k] = merged[k];
    write(level, JSON.stringify(line));
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

let current: Logger = createLogger({ level: 'info', format: 'text' });

/**
 * Set the default logger's level and format from the config (`config.logLevel`; JSON inside
 * Lambda): the World and the Lambda handler do it when they are built. Until then: text, info.
 */
export function configureLogging(config: { logLevel: LogLevel; inLambda: boolean }): void {
  current = createLogger({ level: config.logLevel, format: config.inLambda ? 'json' : 'text' });
}

/** The default logger: {@link configureLogging}'s settings, read on every line. */
export const consoleLogger: Logger = {
  debug: (m, f) => current.debug?.(m, f),
  info: (m, f) => current.info(m, f),
  warn: (m, f) => current.warn(m, f),
  error: (m, f) => current.error(m, f),
};
