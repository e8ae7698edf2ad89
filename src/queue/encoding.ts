/**
 * Wire encoding of queue messages.
 *
 * Payload body: "typed JSON", the same tagged form the reference Worlds use, so a payload survives
 * JSON while keeping its `Uint8Array`s byte for byte: every `Uint8Array` (including `Buffer`) is
 * written as `{"__type":"Uint8Array","data":"<base64>"}` and revived as a plain `Uint8Array`.
 *
 * Message metadata (logical queue name, stable message id, attempt offset, due time, S3 pointer,
 * pass-through headers) travels in SQS message attributes ({@link MSG_ATTR}). EventBridge Scheduler
 * cannot set message attributes on its SQS target, so a scheduled message instead carries the same
 * fields in a JSON envelope body ({@link encodeEnvelope}). The consumer accepts both forms and
 * normalises them to one {@link Envelope}.
 *
 * Every message carries its format (src/schema/formats.ts): `eve.fmt` in the attributes, `f` in the
 * envelope body (written after `tag`, which older readers match as a prefix). Unstamped = format 1;
 * readers before 0.2.0 ignore both (an unknown attribute or JSON field is skipped by them). The
 * consumer parks a message of a newer format instead of delivering it
 * (src/consumer/delivery/replace.ts).
 */
import { MESSAGE_FORMAT, MESSAGE_FORMAT_ATTR, parseFormat, UNSTAMPED_FORMAT } from '../schema/formats.js';

/**
 * SQS message attribute names (String data type). SQS allows at most 10 attributes per message:
 * all 10 are defined here. The scheduler's envelope body has no such limit.
 */
export const MSG_ATTR = {
  /** Logical queue name, e.g. `__wkf_workflow_x` (not an SQS queue name). */
  queue: 'eve.queue',
  /** Stable logical message id (`msg_<ulid>`), the same on every re-send of the message. */
  id: 'eve.id',
  /** Deliveries the handler already saw on earlier SQS copies of this logical message. */
  attemptOffset: 'eve.attemptOffset',
  /**
   * Failed dispatches of this logical message on earlier copies (the message's own faults),
   * counted by the consumer across replacements, where SQS's receive count starts over
   * (src/consumer/delivery/failures.ts). Absent: none. An older consumer ignores it.
   */
  failures: 'eve.failures',
  /** Epoch ms before which the message must not reach the handler (long waits). */
  deliverAt: 'eve.deliverAt',
  /** S3 key of the body when it was too large for SQS. */
  s3: 'eve.s3',
  /** JSON object of extra HTTP headers from `QueueOptions.headers`. */
  headers: 'eve.headers',
  /** `<slot> <runId>`: how far the sender had seen the run's log (src/context/delivery-scope.ts). */
  logTail: 'eve.tail',
  // `eve.early` (`e` in the envelope), the early-delivery mark of builds before the clock-free
  // early delivery (same message format 2), is neither written nor read: such a copy is delivered
  // as any other (docs/design.md, "Early delivery").
  /** The message's format (src/schema/formats.ts); absent = format 1. */
  format: MESSAGE_FORMAT_ATTR,
  /**
   * The deployment the message is for (src/deployment/): with affinity on, only a consumer of that
   * deployment dispatches it (src/consumer/delivery/affinity.ts). Absent: any consumer (affinity
   * off, or a message from before it).
   */
  deployment: 'eve.dep',
} as const;

/** The World's attribute names start with it; any other attribute is carried as {@link Envelope.foreign}. */
const WORLD_ATTR_PREFIX = 'eve.';

const ENVELOPE_TAG = 'eve-world-aws/v1';

/** One logical queue message, independent of how SQS carried it. */
export interface Envelope {
  queueName: string;
  messageId: string;
  attemptOffset: number;
  /** Failed dispatches on earlier copies ({@link MSG_ATTR.failures}); undefined = none. */
  failures?: number;
  /** Epoch ms; undefined = deliver as soon as received. */
  deliverAt?: number;
  /** Inline wire body (typed JSON text); undefined when {@link s3Key} is set. */
  body?: string;
  s3Key?: string;
  headers?: Record<string, string>;
  /**
   * `<slot> <runId>`: the run log slot the sender had seen committed when it sent the message
   * (src/context/delivery-scope.ts). Advisory: a receiver without it reads the log from DynamoDB.
   */
  logTail?: string;
  /**
   * The format the message was written in, as received (undefined when not decoded from a
   * message). A send always writes this build's format, whatever this field says.
   */
  format?: number;
  /** The deployment the message is for ({@link MSG_ATTR.deployment}); undefined: any. */
  deploymentId?: string;
  /**
   * String message attributes outside the World's `eve.` names, as received (someone else's: an
   * operator's tag, a producer's): carried unchanged by every copy the consumer sends in its place,
   * as SQS's own redrive keeps them.
   */
  foreign?: Record<string, string>;
}

function replacer(this: unknown, key: string, value: unknown): unknown {
  // `Buffer#toJSON` runs before the replacer, so look at the holder's original value.
  const raw = (this as Record<string, unknown>)[key];
  if (raw instanceof Uint8Array) value = raw;
  if (value instanceof Uint8Array) {
    return {
      __type: 'Uint8Array',
      data: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'),
    };
  }
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  const v = value as { __type?: unknown; data?: unknown } | null;
  if (typeof v === 'object' && v !== null && v.__type === 'Uint8Array' && typeof v.data === 'string') {
    return new Uint8Array(Buffer.from(v.data, 'base64'));
  }
  return value;
}

/**
 * U+FFFE / U+FFFF are valid in JSON strings but rejected by SQS, so JSON text is sent with them as
 * `\u` escapes (they can only occur inside string literals, where the escape means the same
 * character).
 */
function escapeForSqs(json: string): string {
  return json.replace(/[\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/** Typed-JSON text of a payload. */
export function encodePayload(payload: unknown): string {
  const text = JSON.stringify(payload, replacer);
  if (text === undefined) throw new TypeError('queue payload is not JSON-serialisable');
  return escapeForSqs(text);
}

/** Inverse of {@link encodePayload}. Throws `SyntaxError` on malformed text. */
export function decodePayload(text: string): unknown {
  return JSON.parse(text, reviver);
}

/** Scheduler-target body: the envelope itself as JSON. */
export function encodeEnvelope(envelope: Envelope): string {
  const json = JSON.stringify({
    tag: ENVELOPE_TAG,
    f: MESSAGE_FORMAT,
    q: envelope.queueName,
    id: envelope.messageId,
    ao: envelope.attemptOffset || undefined,
    fl: envelope.failures || undefined,
    at: envelope.deliverAt,
    s3: envelope.s3Key,
    h: envelope.headers,
    t: envelope.logTail,
    d: envelope.deploymentId,
    x: envelope.foreign,
    b: envelope.body,
  });
  return escapeForSqs(json);
}

/** Parse an envelope body, or return undefined when `text` is not one. */
export function decodeEnvelope(text: string): Envelope | undefined {
  if (!text.startsWith('{"tag":"eve-world-aws/v1"')) return undefined;
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw.q !== 'string' || typeof raw.id !== 'string') return undefined;
  if (typeof raw.b !== 'string' && typeof raw.s3 !== 'string') return undefined;
  const format = raw.f === undefined ? UNSTAMPED_FORMAT : parseFormat(raw.f);
  if (format === undefined) return undefined;
  return {
    format,
    queueName: raw.q,
    messageId: raw.id,
    attemptOffset: typeof raw.ao === 'number' ? raw.ao : 0,
    ...(typeof raw.fl === 'number' && raw.fl > 0 ? { failures: raw.fl } : {}),
    deliverAt: typeof raw.at === 'number' ? raw.at : undefined,
    body: typeof raw.b === 'string' ? raw.b : undefined,
    s3Key: typeof raw.s3 === 'string' ? raw.s3 : undefined,
    headers: isStringRecord(raw.h) ? raw.h : undefined,
    logTail: typeof raw.t === 'string' ? raw.t : undefined,
    deploymentId: typeof raw.d === 'string' ? raw.d : undefined,
    ...(isStringRecord(raw.x) ? { foreign: raw.x } : {}),
  };
}

function isStringRecord(v: unknown): v is Record<string, string> {
  return (
    typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')
  );
}

type StringAttr = { DataType: 'String'; StringValue: string };
const stringAttr = (value: string | number): StringAttr => ({ DataType: 'String', StringValue: String(value) });

/** SQS message attributes for an envelope sent directly to SQS. */
export function envelopeAttributes(envelope: Envelope): Record<string, StringAttr> {
  const attrs: Record<string, StringAttr> = {
    ...Object.fromEntries(Object.entries(envelope.foreign ?? {}).map(([k, v]) => [k, stringAttr(v)])),
    [MSG_ATTR.queue]: stringAttr(envelope.queueName),
    [MSG_ATTR.id]: stringAttr(envelope.messageId),
    [MSG_ATTR.format]: stringAttr(MESSAGE_FORMAT),
  };
  if (envelope.attemptOffset > 0) attrs[MSG_ATTR.attemptOffset] = stringAttr(envelope.attemptOffset);
  if (envelope.failures !== undefined && envelope.failures > 0)
    attrs[MSG_ATTR.failures] = stringAttr(envelope.failures);
  if (envelope.deliverAt !== undefined) attrs[MSG_ATTR.deliverAt] = stringAttr(envelope.deliverAt);
  if (envelope.s3Key !== undefined) attrs[MSG_ATTR.s3] = stringAttr(envelope.s3Key);
  if (envelope.headers && Object.keys(envelope.headers).length > 0) {
    attrs[MSG_ATTR.headers] = stringAttr(escapeForSqs(JSON.stringify(envelope.headers)));
  }
  if (envelope.logTail !== undefined) attrs[MSG_ATTR.logTail] = stringAttr(envelope.logTail);
  if (envelope.deploymentId !== undefined) attrs[MSG_ATTR.deployment] = stringAttr(envelope.deploymentId);
  return attrs;
}

/** Placeholder body for an S3-offloaded message (SQS requires a non-empty body). */
export function s3PlaceholderBody(key: string): string {
  return JSON.stringify({ __s3: key });
}

/**
 * The format of a received message, read before anything else of it (a newer format may change
 * the rest): `eve.fmt`, else the envelope body's `f`, else format 1. Undefined when unreadable.
 */
export function messageFormatOf(body: string, attrs: Record<string, string | undefined>): number | undefined {
  const raw = attrs[MSG_ATTR.format];
  if (raw !== undefined) return parseFormat(raw);
  if (attrs[MSG_ATTR.queue] !== undefined || !body.startsWith(`{"tag":"${ENVELOPE_TAG}"`)) return UNSTAMPED_FORMAT;
  try {
    const f = (JSON.parse(body) as { f?: unknown }).f;
    return f === undefined ? UNSTAMPED_FORMAT : parseFormat(f);
  } catch {
    return UNSTAMPED_FORMAT; // not an envelope after all: decoding reports it
  }
}

/**
 * Rebuild the envelope of a received SQS message from its (string) attributes and body, or from an
 * envelope body (scheduler path). Returns an error string when neither form is present.
 */
export function envelopeFromMessage(body: string, attrs: Record<string, string | undefined>): Envelope | string {
  const queueName = attrs[MSG_ATTR.queue];
  if (queueName === undefined) {
    return decodeEnvelope(body) ?? 'message has no eve.queue attribute and is not an eve-world-aws envelope';
  }
  const messageId = attrs[MSG_ATTR.id];
  if (!messageId) return 'message has no eve.id attribute';
  const num = (name: string): number | undefined | string => {
    const raw = attrs[name];
    if (raw === undefined) return undefined;
    const n = Number(raw);
    return Number.isFinite(n) ? n : `attribute ${name} is not a number ("${raw}")`;
  };
  const attemptOffset = num(MSG_ATTR.attemptOffset);
  const failures = num(MSG_ATTR.failures);
  const deliverAt = num(MSG_ATTR.deliverAt);
  if (typeof attemptOffset === 'string') return attemptOffset;
  if (typeof failures === 'string') return failures;
  if (typeof deliverAt === 'string') return deliverAt;
  let headers: Record<string, string> | undefined;
  const rawHeaders = attrs[MSG_ATTR.headers];
  if (rawHeaders !== undefined) {
    try {
      const h = JSON.parse(rawHeaders);
      if (isStringRecord(h)) headers = h;
    } catch {
      // Extra headers are advisory; a broken value is dropped rather than failing delivery.
    }
  }
  const rawFormat = attrs[MSG_ATTR.format];
  const format = rawFormat === undefined ? UNSTAMPED_FORMAT : parseFormat(rawFormat);
  if (format === undefined) return `attribute ${MSG_ATTR.format} is not a format version ("${rawFormat}")`;
  const s3Key = attrs[MSG_ATTR.s3];
  const foreign = Object.entries(attrs).filter(
    (e): e is [string, string] => !e[0].startsWith(WORLD_ATTR_PREFIX) && e[1] !== undefined,
  );
  return {
    ...(foreign.length > 0 ? { foreign: Object.fromEntries(foreign) } : {}),
    format,
    queueName,
    messageId,
    attemptOffset: attemptOffset ?? 0,
    ...(failures !== undefined && failures > 0 ? { failures } : {}),
    deliverAt,
    s3Key,
    body: s3Key === undefined ? body : undefined,
    headers,
    logTail: attrs[MSG_ATTR.logTail],
    deploymentId: attrs[MSG_ATTR.deployment],
  };
}
