/**
 * A minimal AWS Lambda Invoke endpoint for the embedded emulator and the tests: enough of the
 * Lambda REST-JSON protocol (as `@aws-sdk/client-lambda` sends it) for the worker to deliver a
 * message to one version of the host over the wire, through `AWS_ENDPOINT_URL_LAMBDA`:
 *
 *   POST   /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=]   Invoke (RequestResponse)
 *   DELETE /2015-03-31/functions/{FunctionName}?Qualifier=                  DeleteFunction of one version
 *
 * A function here is a set of targets: each (function, version or alias) is a local HTTP server
 * the test registers, standing for that version's Nitro server behind the Lambda Web Adapter. The
 * payload must be a Function URL event (payload format 2.0); like the Web Adapter, the emulator
 * sends it to the target as an HTTP request (method, `rawPath?rawQueryString`, headers, cookies,
 * body) and answers the Function URL response shape (`statusCode`, `headers`, `body`,
 * `isBase64Encoded`, `cookies`), with `X-Amz-Executed-Version`.
 *
 * Targets are registered over the wire too (the stack runs in another process than the tests):
 *
 *   PUT    /eve-emulator/functions/{name}/targets/{qualifier}   body {"url": "http://127.0.0.1:…"}
 *   DELETE /eve-emulator/functions/{name}/targets/{qualifier}   (a version deleted: 404s from then on)
 *
 * ({@link registerLambdaTarget}, {@link removeLambdaTarget}); these paths are this emulator's own,
 * not AWS's.
 *
 * Invariants:
 * - Errors are Lambda's own shapes (`x-amzn-errortype` + `{Type, Message}`): an unknown function
 *   or qualifier is `ResourceNotFoundException` (404, "Function not found: <arn>"), a malformed
 *   qualifier or name `InvalidParameterValueException` (400), a payload over 6 MB
 *   `RequestTooLargeException` (413).
 * - A payload that is not a Function URL event, or a target that cannot be reached, is the
 *   function's error, as on Lambda: status 200 with `X-Amz-Function-Error: Unhandled` and
 *   `{errorType, errorMessage}` as the payload. Never a crash of the server.
 * - `FunctionName` may be a name, `name:qualifier` or a function ARN (with or without its
 *   qualifier); a qualifier in the name and a different `Qualifier` query is refused (400).
 * - Listens on 127.0.0.1 only; Invoke requires a SigV4 `Authorization` header (not verified).
 *
 * - DeleteFunction deletes one version (or alias) and answers 204; without a `Qualifier` (the whole
 *   function) it is refused here (400), since nothing in this package deletes a function.
 *
 * Not implemented: `Event` and `DryRun` invocation types (501), response streaming
 * (InvokeWithResponseStream), every other Lambda operation, IAM, and concurrency limits.
 */
import {
  RawAnswer,
  ServiceError,
  type ServiceRequest,
  type ServiceServer,
  startServiceServer,
} from './service-server.js';

export interface LambdaServerOptions {
  /** Port on 127.0.0.1 (0 = any free port). */
  port?: number;
  region?: string;
  accountId?: string;
}

/** One Invoke that reached a registered target (or failed on the way). */
export interface LambdaInvocation {
  readonly functionName: string;
  /** The qualifier asked for (`$LATEST` when none). */
  readonly qualifier: string;
  readonly path: string;
  /** The target's HTTP status, or undefined when it could not be reached. */
  readonly status?: number;
}

export interface LambdaServer extends ServiceServer {
  /** (function, qualifier) -> base URL of its HTTP target. */
  register(functionName: string, qualifier: string, url: string): void;
  remove(functionName: string, qualifier: string): void;
  readonly invocations: readonly LambdaInvocation[];
}

/** Lambda's synchronous invocation payload limit (request and response): 6 MB. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
const FUNCTION_PATH = /^\/2015-03-31\/functions\/([^/]+)$/;
const CONTROL_PATH = /^\/eve-emulator\/functions\/([^/]+)\/targets\/([^/]+)$/;
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const QUALIFIER = /^(\$LATEST|[0-9]{1,10}|(?!^[0-9]+$)[A-Za-z0-9_-]{1,128})$/;
const FUNCTION_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:([A-Za-z0-9_-]{1,64})(?::([^:]+))?$/;

/** Content types the Web Adapter returns as text (everything else base64). */
const TEXTUAL = /^(text\/|application\/(json|javascript|xml|x-www-form-urlencoded)|[^;]*\+json)/i;

export function startLambdaServer(opts: LambdaServerOptions = {}): Promise<LambdaServer> {
  const region = opts.region ?? 'us-east-1';
  const accountId = opts.accountId ?? '000000000000';
  const targets = new Map<string, string>();
  const invocations: LambdaInvocation[] = [];
  const key = (fn: string, q: string) => `${fn}\0${q}`;
  const arnOf = (fn: string, q?: string) =>
    `arn:aws:lambda:${region}:${accountId}:function:${fn}${q === undefined ? '' : `:${q}`}`;

  const register = (fn: string, qualifier: string, url: string) => {
    if (!NAME.test(fn)) throw new ServiceError('InvalidParameterValueException', `Invalid function name: ${fn}`);
    if (!QUALIFIER.test(qualifier))
      throw new ServiceError('InvalidParameterValueException', `Invalid qualifier: ${qualifier}`);
    if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?(\/|$)/.test(url))
      throw new ServiceError('InvalidParameterValueException', `A target must be a loopback http URL, got ${url}`);
    targets.set(key(fn, qualifier), url.replace(/\/$/, ''));
  };
  const remove = (fn: string, qualifier: string) => {
    targets.delete(key(fn, qualifier));
  };

  const control = (req: ServiceRequest, fn: string, qualifier: string): unknown => {
    if (req.method === 'DELETE') {
      remove(fn, qualifier);
      return {};
    }
    if (req.method !== 'PUT') throw new ServiceError('InvalidRequestContentException', 'PUT or DELETE only', 405);
    let url: unknown;
    try {
      url = (JSON.parse(req.text) as { url?: unknown }).url;
    } catch {
      throw new ServiceError('InvalidRequestContentException', 'body must be {"url": "..."}');
    }
    if (typeof url !== 'string')
      throw new ServiceError('InvalidRequestContentException', 'body must be {"url": "..."}');
    register(fn, qualifier, url);
    return {};
  };

  /** DeleteFunction with a qualifier: that version is gone (its Invokes 404 from then on). */
  const deleteVersion = (rawName: string, query: string | undefined): RawAnswer => {
    if (query === undefined && !rawName.includes(':'))
      throw new ServiceError(
        'InvalidParameterValueException',
        'this emulator deletes one version (Qualifier), never a whole function',
      );
    const { fn, qualifier } = resolveName(rawName, query);
    if (!targets.has(key(fn, qualifier)))
      throw new ServiceError('ResourceNotFoundException', `Function not found: ${arnOf(fn, qualifier)}`, 404);
    remove(fn, qualifier);
    return new RawAnswer(204, '', {});
  };

  const invoke = async (req: ServiceRequest, rawName: string): Promise<RawAnswer> => {
    const { fn, qualifier } = resolveName(rawName, req.query.get('Qualifier') ?? undefined);
    const type = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse');
    if (type !== 'RequestResponse')
      throw new ServiceError('UnsupportedOperationException', `InvocationType ${type} is not emulated`, 501);
    const target = targets.get(key(fn, qualifier));
    if (target === undefined) {
      const known = [...targets.keys()].some((k) => k.startsWith(`${fn}\0`));
      throw new ServiceError(
        'ResourceNotFoundException',
        `Function not found: ${arnOf(fn, known || qualifier !== '$LATEST' ? qualifier : undefined)}`,
        404,
      );
    }
    // On Lambda an alias reports the version it resolved to; here an alias is a target of its own.
    const headers = { 'x-amz-executed-version': qualifier };
    const fail = (errorType: string, errorMessage: string) =>
      new RawAnswer(200, JSON.stringify({ errorType, errorMessage }), {
        ...headers,
        'x-amz-function-error': 'Unhandled',
      });
    const event = parseUrlEvent(req.text);
    if (typeof event === 'string') return fail('Runtime.InvalidEvent', event);
    let res: Response;
    try {
      res = await fetch(`${target}${event.path}`, {
        method: event.method,
        headers: event.headers,
        body: event.body,
        redirect: 'manual',
      });
    } catch (err) {
      invocations.push({ functionName: fn, qualifier, path: event.path });
      return fail('Runtime.AdapterError', `the app did not answer: ${String((err as Error)?.cause ?? err)}`);
    }
    invocations.push({ functionName: fn, qualifier, path: event.path, status: res.status });
    const bytes = Buffer.from(await res.arrayBuffer());
    const outHeaders: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (k !== 'set-cookie') outHeaders[k] = v;
    });
    const textual = TEXTUAL.test(res.headers.get('content-type') ?? '');
    const payload = JSON.stringify({
      statusCode: res.status,
      headers: outHeaders,
      cookies: res.headers.getSetCookie(),
      body: textual ? bytes.toString('utf8') : bytes.toString('base64'),
      isBase64Encoded: !textual,
    });
    if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES)
      return fail(
        'Function.ResponseSizeTooLarge',
        `Response payload size exceeded maximum allowed payload size (${MAX_PAYLOAD_BYTES} bytes).`,
      );
    return new RawAnswer(200, payload, headers);
  };

  return startServiceServer({
    service: 'Lambda',
    maxBodyBytes: MAX_PAYLOAD_BYTES,
    contentType: 'application/json',
    tooLargeType: 'RequestTooLargeException',
    internalType: 'ServiceException',
    port: opts.port,
    operation: (req) => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      if (INVOKE_PATH.test(path)) return 'Invoke';
      if (CONTROL_PATH.test(path)) return 'RegisterTarget';
      if (FUNCTION_PATH.test(path)) return 'DeleteFunction';
      return '';
    },
    errorBody: (e) => ({ Type: e.status >= 500 ? 'Service' : 'User', Message: e.message, message: e.message }),
    answer(op, req) {
      if (op === 'RegisterTarget') {
        const m = CONTROL_PATH.exec(req.path) as RegExpExecArray;
        return control(req, decodeURIComponent(m[1] as string), decodeURIComponent(m[2] as string));
      }
      if (op === 'DeleteFunction' && req.method === 'DELETE') {
        const m = FUNCTION_PATH.exec(req.path) as RegExpExecArray;
        return deleteVersion(decodeURIComponent(m[1] as string), req.query.get('Qualifier') ?? undefined);
      }
      if (op === 'Invoke' && req.method === 'POST') {
        const m = INVOKE_PATH.exec(req.path) as RegExpExecArray;
        return invoke(req, decodeURIComponent(m[1] as string));
      }
      throw new ServiceError(
        'UnsupportedOperationException',
        `${req.method} ${req.path} is not implemented by the eve-world-aws Lambda emulator`,
        501,
      );
    },
  }).then((server) => Object.assign(server, { register, remove, invocations }));
}

/** The function and qualifier an Invoke names (see the invariants above). */
function resolveName(raw: string, query: string | undefined): { fn: string; qualifier: string } {
  let fn: string;
  let inName: string | undefined;
  const arn = FUNCTION_ARN.exec(raw);
  if (arn) {
    fn = arn[1] as string;
    inName = arn[2];
  } else {
    const [name, q, ...rest] = raw.split(':');
    if (rest.length > 0) throw new ServiceError('InvalidParameterValueException', `Invalid function name: ${raw}`);
    fn = name as string;
    inName = q;
  }
  if (!NAME.test(fn)) throw new ServiceError('InvalidParameterValueException', `Invalid function name: ${raw}`);
  if (inName !== undefined && query !== undefined && inName !== query)
    throw new ServiceError(
      'InvalidParameterValueException',
      'The derived qualifier from the function name does not match the specified qualifier.',
    );
  const qualifier = query ?? inName ?? '$LATEST';
  if (!QUALIFIER.test(qualifier))
    throw new ServiceError('InvalidParameterValueException', `Invalid qualifier: ${qualifier}`);
  return { fn, qualifier };
}

interface UrlRequest {
  method: string;
  path: string;
  headers: Headers;
  body: ArrayBuffer | undefined;
}

/** The HTTP request a Function URL event (payload 2.0) stands for, or why it is not one. */
function parseUrlEvent(text: string): UrlRequest | string {
  let e: Record<string, unknown>;
  try {
    e = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'the payload is not JSON';
  }
  const http = (e?.requestContext as { http?: { method?: unknown } } | undefined)?.http;
  if (e?.version !== '2.0' || typeof e.rawPath !== 'string' || typeof http?.method !== 'string')
    return 'the payload is not a Function URL event (version 2.0 with rawPath and requestContext.http.method)';
  const headers = new Headers();
  for (const [k, v] of Object.entries((e.headers as Record<string, unknown>) ?? {}))
    if (typeof v === 'string') headers.set(k, v);
  if (Array.isArray(e.cookies) && e.cookies.length > 0) headers.set('cookie', e.cookies.join('; '));
  const raw = typeof e.body === 'string' ? e.body : undefined;
  const body =
    raw === undefined ? undefined : e.isBase64Encoded === true ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  const query = typeof e.rawQueryString === 'string' && e.rawQueryString !== '' ? `?${e.rawQueryString}` : '';
  const method = http.method.toUpperCase();
  return {
    method,
    path: `${e.rawPath}${query}`,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : new Uint8Array(body ?? []).slice().buffer,
  };
}

/** Registers (function, qualifier) -> `url` on the emulator at `endpoint` (over the wire). */
export async function registerLambdaTarget(
  endpoint: string,
  functionName: string,
  qualifier: string,
  url: string,
): Promise<void> {
  await control(endpoint, 'PUT', functionName, qualifier, JSON.stringify({ url }));
}

/** Removes (function, qualifier): Invoke answers ResourceNotFoundException for it from then on. */
export async function removeLambdaTarget(endpoint: string, functionName: string, qualifier: string): Promise<void> {
  await control(endpoint, 'DELETE', functionName, qualifier, undefined);
}

async function control(endpoint: string, method: string, fn: string, q: string, body: string | undefined) {
  const res = await fetch(
    `${endpoint}/eve-emulator/functions/${encodeURIComponent(fn)}/targets/${encodeURIComponent(q)}`,
    {
      method,
      body,
      headers: {
        'content-type': 'application/json',
        // The server requires the SigV4 header's form on every request (never verified).
        authorization:
          'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=0',
      },
    },
  );
  if (!res.ok)
    throw new Error(`Lambda emulator: ${method} target ${fn}:${q} failed: HTTP ${res.status} ${await res.text()}`);
}
