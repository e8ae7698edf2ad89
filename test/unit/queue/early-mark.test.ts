/**
 * The `eve.early` mark on the SQS copy of an early delivery (src/queue/encoding.ts): it survives
 * both wire forms (message attributes and the scheduler envelope), and an unreadable one is
 * ignored rather than making the message malformed.
 */
import { describe, expect, test } from 'vitest';
import {
  decodeEarlyMark,
  decodeEnvelope,
  type Envelope,
  encodeEnvelope,
  envelopeAttributes,
  envelopeFromMessage,
  MSG_ATTR,
} from '../../../src/queue/encoding.js';

const base: Envelope = { queueName: '__wkf_workflow_x', messageId: 'msg_1', attemptOffset: 0, body: '{}' };
const strings = (e: Envelope) =>
  Object.fromEntries(Object.entries(envelopeAttributes(e)).map(([k, v]) => [k, v.StringValue]));

describe('early mark', () => {
  test('round-trips through message attributes and the scheduler envelope', () => {
    const early = { owner: '3f2a9c1e-0000-4000-8000-000000000001', until: 1_764_000_000_123 };
    const attrs = strings({ ...base, early });
    expect(attrs[MSG_ATTR.early]).toBe(`${early.owner} ${early.until}`);
    expect((envelopeFromMessage('{}', attrs) as Envelope).early).toEqual(early);
    expect(decodeEnvelope(encodeEnvelope({ ...base, early }))?.early).toEqual(early);
    // Unmarked copies carry no attribute and decode without a mark.
    expect(strings(base)[MSG_ATTR.early]).toBeUndefined();
    expect((envelopeFromMessage('{}', strings(base)) as Envelope).early).toBeUndefined();
  });

  test('an unreadable mark is ignored, and the message still decodes', () => {
    for (const raw of ['', 'owner', 'owner notanumber', 'a b c', `${'x'.repeat(200)} 1`, 'owner 12345678901234567']) {
      expect(decodeEarlyMark(raw)).toBeUndefined();
      const env = envelopeFromMessage('{}', { ...strings(base), [MSG_ATTR.early]: raw });
      expect(typeof env).toBe('object');
      expect((env as Envelope).early).toBeUndefined();
    }
  });
});
