/**
 * `createQueueHandler(prefix, handler)`: the HTTP side of a delivery (the flow route).
 *
 * Request: POST, typed-JSON body, headers `x-vqs-queue-name` (must start with `prefix`),
 * `x-vqs-message-id`, `x-vqs-message-attempt` (1-based), plus `x-eve-timestamp`/`x-eve-signature`
 * when a signing secret is configured.
 *
 * Responses:
 * - 401 unsigned, forged, stale or replayed request (secret configured); the handler never runs.
 * - 400 missing headers, unhandled queue, empty or malformed body; the handler never runs.
 * - 200 `{"timeoutSeconds":N}` the handler asked for redelivery after N seconds (not an ack).
 * - 200 `{"result":...}` for `invoke: true` payloads; 200 `{"ok":true}` otherwise (ack).
 * - 500 with the error text when the handler threw (redelivered after the visibility timeout).
 */
import { type MessageId, type Queue, type QueuePrefix, ValidQueueName } from '@workflow/world';
import { decodePayload } from '../queue/encoding.js';
import { ReplayGuard, verifySignature } from './signing.js';

export type QueueMessageHandler = Parameters<Queue['createQueueHandler']>[1];

export interface HandlerOptions {
  /** When set, every request must carry a valid v1 signature. */
  signingSecret?: string;
  now?: () => number;
}

const json = (value: unknown, status = 200) => Response.json(value, { status });

export function createQueueHandler(
  prefix: QueuePrefix | string,
  handler: QueueMessageHandler,
  opts: HandlerOptions = {},
): (req: Request) => Promise<Response> {
  const replay = new ReplayGuard();
  const now = opts.now ?? Date.now;
  const decoder = new TextDecoder('utf-8', { fatal: true });

  return async (req) => {
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await req.arrayBuffer());
    } catch {
      return json({ error: 'Unreadable request body' }, 400);
    }
    if (opts.signingSecret !== undefined) {
      const t = now();
      const v = verifySignature(opts.signingSecret, req.headers, bytes, t);
      if (!v.ok) return json({ error: `Unauthorized: ${v.reason}` }, 401);
      if (!replay.accept(v.signature, v.timestamp, t)) return json({ error: 'Unauthorized: replayed request' }, 401);
    }

    const queueName = req.headers.get('x-vqs-queue-name');
    const messageId = req.headers.get('x-vqs-message-id');
    const attemptRaw = req.headers.get('x-vqs-message-attempt');
    const attempt = Number(attemptRaw);
    if (!queueName || !ValidQueueName.safeParse(queueName).success || !messageId || !attemptRaw || !Number.isInteger(attempt) || attempt < 1) {
      return json({ error: 'Missing required headers' }, 400);
    }
    if (!queueName.startsWith(prefix)) return json({ error: 'Unhandled queue' }, 400);
    if (bytes.byteLength === 0) return json({ error: 'Missing request body' }, 400);

    let body: unknown;
    try {
      body = decodePayload(decoder.decode(bytes));
    } catch {
      return json({ error: 'Malformed request body' }, 400);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return json({ error: 'Malformed request body: expected a JSON object' }, 400);
    }

    try {
      const result = await handler(body, {
        attempt,
        queueName: queueName as ValidQueueName,
        messageId: messageId as MessageId,
      });
      if ((body as { invoke?: unknown }).invoke === true) return json({ result });
      const timeoutSeconds = (result as { timeoutSeconds?: unknown } | null | undefined)?.timeoutSeconds;
      if (typeof timeoutSeconds === 'number' && Number.isFinite(timeoutSeconds) && timeoutSeconds >= 0) {
        return json({ timeoutSeconds });
      }
      return json({ ok: true });
    } catch (err) {
      return json(String(err), 500);
    }
  };
}
