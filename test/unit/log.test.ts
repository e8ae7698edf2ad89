/**
 * The logger (src/telemetry/log.ts): JSON lines with the delivery's fields in Lambda, the line as written on
 * a terminal, the level setting, and nothing outside the field whitelist.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import {
  configureLogging,
  consoleLogger,
  createLogger,
  type LogFields,
  withLogContext,
} from '../../src/telemetry/log.js';

function capture(format: 'json' | 'text', level: 'debug' | 'info' | 'warn' | 'error' | 'silent' = 'info') {
  const lines: { level: string; line: string }[] = [];
  const logger = createLogger({ format, level, write: (l, line) => lines.push({ level: l, line }), now: () => 0 });
  return { logger, lines };
}

describe('logger', () => {
  it('json: level, message, the call and context fields, nothing else', () => {
    const { logger, lines } = capture('json');
    withLogContext({ messageId: 'm-1', queue: '__wkf_workflow_x', attempt: 2 }, () =>
      logger.warn('[eve-world-aws] attempt 2 failed', {
        runId: 'wrun_1',
        errorName: 'TypeError',
        payload: 'x',
      } as LogFields),
    );
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0].line)).toEqual({
      level: 'WARN',
      message: 'attempt 2 failed',
      logger: 'eve-world-aws',
      timestamp: '1970-01-01T00:00:00.000Z',
      runId: 'wrun_1',
      messageId: 'm-1',
      queue: '__wkf_workflow_x',
      attempt: 2,
      errorName: 'TypeError',
    });
  });

  it('text: the line as written', () => {
    const { logger, lines } = capture('text');
    logger.error('[eve-world-aws] DLQ: run wrun_1', { runId: 'wrun_1' });
    expect(lines).toEqual([{ level: 'error', line: '[eve-world-aws] DLQ: run wrun_1' }]);
  });

  it('the level drops lines below it', () => {
    const { logger, lines } = capture('json', 'warn');
    logger.debug?.('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    expect(lines.map((l) => l.level)).toEqual(['warn', 'error']);
    const silent = capture('text', 'silent');
    silent.logger.error('e');
    expect(silent.lines).toEqual([]);
  });

  it('settings: level from EVE_WORLD_AWS_LOG_LEVEL, JSON inside Lambda, a clear error for a bad value', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ EVE_WORLD_AWS_LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(() => loadConfig({ EVE_WORLD_AWS_LOG_LEVEL: 'loud' })).toThrow(
      'EVE_WORLD_AWS_LOG_LEVEL must be one of debug, info, warn, error, silent, got "loud". Example: EVE_WORLD_AWS_LOG_LEVEL=warn',
    );
    const seen: string[] = [];
    const spy = (m: string) => seen.push(m);
    const [info, warn] = [console.info, console.warn];
    console.info = spy;
    console.warn = spy;
    try {
      configureLogging(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'worker', EVE_WORLD_AWS_LOG_LEVEL: 'warn' }));
      consoleLogger.info('[eve-world-aws] dropped');
      consoleLogger.warn('[eve-world-aws] kept', { messageId: 'm-1' });
      configureLogging(loadConfig({}));
      consoleLogger.info('[eve-world-aws] on a terminal');
    } finally {
      console.info = info;
      console.warn = warn;
    }
    expect(seen).toHaveLength(2);
    expect(JSON.parse(seen[0])).toMatchObject({ level: 'WARN', message: 'kept', messageId: 'm-1' });
    expect(seen[1]).toBe('[eve-world-aws] on a terminal');
  });
});
