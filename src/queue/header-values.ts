/**
 * HTTP header values of a delivery, lossless for any string.
 *
 * Logical queue names, message ids and `QueueOptions.headers` values are arbitrary strings (a
 * workflow file named in CJK gives `__wkf_workflow_workflow//./workflows/注文//注文する`), but an HTTP
 * header value must be a byte string without controls, and `Headers` trims surrounding white space.
 * So a value travels as is only when it is printable ASCII with no white space at either end and
 * does not begin with the marker; any other value travels as `UTF-8''<percent-encoded UTF-8>` (the
 * RFC 8187 ext-value form). The mapping is injective, so the signature, computed over the value on
 * the wire, covers the decoded value too.
 *
 * Header names cannot be encoded this way (a proxy would not recognise them): `queue()` refuses a
 * `QueueOptions.headers` name that is not an HTTP token.
 */

const ENCODED_VALUE_MARKER = "UTF-8''";

/** Printable ASCII, no white space at either end (empty is fine). */
const PLAIN_VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/;

/** Half a UTF-16 pair: a string with one has no UTF-8 form, the only kind a delivery cannot carry. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** RFC 9110 `token`: the characters a header name may have. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The wire form of a header value (see above). */
export function encodeHeaderValue(value: string): string {
  if (PLAIN_VALUE.test(value) && !value.startsWith(ENCODED_VALUE_MARKER)) return value;
  // encodeURIComponent throws on a lone surrogate: such a string has no UTF-8 form at all.
  return ENCODED_VALUE_MARKER + encodeURIComponent(value);
}

/** Inverse of {@link encodeHeaderValue}; undefined when an encoded value is malformed. */
export function decodeHeaderValue(wire: string): string | undefined {
  if (!wire.startsWith(ENCODED_VALUE_MARKER)) return wire;
  try {
    return decodeURIComponent(wire.slice(ENCODED_VALUE_MARKER.length));
  } catch {
    return undefined;
  }
}

/** Characters an SQS message attribute cannot hold (XML 1.0 minus the surrogate range). */
const NOT_SQS_TEXT = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/**
 * Why `queue()` cannot send to `queueName` with `headers`, or undefined. Everything else, however
 * exotic, travels losslessly (see above).
 */
export function deliveryInputProblem(
  queueName: string,
  headers: Record<string, string> | undefined,
): string | undefined {
  const bad = NOT_SQS_TEXT.exec(queueName);
  if (bad) {
    const cp = bad[0].codePointAt(0) ?? 0;
    return `queue name ${JSON.stringify(queueName)} contains U+${cp.toString(16).toUpperCase().padStart(4, '0')}, which an SQS message attribute cannot carry; use printable characters`;
  }
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!TOKEN.test(name)) {
      return `QueueOptions.headers name ${JSON.stringify(name)} is not an HTTP header name (letters, digits and !#$%&'*+.^_\`|~- only)`;
    }
    if (typeof value !== 'string') return `QueueOptions.headers["${name}"] must be a string, got ${typeof value}`;
    if (LONE_SURROGATE.test(value)) {
      return `QueueOptions.headers["${name}"] cannot travel: it contains a lone UTF-16 surrogate (no UTF-8 form)`;
    }
  }
  return undefined;
}
