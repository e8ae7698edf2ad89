/**
 * A fault-injecting HTTP proxy between the World's AWS clients and one emulator endpoint
 * (DynamoDB Local, or fauxqs for SQS / S3). Test and benchmark infrastructure only.
 *
 * Faults, each with a rate (0..1), an optional cap on how many to inject, and an optional filter
 * on the operation (`PutItem`, `TransactWriteItems`, `SendMessage`, `ReceiveMessage`,
 * `PutObject`, ...; taken from `X-Amz-Target` for DynamoDB and SQS JSON, from the method for S3):
 * - `throttle`: answered by the proxy, nothing reaches the emulator. DynamoDB: 400
 *   `ThrottlingException` or `ProvisionedThroughputExceededException`; SQS: 400
 *   `ThrottlingException` (`RequestThrottled` in the query-error header); S3: 503 `SlowDown`.
 * - `error5xx`: answered by the proxy with a 500 `InternalServerError` (S3: `InternalError`).
 * - `lose-response`: the request is forwarded and the emulator applies it; the proxy reads the
 *   whole response, then resets the client connection, so the SDK retries a write that already
 *   happened.
 * - `duplicate` (SQS `SendMessage` / `SendMessageBatch` only): the request is forwarded twice, so
 *   the queue holds two copies of each message (at-least-once delivery, worst case); the client
 *   sees the first response.
 *
 * Decisions come from a seeded PRNG (mulberry32), so a run with one seed injects the same
 * sequence of faults for the same sequence of requests.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Service = 'dynamodb' | 'sqs' | 's3';
export type FaultKind = 'throttle' | 'error5xx' | 'lose-response' | 'duplicate';

export interface FaultRule {
  kind: FaultKind;
  /** Probability per matching request. Default 1. */
  rate?: number;
  /** Only these operations (e.g. `['PutItem']`). Default: all. */
  ops?: string[];
  /** Never these operations. */
  exceptOps?: string[];
  /** Inject at most this many times. Default: unlimited. */
  count?: number;
}

export interface ProxyStats {
  requests: number;
  /** Injected faults by `kind:operation`. */
  injected: Record<string, number>;
  /** Requests by operation. */
  ops: Record<string, number>;
}

export interface FaultProxy {
  readonly url: string;
  readonly service: Service;
  readonly stats: ProxyStats;
  /** Replace the rules (e.g. none while fixtures are created, then faults). */
  setRules(rules: FaultRule[]): void;
  /** Total injected faults of one kind (any operation). */
  injected(kind: FaultKind): number;
  close(): Promise<void>;
}

/** mulberry32: small, fast, deterministic. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const S3_OPS: Record<string, string> = {
  GET: 'GetObject',
  PUT: 'PutObject',
  HEAD: 'HeadObject',
  DELETE: 'DeleteObject',
  POST: 'PostObject',
};

/** The AWS operation of a request: `X-Amz-Target` suffix, `Action=` (query protocol), or the S3 verb. */
export function operationOf(service: Service, method: string, headers: IncomingHttpHeaders, body: Buffer): string {
  const target = headers['x-amz-target'];
  if (typeof target === 'string') return target.slice(target.lastIndexOf('.') + 1);
  if (service === 's3') return S3_OPS[method] ?? method;
  const action = /(?:^|&)Action=([A-Za-z]+)/.exec(body.toString('utf8'));
  return action?.[1] ?? method;
}

function jsonError(status: number, type: string, message: string, extra: Record<string, string> = {}) {
  return {
    status,
    headers: { 'content-type': 'application/x-amz-json-1.0', ...extra },
    body: JSON.stringify({ __type: type, message }),
  };
}

function xmlError(status: number, code: string, message: string) {
  return {
    status,
    headers: { 'content-type': 'application/xml' },
    body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>fault-proxy</RequestId></Error>`,
  };
}

function cannedResponse(service: Service, kind: 'throttle' | 'error5xx', rand: () => number) {
  if (kind === 'throttle') {
    if (service === 'dynamodb') {
      return rand() < 0.5
        ? jsonError(
            400,
            'com.amazonaws.dynamodb.v20120810#ThrottlingException',
            'Rate of requests exceeds the allowed throughput.',
          )
        : jsonError(
            400,
            'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
            'The level of configured provisioned throughput for the table was exceeded.',
          );
    }
    if (service === 'sqs')
      return jsonError(400, 'com.amazonaws.sqs#ThrottlingException', 'Rate exceeded', {
        'x-amzn-query-error': 'RequestThrottled;Sender',
      });
    return xmlError(503, 'SlowDown', 'Please reduce your request rate.');
  }
  if (service === 'dynamodb')
    return jsonError(500, 'com.amazonaws.dynamodb.v20120810#InternalServerError', 'Internal server error (injected)');
  if (service === 'sqs')
    return jsonError(500, 'com.amazonaws.sqs#InternalError', 'Internal error (injected)', {
      'x-amzn-query-error': 'InternalError;Receiver',
    });
  return xmlError(500, 'InternalError', 'We encountered an internal error. Please try again. (injected)');
}

interface Upstream {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function forward(
  target: URL,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        method,
        path,
        headers: { ...headers, 'content-length': String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function startFaultProxy(opts: {
  target: string;
  service: Service;
  seed?: number;
  rules?: FaultRule[];
}): Promise<FaultProxy> {
  const target = new URL(opts.target);
  const rand = seededRandom(opts.seed ?? 1);
  let rules: FaultRule[] = opts.rules ?? [];
  let left = new Map<FaultRule, number>();
  const stats: ProxyStats = { requests: 0, injected: {}, ops: {} };

  const pick = (op: string): FaultKind | undefined => {
    for (const r of rules) {
      if (r.ops && !r.ops.includes(op)) continue;
      if (r.exceptOps?.includes(op)) continue;
      if (r.kind === 'duplicate' && op !== 'SendMessage' && op !== 'SendMessageBatch') continue;
      if (r.count !== undefined && (left.get(r) ?? r.count) <= 0) continue;
      if (rand() >= (r.rate ?? 1)) continue;
      if (r.count !== undefined) left.set(r, (left.get(r) ?? r.count) - 1);
      return r.kind;
    }
    return undefined;
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const op = operationOf(opts.service, method, req.headers, body);
      stats.requests++;
      stats.ops[op] = (stats.ops[op] ?? 0) + 1;
      const fault = pick(op);
      if (fault) stats.injected[`${fault}:${op}`] = (stats.injected[`${fault}:${op}`] ?? 0) + 1;
      try {
        if (fault === 'throttle' || fault === 'error5xx') {
          const r = cannedResponse(opts.service, fault, rand);
          res.writeHead(r.status, {
            ...r.headers,
            'x-amzn-requestid': 'fault-proxy',
            'content-length': String(Buffer.byteLength(r.body)),
          });
          res.end(r.body);
          return;
        }
        const up = await forward(target, method, req.url ?? '/', req.headers, body);
        if (fault === 'duplicate') await forward(target, method, req.url ?? '/', req.headers, body);
        if (fault === 'lose-response') {
          // Applied upstream; the client never hears about it.
          req.socket.destroy();
          return;
        }
        const headers = { ...up.headers };
        delete headers['transfer-encoding'];
        headers['content-length'] = String(up.body.length);
        res.writeHead(up.status, headers);
        res.end(up.body);
      } catch (err) {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`fault proxy: upstream failed: ${String(err)}`);
      }
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    service: opts.service,
    stats,
    setRules(next) {
      rules = next;
      left = new Map();
    },
    injected: (kind) => Object.entries(stats.injected).reduce((n, [k, v]) => (k.startsWith(`${kind}:`) ? n + v : n), 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * One proxy per emulator endpoint of a stack env, and the env that routes a World through them.
 * S3 and SQS share the fauxqs endpoint but get separate proxies, so their faults are separate.
 */
export async function startFaultProxies(stackEnv: Record<string, string>, seed = 1) {
  const dynamoTarget = stackEnv.AWS_ENDPOINT_URL_DYNAMODB ?? stackEnv.AWS_ENDPOINT_URL;
  const sqsTarget = stackEnv.AWS_ENDPOINT_URL_SQS ?? stackEnv.AWS_ENDPOINT_URL;
  const s3Target = stackEnv.AWS_ENDPOINT_URL_S3 ?? stackEnv.AWS_ENDPOINT_URL;
  if (!dynamoTarget || !sqsTarget || !s3Target)
    throw new Error('startFaultProxies: the stack env has no DynamoDB/SQS/S3 endpoints');
  const [dynamodb, sqs, s3] = await Promise.all([
    startFaultProxy({ target: dynamoTarget, service: 'dynamodb', seed }),
    startFaultProxy({ target: sqsTarget, service: 'sqs', seed: seed + 1 }),
    startFaultProxy({ target: s3Target, service: 's3', seed: seed + 2 }),
  ]);
  return {
    dynamodb,
    sqs,
    s3,
    env: { AWS_ENDPOINT_URL_DYNAMODB: dynamodb.url, AWS_ENDPOINT_URL_SQS: sqs.url, AWS_ENDPOINT_URL_S3: s3.url },
    all: [dynamodb, sqs, s3],
    close: () => Promise.all([dynamodb, sqs, s3].map((p) => p.close())).then(() => undefined),
  };
}
