/**
 * The dispatch step: hands a built flow request (./flow-request.ts) to the flow route, with the
 * visibility heartbeat (./heartbeat.ts) while it runs, and reads the answer as a {@link Verdict}.
 *
 * Answer -> verdict:
 *   2xx                     ack, or `later` with the body's `{timeoutSeconds}`
 *   network failure         outage of the route (`transport`); `reached: false` when no connection
 *                           was made (./net-errors.ts), so the receive is not a dispatch
 *   408, 429, 5xx           outage of the route (`unavailable`); 500/501 ambiguous (a handler that
 *                           threw answers 500: only an open circuit makes it an outage)
 *   401                     poison `unauthorized`; 400 poison `malformed`; other 4xx poison `failed`
 *   thrown in this process  poison `malformed` (an in-process handler that threw, a request the
 *                           client refused to send); aborted (shutdown, deadline) -> `aborted`
 */
import { consoleLogger } from '../../telemetry/log.js';
import { describeError } from '../shared/error-text.js';
import type { DeliveryDeps, InboundMessage } from './deps.js';
import type { FlowRequest } from './flow-request.js';
import { startHeartbeat } from './heartbeat.js';
import { isConnectError, isNetworkError } from './net-errors.js';
import type { Verdict } from './verdict.js';

export async function dispatch(msg: InboundMessage, built: FlowRequest, deps: DeliveryDeps): Promise<Verdict> {
  const { handler, url, request } = built;
  const stopHeartbeat = startHeartbeat(msg.receiptHandle, deps, deps.logger ?? consoleLogger);
  let status: number;
  let text: string;
  try {
    const res = await handler(request);
    status = res.status;
    text = await res.text();
  } catch (err) {
    if (deps.signal?.aborted) return { kind: 'aborted' };
    // Only a failure on the network is the route's outage; anything raised here (an in-process
    // handler that threw, a request the client refused to send) is this message's.
    if (!isNetworkError(err)) {
      return { kind: 'poison', reason: 'malformed', detail: `the flow request failed locally: ${describeError(err)}` };
    }
    return {
      kind: 'outage',
      reason: 'transport',
      ambiguous: false,
      reached: !isConnectError(err),
      of: 'route',
      detail: `flow route unreachable (${url}): ${String((err as Error)?.cause ?? err)}`,
    };
  } finally {
    stopHeartbeat();
  }

  if (status >= 200 && status < 300) {
    const seconds = parseTimeout(text);
    return seconds === undefined ? { kind: 'ack' } : { kind: 'later', seconds };
  }
  const detail = `HTTP ${status}: ${text.slice(0, 500)}`;
  if (status === 408 || status === 429 || status >= 500) {
    // 500 is also what createQueueHandler answers when the handler threw: ambiguous.
    return {
      kind: 'outage',
      reason: 'unavailable',
      detail,
      ambiguous: status === 500 || status === 501,
      reached: true,
      of: 'route',
    };
  }
  if (status === 401) return { kind: 'poison', reason: 'unauthorized', detail };
  return { kind: 'poison', reason: status === 400 ? 'malformed' : 'failed', detail };
}

/** `{timeoutSeconds: N}` from a 2xx body, else undefined (an ack). */
function parseTimeout(text: string): number | undefined {
  try {
    const n = (JSON.parse(text) as { timeoutSeconds?: unknown })?.timeoutSeconds;
    return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined;
  }
}
