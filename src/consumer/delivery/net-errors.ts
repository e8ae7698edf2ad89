/**
 * Which errors of a flow request are the network's: the one table of Node and undici error codes
 * and its two predicates. The dispatch step (./dispatch.ts) reads them to tell a route
 * outage (parked, never dead-lettered) from a failure raised in this process (the message's), and
 * a request that never left (not a dispatch) from one the route may have received.
 *
 * Invariant: only the error's `code` (and its causes' codes) is read, never its message text.
 */

/** Network failures before a connection existed: the request was never sent. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Error codes of a request that reached for the network and failed there (Node and undici). */
const NETWORK_CODES = new Set([...CONNECT_CODES, 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT']);

/** TLS, HTTP parser and undici failures are the network's too; undici's argument errors are not. */
const NETWORK_CODE_PREFIX = /^(UND_ERR_|ERR_TLS_|ERR_SSL_|ERR_HTTP2_|HPE_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;
const LOCAL_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'UND_ERR_ABORTED']);

/** True when `err` (or a cause of it) failed before a connection was made: the route was not reached. */
export function isConnectError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECT_CODES.has(code)) return true;
    const first = (e as { errors?: Array<{ code?: unknown }> }).errors?.[0]?.code;
    if (typeof first === 'string' && CONNECT_CODES.has(first)) return true;
  }
  return false;
}

/** True when `err` (or a cause of it) is a network failure, not one raised in this process. */
export function isNetworkError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string' || LOCAL_CODES.has(code)) continue;
    if (NETWORK_CODES.has(code) || NETWORK_CODE_PREFIX.test(code)) return true;
  }
  return false;
}
