/**
 * The transport of the embedded AWS JSON 1.1 emulators (KMS, Secrets Manager): a loopback HTTP
 * server that takes `POST /` with `X-Amz-Target: <targetPrefix>.<Operation>` and a JSON object
 * body, hands the body to that operation, and answers its result as JSON.
 *
 * Invariants:
 * - Listens on 127.0.0.1 only.
 * - Requires a SigV4 `Authorization` header, without verifying it (like the other local
 *   emulators, any credentials are accepted).
 * - Reads at most `maxBodyBytes` of a body; a larger one is refused (413).
 * - An operation refuses by throwing a {@link ServiceError}: the answer is `{__type, message}` with
 *   its status and `x-amzn-errortype`, the shape the AWS SDK parses into its exception classes.
 *   Anything else thrown is the service's internal error (500), never a crash of the server.
 * - `calls` counts every request by operation, refused or not.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An AWS error answer: `type` is the exception name the SDK maps it to. */
export class ServiceError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

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

export interface JsonService {
  readonly endpoint: string;
  readonly port: number;
  /** Requests served, by operation (successful or not). */
  readonly calls: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

function reply(res: http.ServerResponse, status: number, payload: unknown): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(body);
}

/** Parses and checks one request, then runs its operation (throws {@link ServiceError}). */
function answer(o: JsonServiceOptions, req: http.IncomingMessage, op: string, text: string | undefined): unknown {
  if (text === undefined)
    throw new ServiceError(o.tooLargeType, `Request body is larger than ${o.maxBodyBytes} bytes`, 413);
  if (req.method !== 'POST' || req.url !== '/')
    throw new ServiceError('UnknownOperationException', `${o.service} accepts POST / only`, 404);
  if (!/^AWS4-HMAC-SHA256 /.test(String(req.headers.authorization ?? '')))
    throw new ServiceError('MissingAuthenticationTokenException', 'Request is missing a SigV4 Authorization header');
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
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new ServiceError('SerializationException', 'Request body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ServiceError('SerializationException', 'Request body must be a JSON object');
  return handler(body as JsonBody);
}

export async function startJsonService(o: JsonServiceOptions): Promise<JsonService> {
  const calls = new Map<string, number>();
  const prefix = `${o.targetPrefix}.`;
  const server = http.createServer((req, res) => {
    const target = String(req.headers['x-amz-target'] ?? '');
    const op = target.startsWith(prefix) ? target.slice(prefix.length) : '';
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= o.maxBodyBytes) chunks.push(c);
    });
    req.on('end', () => {
      calls.set(op || '(none)', (calls.get(op || '(none)') ?? 0) + 1);
      try {
        const text = size > o.maxBodyBytes ? undefined : Buffer.concat(chunks).toString('utf8');
        reply(res, 200, answer(o, req, op, text));
      } catch (err) {
        const e = err instanceof ServiceError ? err : new ServiceError(o.internalType, 'internal error', 500);
        res.setHeader('x-amzn-errortype', e.type);
        reply(res, e.status, { __type: e.type, message: e.message });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: o.port ?? 0, host: '127.0.0.1' }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    calls,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
