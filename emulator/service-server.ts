/**
 * The HTTP server under the embedded AWS emulators of our own: KMS and Secrets Manager (JSON 1.1,
 * ./json-service.ts) and EventBridge Scheduler (REST-JSON, ./scheduler.ts). The protocol on top
 * names each request's operation and answers it; this part is what every one of them needs.
 *
 * Invariants:
 * - Listens on 127.0.0.1 only.
 * - Requires a SigV4 `Authorization` header, without verifying it (like the other local
 *   emulators, any credentials are accepted).
 * - Reads at most `maxBodyBytes` of a body; a larger one is refused (413) before its operation
 *   runs.
 * - An operation refuses by throwing a {@link ServiceError}: the answer is the protocol's error
 *   body with its status and `x-amzn-errortype`, the shape the AWS SDK parses into its exception
 *   classes. Anything else thrown is the service's internal error (500), never a crash of the
 *   server.
 * - `calls` counts every request by operation, refused or not.
 * - An operation may answer asynchronously (a Promise) and with a body of its own
 *   ({@link RawAnswer}: status, headers and bytes, e.g. Lambda Invoke's function payload).
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

/** An answer that is not the protocol's JSON: its own status, headers and body. */
export class RawAnswer {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}

/** One request, its body read whole (at most `maxBodyBytes`). */
export interface ServiceRequest {
  readonly method: string;
  /** The path without the query, still percent-encoded. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

export interface ServiceProtocol {
  /** The service's name in messages, e.g. `KMS`. */
  readonly service: string;
  readonly maxBodyBytes: number;
  /** Content type of every answer, e.g. `application/x-amz-json-1.1`. */
  readonly contentType: string;
  /** The exception names this service uses for a body over the limit and for an internal error. */
  readonly tooLargeType: string;
  readonly internalType: string;
  /** The operation a request asks for, `''` when it names none (counted as `(none)`). */
  operation(req: http.IncomingMessage): string;
  /**
   * Runs `op` and returns the JSON answer (status 200) or a {@link RawAnswer}, or a Promise of
   * either; throws (or rejects with) {@link ServiceError} to refuse.
   */
  answer(op: string, req: ServiceRequest): unknown;
  /** The error body, e.g. `{__type, message}`. */
  errorBody(err: ServiceError): unknown;
  /** Port on 127.0.0.1 (0 = any free port). */
  readonly port?: number;
}

export interface ServiceServer {
  readonly endpoint: string;
  readonly port: number;
  /** Requests served, by operation (successful or not). */
  readonly calls: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

function reply(res: http.ServerResponse, contentType: string, status: number, payload: unknown): void {
  if (payload instanceof RawAnswer) {
    res.writeHead(payload.status, {
      'content-type': contentType,
      ...payload.headers,
      'content-length': Buffer.byteLength(payload.body),
      'x-amzn-requestid': randomUUID(),
    });
    res.end(payload.body);
    return;
  }
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(body);
}

function run(p: ServiceProtocol, req: http.IncomingMessage, op: string, text: string | undefined): unknown {
  if (text === undefined)
    throw new ServiceError(p.tooLargeType, `Request body is larger than ${p.maxBodyBytes} bytes`, 413);
  if (!/^AWS4-HMAC-SHA256 /.test(String(req.headers.authorization ?? '')))
    throw new ServiceError('MissingAuthenticationTokenException', 'Request is missing a SigV4 Authorization header');
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  return p.answer(op, {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    text,
  });
}

export async function startServiceServer(p: ServiceProtocol): Promise<ServiceServer> {
  const calls = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const op = p.operation(req);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= p.maxBodyBytes) chunks.push(c);
    });
    req.on('end', () => {
      const counted = op || '(none)';
      calls.set(counted, (calls.get(counted) ?? 0) + 1);
      const text = size > p.maxBodyBytes ? undefined : Buffer.concat(chunks).toString('utf8');
      const refuse = (err: unknown) => {
        const e = err instanceof ServiceError ? err : new ServiceError(p.internalType, 'internal error', 500);
        res.setHeader('x-amzn-errortype', e.type);
        reply(res, p.contentType, e.status, p.errorBody(e));
      };
      let answer: unknown;
      try {
        answer = run(p, req, op, text);
      } catch (err) {
        refuse(err);
        return;
      }
      if (answer instanceof Promise) {
        answer.then((a) => reply(res, p.contentType, 200, a), refuse).catch(() => res.destroy());
      } else {
        reply(res, p.contentType, 200, answer);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: p.port ?? 0, host: '127.0.0.1' }, () => {
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
