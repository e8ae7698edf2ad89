/**
 * Closed by default, against the real emulators:
 * - a signed request is accepted once across instances (durable nonce in DynamoDB Local), also when
 *   the SDK retries the nonce put after a lost response (fault injection in SDK middleware);
 * - a replay-guard failure is a 500 with no detail, and nothing runs;
 * - `createWorld()` and the Lambda consumer refuse a non-loopback flow URL without a secret, before
 *   any AWS call, unless EVE_WORLD_AWS_ALLOW_UNSIGNED=1;
 * - over real HTTP, the flow route reads nothing of an unsigned or stale request (a lazily generated
 *   512 MiB body gets its 401 after ~0 bytes), refuses an oversized body by content-length and
 *   while streaming (413), and gives up on a body that does not arrive (408).
 */

import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { ValidQueueName } from '@workflow/world';
import { afterAll, describe, expect, test } from 'vitest';
import { type AwsClients, createClients, destroyClients } from '../../../src/aws/clients.js';
import { ConfigError, FORMER_VARIABLES, loadConfig } from '../../../src/config/index.js';
import { createSqsHandler } from '../../../src/consumer/delivery/sqs-event-handler.js';
import { DynamoNonceStore } from '../../../src/consumer/route/nonces.js';
import { signatureHeaders } from '../../../src/consumer/shared/signing.js';
import { createContext } from '../../../src/context/world-context.js';
import { createWorld } from '../../../src/index.js';
import { encodePayload } from '../../../src/queue/encoding.js';
import { keys } from '../../../src/schema/keys.js';
import { createFixture, stackEnv } from '../../helpers/aws.js';
import { MemoryLogger, makeWorld, serve, type World, waitFor } from '../../helpers/queue.js';

/** Meets the strength rule (SECRET_RULE, src/config/checks.ts), like `openssl rand -hex 32`. */
const SECRET = '5e2b9d0c7a41f6e38b1d4c9a0f2e7b6d3c8a1f5e0b9d2c7a4f6e1b8d3c0a9f2e';
const Q = '__wkf_workflow_sec' as ValidQueueName;

const worlds: World[] = [];
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close().catch(() => undefined)));
});

function signedRequest(
  body: string,
  messageId: string,
  secret = SECRET,
  url = 'http://127.0.0.1/.well-known/workflow/v1/flow',
): Request {
  return new Request(url, {
    method: 'POST',
    headers: {
      'x-vqs-queue-name': Q,
      'x-vqs-message-id': messageId,
      'x-vqs-message-attempt': '1',
      ...signatureHeaders(secret, { queueName: Q, messageId, attempt: 1, body, destination: url }),
    },
    body,
  });
}

/** Counts the commands a client set sends (SDK middleware, outermost). */
function countCommands(clients: AwsClients): string[] {
  const sent: string[] = [];
  for (const c of [clients.ddb, clients.sqs] as { middlewareStack: { add: (...a: any[]) => void } }[]) {
    c.middlewareStack.add(
      (next: any, context: any) => async (args: any) => {
        sent.push(context.commandName);
        return next(args);
      },
      { step: 'initialize', name: 'countCommands' },
    );
  }
  return sent;
}

describe('replays are refused across instances', () => {
  test('a request accepted by one instance gets 401 from another, and its handler never runs', async () => {
    const a = await makeWorld({ start: false, register: false, env: { EVE_WORLD_AWS_SIGNING_SECRET: SECRET } });
    worlds.push(a);
    // A second instance: its own clients and handler, the same table.
    const b = await makeWorld({
      sameAs: a,
      start: false,
      register: false,
      env: { EVE_WORLD_AWS_SIGNING_SECRET: SECRET },
    });
    worlds.push(b);
    const ran: string[] = [];
    const ha = a.queue.createQueueHandler('__wkf_workflow_', async (body: any) => void ran.push(`a:${body.runId}`));
    const hb = b.queue.createQueueHandler('__wkf_workflow_', async (body: any) => void ran.push(`b:${body.runId}`));

    const body = encodePayload({ runId: 'wrun_once' });
    const captured = signedRequest(body, 'msg_REPLAY');
    expect((await ha(captured.clone())).status).toBe(200);
    const replayed = await hb(captured.clone());
    expect(replayed.status).toBe(401);
    expect(await replayed.json()).toEqual({ error: 'Unauthorized' });
    expect((await ha(captured.clone())).status).toBe(401);
    expect(ran).toEqual(['a:wrun_once']);

    // The nonce is one item with a TTL, so the table does not grow.
    const sig = captured.headers.get('x-eve-signature')!;
    const item = await a.fixture.clients.ddb.send(
      new GetItemCommand({
        TableName: a.fixture.config.tableName,
        Key: { PK: { S: keys.deliveryNonce(sig).PK }, SK: { S: 'NONCE' } },
      }),
    );
    const stored = unmarshall(item.Item!);
    expect(stored.ttl).toBe(Number(captured.headers.get('x-eve-timestamp')) + 600);

    // A fresh, correctly signed delivery of the same message (a redelivery) is not a replay.
    expect((await hb(signedRequest(body, 'msg_REPLAY'))).status).toBe(200);
  });

  test('a nonce put retried by the SDK after a lost response still counts as the first', async () => {
    const w = await makeWorld({ start: false, register: false, env: { EVE_WORLD_AWS_SIGNING_SECRET: SECRET } });
    worlds.push(w);
    const clients = createClients(w.fixture.config);
    let puts = 0;
    // Inside the retry loop: the first PutItem reaches DynamoDB, then its response is "lost".
    clients.ddb.middlewareStack.add(
      (next: any, context: any) => async (args: any) => {
        const out = await next(args);
        if (context.commandName === 'PutItemCommand' && ++puts === 1) {
          throw Object.assign(new Error('socket hang up after the request was sent'), {
            name: 'TimeoutError',
            code: 'ECONNRESET',
          });
        }
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'loseFirstResponse' },
    );
    try {
      const store = new DynamoNonceStore({ config: w.fixture.config, clients });
      const ts = Math.floor(Date.now() / 1000);
      expect(await store.claim('v1=lost-response-test', ts)).toBe(true);
      expect(puts).toBe(2); // the SDK did retry, and the retry found its own nonce
      // Any other claim of the same signature is a replay, from this store or another.
      expect(await store.claim('v1=lost-response-test', ts)).toBe(false);
      expect(await new DynamoNonceStore(w.ctx).claim('v1=lost-response-test', ts)).toBe(false);
    } finally {
      destroyClients(clients);
    }
  });

  test('when the replay guard cannot answer, the caller gets a bare 503 (an outage, parked) and nothing runs', async () => {
    const w = await makeWorld({ start: false, register: false, env: { EVE_WORLD_AWS_SIGNING_SECRET: SECRET } });
    worlds.push(w);
    const missing = createContext(
      loadConfig({ ...w.fixture.env, EVE_WORLD_AWS_TABLE: 'no-such-table-here' }),
      w.fixture.clients,
    );
    const logger = new MemoryLogger();
    const { createQueue } = await import('../../../src/queue/index.js');
    const { createConsumer } = await import('../../../src/consumer/index.js');
    const queue = createConsumer(missing, createQueue(missing, { logger }).transport, { consumer: 'none', logger });
    let ran = 0;
    const h = queue.createQueueHandler('__wkf_workflow_', async () => void ran++);
    const res = await h(signedRequest(encodePayload({ runId: 'wrun_x' }), 'msg_NOTABLE'));
    expect(res.status).toBe(503);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: 'Service unavailable' });
    expect(text).not.toMatch(/no-such-table|ResourceNotFound/);
    expect(logger.lines.some((l) => l.startsWith('ERROR') && /ResourceNotFound|non-existent table/i.test(l))).toBe(
      true,
    );
    expect(ran).toBe(0);
  });
});

describe('without a secret, only this process reaches the flow route', () => {
  test('the in-process consumer delivers over loopback HTTP; an outside POST to the same route gets 401', async () => {
    let route: (req: Request) => Promise<Response> = async () => new Response('not ready', { status: 503 });
    const server = await serve((req) => route(req));
    try {
      const w = await makeWorld({ register: false, start: false, env: { EVE_WORLD_AWS_FLOW_URL: server.url } });
      worlds.push(w);
      route = w.queue.createQueueHandler(
        '__wkf_workflow_',
        async (body: any, meta) => void w.deliveries.push({ body, meta, at: Date.now() }),
      );
      await w.queue.start();
      const { messageId } = await w.queue.queue(Q, { runId: 'wrun_local' });
      await waitFor(() => w.deliveries.length === 1, 15_000, 'loopback delivery');
      expect(w.deliveries[0].meta).toMatchObject({ messageId, attempt: 1 });

      // What anyone else on the network (or another process) can send: refused, nothing runs.
      const outside = await fetch(server.url, {
        method: 'POST',
        headers: { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_OUTSIDE', 'x-vqs-message-attempt': '1' },
        body: encodePayload({ runId: 'wrun_evil' }),
      });
      expect(outside.status).toBe(401);
      const guessed = await fetch(
        signedRequest(encodePayload({ runId: 'wrun_evil' }), 'msg_GUESS', 'a-guessed-secret-0123456789', server.url),
      );
      expect(guessed.status).toBe(401);
      expect(w.deliveries.map((d) => d.body.runId)).toEqual(['wrun_local']);
    } finally {
      await server.close();
    }
  });
});

describe('closed by default: no unsigned deliveries over a network', () => {
  const PUBLIC = 'https://flow.example.com/.well-known/workflow/v1/flow';

  test('createWorld() refuses a non-loopback flow URL without a secret, naming the variable', () => {
    const config = loadConfig({ ...stackEnv(), EVE_WORLD_AWS_FLOW_URL: PUBLIC });
    const clients = createClients(config);
    const sent = countCommands(clients);
    try {
      let err: unknown;
      try {
        createWorld({ config, clients });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe('EVE_WORLD_AWS_SIGNING_SECRET');
      expect((err as Error).message).toContain(PUBLIC);
      expect((err as Error).message).toContain('EVE_WORLD_AWS_ALLOW_UNSIGNED=1');
      expect(sent).toEqual([]);
    } finally {
      destroyClients(clients);
    }
  });

  test('a secret, the explicit opt-out or a loopback URL is accepted', async () => {
    for (const env of [
      { EVE_WORLD_AWS_FLOW_URL: PUBLIC, EVE_WORLD_AWS_SIGNING_SECRET: SECRET },
      { EVE_WORLD_AWS_FLOW_URL: PUBLIC, EVE_WORLD_AWS_ALLOW_UNSIGNED: '1' },
      { EVE_WORLD_AWS_FLOW_URL: 'http://localhost:3000/.well-known/workflow/v1/flow' },
      { EVE_WORLD_AWS_FLOW_URL: 'http://127.0.0.2:3000/.well-known/workflow/v1/flow' },
      { EVE_WORLD_AWS_FLOW_URL: 'http://[::1]:3000/.well-known/workflow/v1/flow' },
      {}, // the default, http://127.0.0.1:$PORT/...
    ]) {
      const world = createWorld({ config: loadConfig({ ...stackEnv(), ...env }) });
      await world.close();
    }
    // A loopback-looking name that is not loopback is still a network host.
    expect(() =>
      createWorld({ config: loadConfig({ ...stackEnv(), EVE_WORLD_AWS_FLOW_URL: 'https://127.0.0.1.nip.io/flow' }) }),
    ).toThrow(/EVE_WORLD_AWS_SIGNING_SECRET/);
  });

  test('an http:// flow URL to another host is refused before any client exists, unless explicitly allowed', async () => {
    const cleartext = 'http://flow.internal.example:3000/.well-known/workflow/v1/flow';
    let err: unknown;
    try {
      loadConfig({ ...stackEnv(), EVE_WORLD_AWS_FLOW_URL: cleartext, EVE_WORLD_AWS_SIGNING_SECRET: SECRET });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe('EVE_WORLD_AWS_FLOW_URL');
    expect((err as Error).message).toContain('EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1');
    // The documented opt-out (a private network): accepted, still signed.
    const world = createWorld({
      config: loadConfig({
        ...stackEnv(),
        EVE_WORLD_AWS_FLOW_URL: cleartext,
        EVE_WORLD_AWS_SIGNING_SECRET: SECRET,
        EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL: '1',
      }),
    });
    await world.close();
  });

  test('the Lambda consumer refuses an http:// flowUrl option to another host before any AWS call', async () => {
    const config = loadConfig({ ...stackEnv(), EVE_WORLD_AWS_SIGNING_SECRET: SECRET });
    const ctx = createContext(config);
    const sent = countCommands(ctx.clients);
    try {
      const handler = createSqsHandler({
        context: ctx,
        flowUrl: 'http://10.0.0.5/.well-known/workflow/v1/flow',
        logger: new MemoryLogger(),
      });
      await expect(handler({ Records: [] })).rejects.toThrow(/^EVE_WORLD_AWS_FLOW_URL is cleartext http/);
      expect(sent).toEqual([]);
    } finally {
      destroyClients(ctx.clients);
    }
  });

  test('start() logs one loud warning while unsigned deliveries are allowed, and none otherwise', async () => {
    // Resources that exist: start() (and the Lambda's first event) check them before anything else.
    const fx = await createFixture({}, 'sec');
    destroyClients(fx.clients);
    const warnings = async (env: Record<string, string>) => {
      const logger = new MemoryLogger();
      const world = createWorld({
        config: loadConfig({ ...fx.env, ...env }),
        consumer: { consumer: 'none', logger },
      });
      await world.start();
      await world.close();
      return logger.lines.filter((l) => l.startsWith('WARN') && l.includes('EVE_WORLD_AWS_ALLOW_UNSIGNED=1'));
    };
    expect(await warnings({})).toEqual([]);
    expect(await warnings({ EVE_WORLD_AWS_SIGNING_SECRET: SECRET })).toEqual([]);
    const loud = await warnings({ EVE_WORLD_AWS_ALLOW_UNSIGNED: '1', EVE_WORLD_AWS_FLOW_URL: PUBLIC });
    expect(loud).toHaveLength(1);
    expect(loud[0]).toMatch(/WARNING: .*anyone who can reach the flow route can run steps/);
    // A variable that is set but not read is named too (an operator thinks it holds).
    const formerName = Object.keys(FORMER_VARIABLES).find((k) => FORMER_VARIABLES[k] === 'maxDelayHopSeconds')!;
    const former = new MemoryLogger();
    const world = createWorld({
      config: loadConfig({ ...fx.env, [formerName]: '5' }),
      consumer: { consumer: 'none', logger: former },
    });
    await world.start();
    await world.close();
    expect(former.lines.filter((l) => l.startsWith('WARN') && l.includes(formerName))).toEqual([
      expect.stringContaining('no longer read: it is the option createWorld({ tuning: { maxDelayHopSeconds } })'),
    ]);
    // The Lambda consumer says the same on its first event.
    const logger = new MemoryLogger();
    const ctx = createContext(
      loadConfig({ ...fx.env, EVE_WORLD_AWS_ALLOW_UNSIGNED: '1', EVE_WORLD_AWS_FLOW_URL: PUBLIC }),
    );
    try {
      await createSqsHandler({ context: ctx, logger })({ Records: [] });
      expect(logger.lines.filter((l) => l.includes('WARNING: EVE_WORLD_AWS_ALLOW_UNSIGNED=1'))).toHaveLength(1);
    } finally {
      destroyClients(ctx.clients);
    }
  });

  test('the Lambda consumer refuses a public flow URL without a secret before any AWS call', async () => {
    const config = loadConfig({ ...stackEnv(), EVE_WORLD_AWS_FLOW_URL: PUBLIC });
    const ctx = createContext(config);
    const sent = countCommands(ctx.clients);
    try {
      const handler = createSqsHandler({ context: ctx, logger: new MemoryLogger() });
      const record = {
        messageId: 'm1',
        receiptHandle: 'r1',
        body: '{"runId":"wrun_x"}',
        attributes: { ApproximateReceiveCount: '1' },
        messageAttributes: {},
      };
      await expect(handler({ Records: [record] })).rejects.toThrow(ConfigError);
      await expect(handler({ Records: [record] })).rejects.toThrow(/EVE_WORLD_AWS_SIGNING_SECRET is required/);
      expect(sent).toEqual([]);
    } finally {
      destroyClients(ctx.clients);
    }
  });
});

/**
 * A Node HTTP server handing the request body to the handler as a stream (as a framework does),
 * counting the bytes the handler pulls. A request left unread is not drained: its connection is
 * closed once the answer is out.
 */
async function streamingServe(handler: (req: Request) => Promise<Response>) {
  const stats = { pulled: 0 };
  const server = createServer(async (req, res) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const counted = (Readable.toWeb(req) as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, c) {
          stats.pulled += chunk.byteLength;
          c.enqueue(chunk);
        },
      }),
    );
    const response = await handler(
      new Request(`http://${req.headers.host}${req.url}`, {
        method: 'POST',
        headers,
        body: counted,
        duplex: 'half',
      } as RequestInit),
    );
    res.writeHead(response.status, { 'content-type': 'application/json', connection: 'close' });
    res.end(new Uint8Array(await response.arrayBuffer()), () => {
      if (!req.complete) req.socket.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/workflow/v1/flow`,
    stats,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * POST `total` bytes generated lazily (64 KiB at a time, as the socket drains), stopping when the
 * answer arrives. Resolves with the status and how many bytes were generated.
 */
function lazyPost(
  url: string,
  headers: Record<string, string>,
  total: number,
  opts: { stallAfter?: number } = {},
): Promise<{ status: number; generated: number }> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  return new Promise((resolve, reject) => {
    let generated = 0;
    let answered = false;
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      answered = true;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, generated }));
      req.destroy();
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const pump = () => {
      while (!answered && generated < total) {
        if (opts.stallAfter !== undefined && generated >= opts.stallAfter) return; // never sends the rest
        generated += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered && generated >= total) req.end();
    };
    pump();
  });
}

describe('the flow route reads nothing it does not trust', () => {
  const HALF_GIB = 512 * 1024 * 1024;
  const delivery = { 'x-vqs-queue-name': Q, 'x-vqs-message-id': 'msg_BIG', 'x-vqs-message-attempt': '1' };

  test('an unsigned or stale 512 MiB body gets its 401 having read nothing of it', async () => {
    const logger = new MemoryLogger();
    let ran = 0;
    const { createQueueHandler } = await import('../../../src/consumer/route/queue-handler.js');
    const server = await streamingServe(
      createQueueHandler('__wkf_workflow_', async () => void ran++, {
        signingSecrets: [SECRET],
        logError: (m) => logger.error(m),
      }),
    );
    try {
      const stale = signatureHeaders(
        SECRET,
        { queueName: Q, messageId: 'msg_BIG', attempt: 1, body: '', destination: server.url },
        Date.now() - 3_600_000,
      );
      for (const headers of [delivery, { ...delivery, ...stale }]) {
        const framings: Record<string, string>[] = [
          { 'content-length': String(HALF_GIB) },
          { 'transfer-encoding': 'chunked' },
        ];
        for (const framing of framings) {
          const before = server.stats.pulled;
          const res = await lazyPost(server.url, { ...headers, ...framing }, HALF_GIB);
          expect(res.status).toBe(401);
          expect(server.stats.pulled - before).toBe(0);
          // What the socket buffers took before the answer, not the body.
          expect(res.generated).toBeLessThan(32 * 1024 * 1024);
        }
      }
      expect(ran).toBe(0);
      expect(logger.lines.filter((l) => l.includes('unsigned request'))).toHaveLength(2);
      expect(logger.lines.filter((l) => l.includes('stale timestamp'))).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  test('a fresh-looking signed request with a body over the cap gets 413: by content-length before reading, while streaming after the cap', async () => {
    const { createQueueHandler } = await import('../../../src/consumer/route/queue-handler.js');
    const max = 1024 * 1024;
    const server = await streamingServe(
      createQueueHandler('__wkf_workflow_', async () => undefined, {
        signingSecrets: [SECRET],
        maxBodyBytes: max,
        logError: () => {},
      }),
    );
    try {
      // Signed over another body: the signature cannot be checked before the body is read, so the
      // cap is what bounds the read.
      const signed = {
        ...delivery,
        ...signatureHeaders(SECRET, {
          queueName: Q,
          messageId: 'msg_BIG',
          attempt: 1,
          body: '{}',
          destination: server.url,
        }),
      };
      const declared = await lazyPost(server.url, { ...signed, 'content-length': String(HALF_GIB) }, HALF_GIB);
      expect(declared.status).toBe(413);
      expect(server.stats.pulled).toBe(0);
      const streamed = await lazyPost(server.url, { ...signed, 'transfer-encoding': 'chunked' }, HALF_GIB);
      expect(streamed.status).toBe(413);
      expect(server.stats.pulled).toBeGreaterThan(max);
      expect(server.stats.pulled).toBeLessThan(max + 1024 * 1024);
      expect(streamed.generated).toBeLessThan(32 * 1024 * 1024);
    } finally {
      await server.close();
    }
  });

  test('a body that stops arriving gets 408 after the read deadline', async () => {
    const { createQueueHandler } = await import('../../../src/consumer/route/queue-handler.js');
    let ran = 0;
    const server = await streamingServe(
      createQueueHandler('__wkf_workflow_', async () => void ran++, {
        signingSecrets: [SECRET],
        readTimeoutMs: 300,
        logError: () => {},
      }),
    );
    try {
      const signed = {
        ...delivery,
        ...signatureHeaders(SECRET, {
          queueName: Q,
          messageId: 'msg_BIG',
          attempt: 1,
          body: '{}',
          destination: server.url,
        }),
      };
      const res = await lazyPost(server.url, { ...signed, 'content-length': String(1024 * 1024) }, 1024 * 1024, {
        stallAfter: 64 * 1024,
      });
      expect(res.status).toBe(408);
      expect(ran).toBe(0);
    } finally {
      await server.close();
    }
  });
});
