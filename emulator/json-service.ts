/**
 * The AWS JSON 1.1 protocol of the embedded KMS and Secrets Manager emulators, on the shared
 * loopback server (./service-server.ts): `POST /` with `X-Amz-Target: <targetPrefix>.<Operation>`
 * and a JSON object body, handed to that operation; its result is the JSON answer.
 *
 * Invariants (beyond the server's: loopback, SigV4 header, body cap, errors never crash it):
 * - Only `POST /` is served; an unknown target is `UnknownOperationException`, a known service's
 *   operation this emulator lacks `UnsupportedOperationException`.
 * - Errors are `{__type, message}`, the JSON 1.1 shape.
 */
import { ServiceError, type ServiceServer, startServiceServer } from './service-server.js';

export type JsonBody = Record<string, unknown>;

export interface JsonServiceOptions {
  /** The service's name in messages, e.g. `KMS`. */
  readonly service: string;
  /** The `X-Amz-Target` prefix, e.g. `TrentService`. */
  readonly targetPrefix: string;
  readonly maxBodyBytes: number;
  /** The exception names this service uses for a body over the limit and for an internal error. */
  readonly tooLargeType: string;
  readonly internalType: string;
  readonly operations: Readonly<Record<string, (body: JsonBody) => unknown>>;
  /** Port on 127.0.0.1 (0 = any free port). */
  readonly port?: number;
}

export type JsonService = ServiceServer;

export function startJsonService(o: JsonServiceOptions): Promise<JsonService> {
  const prefix = `${o.targetPrefix}.`;
  return startServiceServer({
    service: o.service,
    maxBodyBytes: o.maxBodyBytes,
    contentType: 'application/x-amz-json-1.1',
    tooLargeType: o.tooLargeType,
    internalType: o.internalType,
    port: o.port,
    operation: (req) => {
      const target = String(req.headers['x-amz-target'] ?? '');
      return target.startsWith(prefix) ? target.slice(prefix.length) : '';
    },
    errorBody: (e) => ({ __type: e.type, message: e.message }),
    answer(op, req) {
      if (req.method !== 'POST' || req.path !== '/')
        throw new ServiceError('UnknownOperationException', `${o.service} accepts POST / only`, 404);
      const handler = Object.hasOwn(o.operations, op) ? o.operations[op] : undefined;
      if (!handler) {
        throw new ServiceError(
          op ? 'UnsupportedOperationException' : 'UnknownOperationException',
          op
            ? `${op} is not implemented by the eve-world-aws ${o.service} emulator`
            : `X-Amz-Target must be ${o.targetPrefix}.<Operation>, got "${String(req.headers['x-amz-target'] ?? '')}"`,
        );
      }
      let body: unknown;
      try {
        body = req.text.trim() === '' ? {} : JSON.parse(req.text);
      } catch {
        throw new ServiceError('SerializationException', 'Request body is not JSON');
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new ServiceError('SerializationException', 'Request body must be a JSON object');
      return handler(body as JsonBody);
    },
  });
}
