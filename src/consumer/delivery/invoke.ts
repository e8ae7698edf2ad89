/**
 * Delivery to one published version of the host by Lambda Invoke (deployment affinity in the Lambda
 * shape, docs/design.md "Deployment affinity on Lambda"): a {@link FlowHandler}, so the delivery
 * pipeline sends, signs and settles as for the flow URL.
 *
 * The request the pipeline built (URL `lambda:<function>:<version><flow path>`, signed for that
 * destination, src/consumer/shared/signing.ts) becomes a Function URL event (payload 2.0), which
 * the Lambda Web Adapter in the host turns into the same HTTP request; the answer (the Function URL
 * response shape, or the streamed HTTP-integration framing of a host in RESPONSE_STREAM mode: a
 * JSON prelude, 8 NUL bytes, the body) becomes the HTTP response the pipeline reads.
 *
 * Invariants:
 * - One Invoke per delivery (the client makes one attempt): the pipeline decides what a failure
 *   means. An Invoke that fails is never this message's fault: throttling answers 429, anything
 *   else (the function's own error, a service error, access denied) 502, so the copy is kept as for
 *   an outage of the flow URL and never reaches the DLQ.
 * - `ResourceNotFoundException` for the version is final (Lambda never reuses a version number):
 *   the deployment is marked retired in the registry (conditional, safe twice) before anything
 *   else, then the delivery is sent, signed again for its new destination, to the flow URL (the
 *   `live` alias), where core's deployment guard re-routes it, the World refuses that re-route and
 *   core fails the run with `DEPLOYMENT_MISMATCH` in that one delivery. A registry write that fails
 *   answers 503 (kept, retried), never a fall-through to the live URL.
 */
import type { InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import { describeError, errorName, isThrottling } from '../../aws/sdk-errors.js';
import { FLOW_PATH } from '../../config/limits.js';
import type { FlowHandler } from './deps.js';

/** A published version of a function: the deployment id `lambda:<function>:<version>` (src/deployment/id.ts). */
export interface LambdaVersion {
  readonly functionName: string;
  readonly version: string;
}

const LAMBDA_DEPLOYMENT = /^lambda:([A-Za-z0-9_-]{1,64}):([0-9]{1,10})$/;

/** The version a deployment id names, when it is a published Lambda version. */
export function parseLambdaDeployment(id: string | undefined): LambdaVersion | undefined {
  const m = id === undefined ? null : LAMBDA_DEPLOYMENT.exec(id);
  return m ? { functionName: m[1] as string, version: m[2] as string } : undefined;
}

/** The URL a delivery to `v` is built and signed for: `lambda:<function>:<version><flow path>`. */
export function lambdaFlowUrl(v: LambdaVersion): string {
  return `lambda:${v.functionName}:${v.version}${FLOW_PATH}`;
}

export interface InvokeFlowOptions {
  readonly target: LambdaVersion;
  lambda(): Promise<LambdaClient>;
  /** The version does not exist (any more): answers the delivery from its headers and body (see the invariants). */
  onGone(headers: Headers, body: Uint8Array): Promise<Response>;
}

const text = (status: number, message: string) =>
  new Response(message, { status, headers: { 'content-type': 'text/plain' } });

/** The flow handler that delivers to `target` by Invoke. */
export function invokeFlow(opts: InvokeFlowOptions): FlowHandler {
  const { functionName, version } = opts.target;
  const prefix = `${functionName}:${version}`;
  return async (req) => {
    const body = new Uint8Array(await req.arrayBuffer());
    const url = new URL(req.url);
    const rawPath = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : FLOW_PATH;
    const payload = urlEvent(req, rawPath, body);
    // Loaded on first use, like the client: a worker that never delivers by version never loads it.
    const [client, { InvokeCommand }] = await Promise.all([opts.lambda(), import('@aws-sdk/client-lambda')]);
    let out: InvokeCommandOutput;
    try {
      out = await client.send(
        new InvokeCommand({
          FunctionName: functionName,
          Qualifier: version,
          InvocationType: 'RequestResponse',
          Payload: new TextEncoder().encode(JSON.stringify(payload)),
        }),
        { abortSignal: req.signal },
      );
    } catch (err) {
      if (req.signal.aborted) throw err;
      if (errorName(err) === 'ResourceNotFoundException') return opts.onGone(req.headers, body);
      return text(
        isThrottling(err) || errorName(err) === 'TooManyRequestsException' ? 429 : 502,
        `Lambda Invoke of ${prefix} failed: ${describeError(err)}`,
      );
    }
    const bytes = out.Payload ?? new Uint8Array();
    if (out.FunctionError) {
      return text(502, `${prefix} failed (${out.FunctionError}): ${Buffer.from(bytes).toString('utf8').slice(0, 500)}`);
    }
    return responseOf(bytes) ?? text(502, `${prefix} answered no Function URL response`);
  };
}

/** The Function URL event (payload 2.0) of a delivery request. */
function urlEvent(req: Request, rawPath: string, body: Uint8Array): Record<string, unknown> {
  const headers: Record<string, string> = {};
  req.headers.forEach((v, k) => {
    headers[k] = v;
  });
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: 'anonymous',
      apiId: 'eve-world-aws-worker',
      domainName: 'lambda-invoke',
      domainPrefix: 'lambda-invoke',
      http: {
        method: req.method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'eve-world-aws',
      },
      requestId: crypto.randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
    body: Buffer.from(body).toString('base64'),
    isBase64Encoded: true,
  };
}

interface UrlResponse {
  statusCode?: unknown;
  headers?: unknown;
  cookies?: unknown;
  body?: unknown;
  isBase64Encoded?: unknown;
}

/** The HTTP response an Invoke answered, in either shape the header names; undefined when it is neither. */
export function responseOf(bytes: Uint8Array): Response | undefined {
  const buf = Buffer.from(bytes);
  const framed = buf.indexOf(Buffer.alloc(8));
  let shape: UrlResponse;
  let raw: Buffer | undefined;
  try {
    if (framed >= 0) {
      shape = JSON.parse(buf.subarray(0, framed).toString('utf8')) as UrlResponse;
      raw = buf.subarray(framed + 8);
    } else {
      shape = JSON.parse(buf.toString('utf8')) as UrlResponse;
    }
  } catch {
    return undefined;
  }
  if (typeof shape !== 'object' || shape === null) return undefined;
  const status = typeof shape.statusCode === 'number' ? shape.statusCode : raw !== undefined ? 200 : undefined;
  if (status === undefined || status < 200 || status > 599) return undefined;
  const headers = new Headers();
  if (typeof shape.headers === 'object' && shape.headers !== null)
    for (const [k, v] of Object.entries(shape.headers)) if (typeof v === 'string') headers.set(k, v);
  if (Array.isArray(shape.cookies))
    for (const c of shape.cookies) if (typeof c === 'string') headers.append('set-cookie', c);
  const body =
    raw ??
    (typeof shape.body === 'string'
      ? Buffer.from(shape.body, shape.isBase64Encoded === true ? 'base64' : 'utf8')
      : Buffer.alloc(0));
  return new Response(status === 204 || status === 304 ? null : new Uint8Array(body), { status, headers });
}
