/**
 * The embedded emulator's Lambda Invoke endpoint, driven by the real `@aws-sdk/client-lambda`
 * over the wire (the endpoint the global setup started, found through AWS_ENDPOINT_URL_LAMBDA):
 * a Function URL event reaches the target registered for (function, qualifier) as an HTTP request
 * and its answer comes back in the Function URL response shape; unknown functions, versions and
 * removed versions are Lambda's ResourceNotFoundException.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerLambdaTarget, removeLambdaTarget } from '../../../emulator/lambda-service.js';
import { errorName } from '../../../src/aws/sdk-errors.js';
import { stackEndpoint } from '../../helpers/aws.js';

const endpoint = stackEndpoint('AWS_ENDPOINT_URL_LAMBDA');
const lambda = new LambdaClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 1,
});

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local "version" of the app: answers with its name, echoing what it received. */
async function app(name: string): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.url?.startsWith('/binary')) {
        res.writeHead(201, { 'content-type': 'application/octet-stream', 'set-cookie': 'a=1' });
        res.end(Buffer.from([0, 255, 1]));
        return;
      }
      res.writeHead(req.url?.startsWith('/missing') ? 404 : 200, { 'content-type': 'application/json', 'x-app': name });
      res.end(JSON.stringify({ app: name, got: body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function urlEvent(path: string, body: string, extra: Record<string, unknown> = {}) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: 'x=1',
    headers: { 'content-type': 'application/json', 'x-test': 'yes' },
    requestContext: { http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1' } },
    body: Buffer.from(body).toString('base64'),
    isBase64Encoded: true,
    ...extra,
  };
}

async function invoke(functionName: string, qualifier: string | undefined, payload: unknown) {
  const out = await lambda.send(
    new InvokeCommand({
      FunctionName: functionName,
      Qualifier: qualifier,
      InvocationType: 'RequestResponse',
      Payload: Buffer.from(JSON.stringify(payload)),
    }),
  );
  return {
    out,
    payload: JSON.parse(Buffer.from(out.Payload ?? new Uint8Array()).toString('utf8')) as Record<string, unknown>,
  };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } },
  );

describe('Lambda emulator: Invoke', () => {
  const fn = `host-${randomBytes(4).toString('hex')}`;
  let v1: Awaited<ReturnType<typeof app>>;
  let v2: Awaited<ReturnType<typeof app>>;
  beforeAll(async () => {
    v1 = await app('v1');
    v2 = await app('v2');
    await registerLambdaTarget(endpoint, fn, '1', v1.url);
    await registerLambdaTarget(endpoint, fn, '2', v2.url);
    await registerLambdaTarget(endpoint, fn, 'live', v2.url);
  });
  afterAll(async () => {
    lambda.destroy();
    await v1?.close();
    await v2?.close();
  });

  it('delivers a Function URL event to the qualified version as an HTTP request and answers its response', async () => {
    const { out, payload } = await invoke(fn, '1', urlEvent('/.well-known/workflow/v1/flow', '{"a":1}'));
    expect(out.StatusCode).toBe(200);
    expect(out.FunctionError).toBeUndefined();
    expect(out.ExecutedVersion).toBe('1');
    expect(payload).toMatchObject({ statusCode: 200, isBase64Encoded: false });
    expect(JSON.parse(payload.body as string)).toEqual({ app: 'v1', got: '{"a":1}' });
    expect((payload.headers as Record<string, string>)['x-app']).toBe('v1');
    const seen = v1.seen.at(-1);
    expect(seen).toMatchObject({ method: 'POST', url: '/.well-known/workflow/v1/flow?x=1', body: '{"a":1}' });
    expect(seen?.headers['x-test']).toBe('yes');
    expect(v2.seen).toHaveLength(0);
  });

  it('routes by qualifier: the version in the name, an alias, and the Qualifier query', async () => {
    expect(JSON.parse((await invoke(`${fn}:2`, undefined, urlEvent('/p', 'b'))).payload.body as string).app).toBe('v2');
    expect(JSON.parse((await invoke(fn, 'live', urlEvent('/p', 'c'))).payload.body as string).app).toBe('v2');
    const arn = `arn:aws:lambda:us-east-1:000000000000:function:${fn}`;
    expect(JSON.parse((await invoke(arn, '1', urlEvent('/p', 'd'))).payload.body as string).app).toBe('v1');
  });

  it('passes a non-2xx status through, and returns binary bodies base64 with cookies apart', async () => {
    const missing = await invoke(fn, '1', urlEvent('/missing', ''));
    expect(missing.out.FunctionError).toBeUndefined();
    expect(missing.payload.statusCode).toBe(404);
    const bin = await invoke(fn, '1', urlEvent('/binary', 'x'));
    expect(bin.payload).toMatchObject({ statusCode: 201, isBase64Encoded: true, cookies: ['a=1'] });
    expect([...Buffer.from(bin.payload.body as string, 'base64')]).toEqual([0, 255, 1]);
  });

  it('answers ResourceNotFoundException (404) for an unknown function, an unknown version and a removed one', async () => {
    const noFn = await failure(invoke(`nope-${fn}`, '1', urlEvent('/p', '')));
    expect(errorName(noFn)).toBe('ResourceNotFoundException');
    expect(noFn?.$metadata?.httpStatusCode).toBe(404);
    expect(noFn?.message).toMatch(/Function not found: arn:aws:lambda:us-east-1:000000000000:function:nope-/);
    const noVersion = await failure(invoke(fn, '99', urlEvent('/p', '')));
    expect(errorName(noVersion)).toBe('ResourceNotFoundException');
    expect(noVersion?.message).toContain(`function:${fn}:99`);

    await registerLambdaTarget(endpoint, fn, '3', v1.url);
    expect((await invoke(fn, '3', urlEvent('/p', ''))).payload.statusCode).toBe(200);
    await removeLambdaTarget(endpoint, fn, '3');
    expect(errorName(await failure(invoke(fn, '3', urlEvent('/p', ''))))).toBe('ResourceNotFoundException');
  });

  it('refuses a malformed qualifier and a qualifier that contradicts the name', async () => {
    expect(errorName(await failure(invoke(fn, 'bad qualifier!', urlEvent('/p', ''))))).toBe(
      'InvalidParameterValueException',
    );
    expect(errorName(await failure(invoke(`${fn}:1`, '2', urlEvent('/p', ''))))).toBe('InvalidParameterValueException');
  });

  it("reports a payload that is not a Function URL event, and an app that does not answer, as the function's error", async () => {
    const bad = await invoke(fn, '1', { hello: 'world' });
    expect(bad.out.StatusCode).toBe(200);
    expect(bad.out.FunctionError).toBe('Unhandled');
    expect(bad.payload.errorType).toBe('Runtime.InvalidEvent');

    const gone = await app('gone');
    await gone.close();
    await registerLambdaTarget(endpoint, fn, '4', gone.url);
    const dead = await invoke(fn, '4', urlEvent('/p', ''));
    expect(dead.out.FunctionError).toBe('Unhandled');
    expect(dead.payload.errorType).toBe('Runtime.AdapterError');
  });
});
