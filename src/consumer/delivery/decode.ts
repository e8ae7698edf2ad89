/**
 * The decode step: one received SQS copy -> one {@link Envelope} (from its attributes or a
 * scheduler envelope) and the attempt a dispatch of this receive would be; or why it is not decoded
 * here (a newer format, parked for a newer consumer; or malformed, poison).
 *
 * Invariant: a message of a newer format than this build reads (src/schema/formats.ts) is never
 * decoded. The attempt is the copy's offset plus SQS's receive count: every earlier receive of this
 * copy was a dispatch (a receive that is not one replaces the copy, ./replace.ts), and the offset
 * counts the dispatches before this copy.
 */

import { type Envelope, envelopeFromMessage, messageFormatOf } from '../../queue/encoding.js';
import { newerMessageFormat } from '../../schema/formats.js';
import type { InboundMessage } from './deps.js';

export type Decoded =
  /** A newer format than this build reads; `reason` names both versions (for the log line). */
  | { kind: 'newer'; reason: string }
  | { kind: 'malformed'; detail: string }
  | { kind: 'envelope'; envelope: Envelope; attempt: number };

export function decode(msg: InboundMessage): Decoded {
  const format = messageFormatOf(msg.body, msg.attributes);
  const newer = format === undefined ? undefined : newerMessageFormat(format);
  if (newer) return { kind: 'newer', reason: newer };
  const decoded = envelopeFromMessage(msg.body, msg.attributes);
  if (typeof decoded === 'string') return { kind: 'malformed', detail: decoded };
  return { kind: 'envelope', envelope: decoded, attempt: decoded.attemptOffset + Math.max(1, msg.receiveCount) };
}
