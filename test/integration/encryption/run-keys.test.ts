/**
 * Per-run KMS data keys (src/encryption/run-keys.ts) against DynamoDB Local and the emulator's KMS
 * endpoint. Races and lost responses are injected as SDK middleware between the World and the
 * emulators; nothing is mocked.
 */
import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateKeyCommand, DisableKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import type { WorkflowRun } from '@workflow/world';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_KMS_ALIAS } from '../../../emulator/stack.js';
import { type AwsClients, createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import { KeyCache, type KeyCacheOptions } from '../../../src/encryption/key-cache.js';
import { PENDING_KEY_SECONDS, RunKeys } from '../../../src/encryption/run-keys.js';
import { type AwsWorld, createWorld } from '../../../src/index.js';
import { createFixture, type Fixture, stackEnv } from '../../helpers/aws.js';
import { devl, sv } from '../../helpers/runs.js';

let f: Fixture;
const worlds: AwsWorld[] = [];
/** A fresh run id, as core mints it (`wrun_` + ULID). */
const newRunId = () => `wrun_${ulid()}`;

const ownClients: AwsClients[] = [];
const keysOf = new Map<AwsWorld, RunKeys>();
/** The World's per-run key source (built here and handed to createWorld, so its stats can be read). */
const runKeysOf = (w: AwsWorld) => keysOf.get(w) as RunKeys;

/** A World with its own clients (like another process): own cache, own connections. */
function world(extra: { clients?: AwsClients } = {}, bounds: KeyCacheOptions = {}): AwsWorld {
  const clients = extra.clients ?? createClients(f.config);
  if (!extra.clients) ownClients.push(clients);
  const runKeys = new RunKeys(createContext(f.config, clients), f.config.kmsKeyId as string, bounds);
  const w = createWorld({ config: f.config, clients, runKeys });
  keysOf.set(w, runKeys);
  worlds.push(w);
  return w;
}

const keyOf = (w: AwsWorld, run: string | WorkflowRun) =>
  w.getEncryptionKeyForRun!(run as never) as Promise<Uint8Array | undefined>;

async function storedKeyItem(runId: string) {
  const out = await f.clients.ddb.send(
    new GetItemCommand({
      TableName: f.config.tableName,
      Key: { PK: { S: `RUN#${runId}` }, SK: { S: 'RUNKEY' } },
      ConsistentRead: true,
    }),
  );
  return out.Item;
}

beforeAll(async () => {
  f = await createFixture({ EVE_WORLD_AWS_KMS_KEY_ID: LOCAL_KMS_ALIAS }, 'kms');
});
afterAll(async () => {
  await Promise.all(worlds.map((w) => w.close()));
  for (const c of ownClients) destroyClients(c);
});

describe('getEncryptionKeyForRun with KMS', () => {
  it('creates one 32-byte key per run on first request, stores it wrapped, and answers repeats from the cache', async () => {
    const w = world();
    const runId = newRunId();
    const k1 = await keyOf(w, runId);
    expect(k1).toBeInstanceOf(Uint8Array);
    expect(k1).toHaveLength(32);
    const item = await storedKeyItem(runId);
    expect(item?.wrappedKey?.B).toBeDefined();
    expect(Buffer.from(item!.wrappedKey!.B!).includes(Buffer.from(k1!))).toBe(false);
    const k2 = await keyOf(w, { runId, status: 'running' } as WorkflowRun);
    expect(Buffer.from(k2!).equals(Buffer.from(k1!))).toBe(true);
    expect(runKeysOf(w).stats()).toMatchObject({
      requests: 2,
      cacheHits: 1,
      generateDataKey: 1,
      decrypt: 0,
      keyWrites: 1,
      racesLost: 0,
    });
    // Another run, another key.
    expect(Buffer.from((await keyOf(w, newRunId()))!).equals(Buffer.from(k1!))).toBe(false);
    // Callers get copies: zeroing one does not poison the cache.
    k2!.fill(0);
    expect(Buffer.from((await keyOf(w, runId))!).equals(Buffer.from(k1!))).toBe(true);
  });

  it('concurrent requests in one process share one load', async () => {
    const w = world();
    const runId = newRunId();
    const keys = await Promise.all(Array.from({ length: 10 }, () => keyOf(w, runId)));
    expect(new Set(keys.map((k) => Buffer.from(k!).toString('hex'))).size).toBe(1);
    expect(runKeysOf(w).stats()).toMatchObject({ requests: 10, generateDataKey: 1, keyWrites: 1 });
  });

  it('two processes that create at the same moment converge on ONE key (the loser adopts the stored one)', async () => {
    // A barrier in front of both PutItems: neither writes until both have generated a key.
    let arrived = 0;
    let release!: () => void;
    const bothThere = new Promise<void>((r) => {
      release = r;
    });
    const clientsA = createClients(f.config);
    const clientsB = createClients(f.config);
    for (const c of [clientsA, clientsB]) {
      c.ddb.middlewareStack.add(
        (next, context) => async (args) => {
          if ((context as { commandName?: string }).commandName === 'PutItemCommand') {
            if (++arrived === 2) release();
            await bothThere;
          }
          return next(args);
        },
        { step: 'initialize', name: 'putBarrier' },
      );
    }
    const a = world({ clients: clientsA });
    const b = world({ clients: clientsB });
    const runId = newRunId();
    const [ka, kb] = await Promise.all([keyOf(a, runId), keyOf(b, runId)]);
    expect(Buffer.from(ka!).equals(Buffer.from(kb!))).toBe(true);
    const [sa, sb] = [runKeysOf(a).stats(), runKeysOf(b).stats()];
    expect(sa.generateDataKey + sb.generateDataKey).toBe(2);
    expect(sa.racesLost + sb.racesLost).toBe(1);
    expect(sa.decrypt + sb.decrypt).toBe(1); // only the loser unwraps
    // And the stored key is the one both use: a cold third process agrees.
    expect(Buffer.from((await keyOf(world(), runId))!).equals(Buffer.from(ka!))).toBe(true);
    for (const c of [clientsA, clientsB]) {
      c.ddb.destroy();
      (await c.kms()).destroy();
    }
  });

  it('an SDK retry of its own put after a lost response keeps its own key (no KMS Decrypt, no lost race)', async () => {
    const clients = createClients(f.config);
    let puts = 0;
    clients.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName !== 'PutItemCommand') return next(args);
        const attempt = ++puts;
        const out = await next(args);
        // The write committed, but the response is "lost" once: the SDK retries the same put,
        // which then fails its condition (the item is ours).
        if (attempt === 1)
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'loseFirstPutResponse' },
    );
    const w = world({ clients });
    const runId = newRunId();
    const key = await keyOf(w, runId);
    expect(puts).toBe(2);
    expect(runKeysOf(w).stats()).toMatchObject({ generateDataKey: 1, decrypt: 0, racesLost: 0 });
    expect(Buffer.from((await keyOf(world(), runId))!).equals(Buffer.from(key!))).toBe(true);
    clients.ddb.destroy();
    (await clients.kms()).destroy();
  });

  it('the cache is bounded: the least recently used key is dropped and unwrapped again (same bytes) when needed', async () => {
    const w = world({}, { maxEntries: 2 });
    const [r1, r2, r3] = [newRunId(), newRunId(), newRunId()];
    const k1 = await keyOf(w, r1);
    await keyOf(w, r2);
    await keyOf(w, r3);
    expect(runKeysOf(w).cached).toBe(2);
    const before = runKeysOf(w).stats();
    const again = await keyOf(w, r1);
    expect(Buffer.from(again!).equals(Buffer.from(k1!))).toBe(true);
    const after = runKeysOf(w).stats();
    expect(after.decrypt - before.decrypt).toBe(1);
    expect(after.keyReads - before.keyReads).toBe(1);
    expect(after.generateDataKey).toBe(before.generateDataKey);
    expect(runKeysOf(w).cached).toBe(2);
  });

  it('reading never creates: a terminal run without a key item has no key (its payloads are plaintext)', async () => {
    const w = world();
    const runId = newRunId();
    expect(await keyOf(w, { runId, status: 'completed' } as WorkflowRun)).toBeUndefined();
    expect(await storedKeyItem(runId)).toBeUndefined();
    expect(runKeysOf(w).stats().generateDataKey).toBe(0);
    // A terminal run that has a key still gets it.
    const live = newRunId();
    const k = await keyOf(world(), live);
    expect(
      Buffer.from((await keyOf(w, { runId: live, status: 'failed' } as WorkflowRun))!).equals(Buffer.from(k!)),
    ).toBe(true);
  });

  it('the encryption context binds a wrapped key to its run: a key item copied to another run does not unwrap', async () => {
    const w = world();
    const source = newRunId();
    await keyOf(w, source);
    const copy = (await storedKeyItem(source))!;
    const target = newRunId();
    await f.clients.ddb.send(
      new PutItemCommand({ TableName: f.config.tableName, Item: { ...copy, PK: { S: `RUN#${target}` } } }),
    );
    await expect(keyOf(world(), target)).rejects.toThrow(
      new RegExp(
        `Cannot unwrap the data key of run ${target} with KMS \\(InvalidCiphertextException: .*\\)\\. Fix: the stored data key of run ${target} does not decrypt`,
      ),
    );
  });

  it('a disabled KMS key fails with a message that names the problem and the fix', async () => {
    const env = stackEnv();
    const kms = new KMSClient({
      endpoint: env.AWS_ENDPOINT_URL_KMS,
      region: 'us-east-1',
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
    });
    const keyId = (await kms.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    await kms.send(new DisableKeyCommand({ KeyId: keyId }));
    kms.destroy();
    const w = createWorld({ config: { ...f.config, kmsKeyId: keyId } });
    worlds.push(w);
    const runId = newRunId();
    await expect(keyOf(w, runId)).rejects.toThrow(
      /Cannot generate a data key for run .* with KMS \(DisabledException: .*\)\. Fix: the KMS key is disabled/,
    );
    expect(await storedKeyItem(runId)).toBeUndefined();
  });

  it('a string that is not a run id costs no KMS call and writes nothing', async () => {
    const w = world();
    const hostile = [
      '',
      'does-not-exist',
      'RUN#evil#',
      'wrun_../../etc',
      'x'.repeat(900),
      `wrun_${ulid()}x`,
      `wrun_${ulid().toLowerCase().replace(/[0-9]/g, 'u')}`,
      `wrun_${'I'.repeat(26)}`,
    ];
    for (const id of hostile) {
      await expect(keyOf(w, id), id).rejects.toThrow(
        /getEncryptionKeyForRun needs a run or a run id \(wrun_ followed by a ULID\)/,
      );
      await expect(keyOf(w, { runId: id, status: 'running' } as WorkflowRun)).rejects.toThrow(
        /wrun_ followed by a ULID/,
      );
    }
    expect(runKeysOf(w).stats()).toMatchObject({
      requests: 0,
      generateDataKey: 0,
      decrypt: 0,
      keyReads: 0,
      keyWrites: 0,
    });
    for (const id of ['does-not-exist', 'RUN#evil#', 'wrun_../../etc']) expect(await storedKeyItem(id)).toBeUndefined();
  });

  it('the key of a run that is never created expires; once the run exists its key stops expiring', async () => {
    const w = world();
    // A health check (or a start() that died) asks for a run that never comes.
    const ghost = newRunId();
    const before = Math.floor(Date.now() / 1000);
    await keyOf(w, ghost);
    const item = (await storedKeyItem(ghost))!;
    const ttl = Number(item.ttl?.N);
    expect(ttl).toBeGreaterThanOrEqual(before + PENDING_KEY_SECONDS);
    expect(ttl).toBeLessThanOrEqual(before + PENDING_KEY_SECONDS + 5);
    expect(item.pendingTtl?.N).toBe(item.ttl?.N);

    // core's start(): the key first (a string), then run_created with that id, then the run is used.
    const runId = newRunId();
    const key = await keyOf(w, runId);
    expect((await storedKeyItem(runId))?.ttl).toBeDefined();
    await w.events.create(runId, {
      eventType: 'run_created',
      specVersion: sv,
      eventData: { deploymentId: 'test', workflowName: 'wf', input: devl(1) },
    } as never);
    await new Promise((r) => setTimeout(r, 1100)); // a pending run is looked for at most once a second
    expect(Buffer.from((await keyOf(w, runId))!).equals(Buffer.from(key!))).toBe(true);
    const kept = (await storedKeyItem(runId))!;
    expect(kept.ttl).toBeUndefined();
    expect(kept.pendingTtl).toBeUndefined();
    expect(kept.wrappedKey?.B).toBeDefined();
    // Another process that first meets the key after the run exists keeps it too.
    const other = newRunId();
    await keyOf(w, other);
    await w.events.create(other, {
      eventType: 'run_created',
      specVersion: sv,
      eventData: { deploymentId: 'test', workflowName: 'wf', input: devl(1) },
    } as never);
    await keyOf(world(), other);
    expect((await storedKeyItem(other))?.ttl).toBeUndefined();
    // The ghost's key is still pending: nothing found it a run.
    expect((await storedKeyItem(ghost))?.ttl?.N).toBe(String(ttl));
  });

  it('a TTL that retention set after the key was kept pending is left alone', async () => {
    const w = world();
    const runId = newRunId();
    await keyOf(w, runId);
    // Retention stamped the run's items (including the key) before the key was found kept.
    await f.clients.ddb.send(
      new UpdateItemCommand({
        TableName: f.config.tableName,
        Key: { PK: { S: `RUN#${runId}` }, SK: { S: 'RUNKEY' } },
        UpdateExpression: 'SET #t = :t',
        ExpressionAttributeNames: { '#t': 'ttl' },
        ExpressionAttributeValues: { ':t': { N: '1999999999' } },
      }),
    );
    await keyOf(w, { runId, status: 'completed' } as WorkflowRun);
    const item = (await storedKeyItem(runId))!;
    expect(item.ttl?.N).toBe('1999999999');
    expect(item.pendingTtl).toBeUndefined();
  });
});

describe('KeyCache', () => {
  it('expires entries after maxAgeMs and zeroes what it drops', () => {
    let now = 0;
    const cache = new KeyCache({ maxEntries: 10, maxAgeMs: 1000, now: () => now });
    const key = new Uint8Array(32).fill(7);
    cache.set('r', key);
    key.fill(1); // the cache holds its own copy
    expect(cache.get('r')).toEqual(new Uint8Array(32).fill(7));
    now = 999;
    expect(cache.get('r')).toBeDefined();
    now = 1000;
    expect(cache.get('r')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('uses the default bounds when none are given, and refuses nonsense bounds', () => {
    const cache = new KeyCache();
    for (let i = 0; i < 1001; i++) cache.set(`r${i}`, new Uint8Array(32));
    expect(cache.size).toBe(1000);
    expect(cache.get('r0')).toBeUndefined();
    expect(() => new KeyCache({ maxEntries: 0 })).toThrow(/maxEntries/);
    expect(() => new KeyCache({ maxAgeMs: 0 })).toThrow(/maxAgeMs/);
  });
});
