/**
 * Format stamps and their checks (src/schema/formats.ts, src/preflight/format-check.ts): pure, no emulator. The
 * refusals against real processes and a real table are in test/integration/formats.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { tableFormatProblem } from '../../src/preflight/format-check.js';
import { encodeEnvelope, envelopeAttributes, envelopeFromMessage, messageFormatOf } from '../../src/queue/encoding.js';
import {
  assertItemFormat,
  FORMATS,
  FormatError,
  formatStamp,
  itemFormatOf,
  MESSAGE_FORMAT,
  MIN_READER_OF_WRITES,
  newerMessageFormat,
  READER_FORMAT,
} from '../../src/schema/formats.js';

const strings = (attrs: Record<string, { StringValue: string }>) =>
  Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, v.StringValue]));

describe('item formats', () => {
  it('an unstamped item is format 1; a stamped one says its format, raw or unmarshalled', () => {
    expect(itemFormatOf({ PK: { S: 'x' } })).toBe(1);
    expect(itemFormatOf({ ...formatStamp('log') })).toBe(FORMATS.log.current);
    expect(itemFormatOf({ fv: 3 })).toBe(3);
    expect(itemFormatOf({ fv: { N: 'x' } })).toBeUndefined();
  });

  it('reads every format from the oldest to the current, and refuses a newer one naming both', () => {
    for (let f = FORMATS.log.oldest; f <= FORMATS.log.current; f++)
      expect(() => assertItemFormat({ fv: { N: String(f) } }, 'log', 'log item X')).not.toThrow();
    const newer = FORMATS.records.current + 1;
    let err: unknown;
    try {
      assertItemFormat({ fv: { N: String(newer) } }, 'records', 'run view RUN#r / RUN#meta');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FormatError);
    expect(String((err as Error).message)).toMatch(
      new RegExp(
        `run view RUN#r / RUN#meta is records format ${newer}; .*reads records formats 1 to ${FORMATS.records.current}`,
      ),
    );
    expect(() => assertItemFormat({ fv: { N: '0' } }, 'log', 'log item X')).toThrow(FormatError);
  });
});

describe('message formats', () => {
  const env = { queueName: '__wkf_workflow_x', messageId: 'msg_1', attemptOffset: 3, body: '{"a":1}' };

  it('both forms carry the format; unstamped messages are format 1', () => {
    const attrs = strings(envelopeAttributes(env));
    expect(attrs['eve.fmt']).toBe(String(MESSAGE_FORMAT));
    expect(messageFormatOf(env.body, attrs)).toBe(MESSAGE_FORMAT);
    const body = encodeEnvelope(env);
    expect(body.startsWith('{"tag":"eve-world-aws/v1"')).toBe(true); // what readers before 0.2.0 match
    expect(messageFormatOf(body, {})).toBe(MESSAGE_FORMAT);
    const { 'eve.fmt': _, ...unstamped } = attrs;
    expect(messageFormatOf(env.body, unstamped)).toBe(1);
    expect(envelopeFromMessage(env.body, unstamped)).toMatchObject({ format: 1, messageId: 'msg_1' });
    expect(messageFormatOf(body.replace(`"f":${MESSAGE_FORMAT},`, ''), {})).toBe(1);
  });

  it('a message with every attribute set stays within SQS limit of 10 attributes', () => {
    const attrs = envelopeAttributes({
      ...env,
      deliverAt: 1,
      s3Key: 'queue/x',
      body: undefined,
      headers: { a: 'b' },
      logTail: '3 wrun_x',
    });
    expect(Object.keys(attrs).length).toBeLessThanOrEqual(10);
  });

  it('a newer format is named, never decoded', () => {
    expect(newerMessageFormat(MESSAGE_FORMAT)).toBeUndefined();
    expect(newerMessageFormat(1)).toBeUndefined();
    expect(newerMessageFormat(MESSAGE_FORMAT + 1)).toMatch(
      new RegExp(
        `message format ${MESSAGE_FORMAT + 1} is newer than this build reads \\(messages 1 to ${MESSAGE_FORMAT}\\)`,
      ),
    );
    expect(messageFormatOf('{}', { 'eve.fmt': '3' })).toBe(3);
    expect(messageFormatOf('{}', { 'eve.fmt': 'three' })).toBeUndefined();
  });
});

describe('table format', () => {
  const table = (minReader: number, f = 1) => ({
    recorded: true,
    formats: { log: f, records: f, messages: f },
    minReader,
    affinity: false,
  });
  it('accepts a table from before versioning and any table this build may read', () => {
    expect(tableFormatProblem('t', { ...table(1), recorded: false })).toBeUndefined();
    expect(tableFormatProblem('t', table(READER_FORMAT, READER_FORMAT + 1))).toBeUndefined();
  });
  it('refuses a table whose oldest allowed reader is newer than this build, naming both versions and the step', () => {
    expect(tableFormatProblem('t', table(READER_FORMAT + 1, READER_FORMAT + 1))).toBe(
      `table t needs reader format ${READER_FORMAT + 1} or later (formats present: log ${READER_FORMAT + 1}, records ${READER_FORMAT + 1}, messages ${READER_FORMAT + 1}); ` +
        `this build of @portfolio/eve-world-aws reads format ${READER_FORMAT}. Upgrade this process to a build that reads format ${READER_FORMAT + 1} (docs/operations.md, "Upgrading and versions").`,
    );
    expect(MIN_READER_OF_WRITES).toBeLessThanOrEqual(READER_FORMAT);
  });
});
