/**
 * End-to-end encryption: real workflows through the real core on a World with
 * EVE_WORLD_AWS_KMS_KEY_ID (the emulator's KMS endpoint over the wire). What lands in DynamoDB and
 * S3 is read back raw, past the World, and must be ciphertext; an operator's World (its own
 * clients, a cold key cache) must decrypt it; and a World without the variable must store the
 * same data in plaintext (the control that shows the raw checks can fail).
 */
import { type AttributeValue, QueryCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { deriveRunPayloadKeys, prepareReplayPayload } from '@workflow/core/serialization';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resumeHook, start } from 'workflow/api';
import { LOCAL_KMS_ALIAS } from '../../emulator/stack.js';
import { createClients, destroyClients } from '../../src/aws/clients.js';
import { createContext } from '../../src/context/world-context.js';
import { RunKeys } from '../../src/encryption/run-keys.js';
import { createWorld } from '../../src/index.js';
import { type E2e, startE2e } from '../helpers/e2e.js';

const MARKER = `TOP-SECRET-${Math.random().toString(36).slice(2, 10)}`;

interface Raw {
  /** Every binary attribute, with where it was found. */
  bytes: Array<{ where: string; value: Buffer }>;
  /** Every string attribute and key. */
  strings: string[];
}

function walk(av: AttributeValue, where: string, out: Raw): void {
  if (av.B) out.bytes.push({ where, value: Buffer.from(av.B) });
  else if (av.S !== undefined) out.strings.push(av.S);
  else if (av.M) for (const [k, v] of Object.entries(av.M)) walk(v, `${where}.${k}`, out);
  else if (av.L) {
    for (const [i, v] of av.L.entries()) walk(v, `${where}[${i}]`, out);
  }
}

/** Every item of the run's partition and of its stream partitions, plus the bucket's objects, raw. */
async function rawStorage(e2e: E2e, runId: string): Promise<Raw & { objects: Array<{ key: string; body: Buffer }> }> {
  const { ddb } = e2e.fixture.clients;
  const table = e2e.fixture.config.tableName;
  const out: Raw & { objects: Array<{ key: string; body: Buffer }> } = { bytes: [], strings: [], objects: [] };
  const partitions = [
    `RUN#${runId}`,
    ...(await e2e.world.streams.list(runId)).map((name) => `STREAM#${runId}#${name}`),
  ];
  for (const pk of partitions) {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await ddb.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': { S: pk } },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        if (item.SK?.S === 'RUNKEY') continue; // the wrapped data key, checked on its own
        for (const [k, v] of Object.entries(item)) walk(v, `${item.SK?.S}.${k}`, out);
      }
      start = page.LastEvaluatedKey;
    } while (start);
  }
  const s3 = await e2e.fixture.clients.s3();
  const listed = await s3.send(
    new ListObjectsV2Command({ Bucket: e2e.fixture.config.bucket, Prefix: `runs/${runId}/` }),
  );
  for (const o of listed.Contents ?? []) {
    const got = await s3.send(new GetObjectCommand({ Bucket: e2e.fixture.config.bucket, Key: o.Key! }));
    out.objects.push({ key: o.Key!, body: Buffer.from(await got.Body!.transformToByteArray()) });
  }
  return out;
}

const contains = (raw: Raw & { objects: Array<{ body: Buffer }> }, needle: string) =>
  raw.bytes.some((b) => b.value.includes(needle)) ||
  raw.strings.some((s) => s.includes(needle)) ||
  raw.objects.some((o) => o.body.includes(needle));

/** Core's payload format prefixes: `encr` = AES-GCM under the run key, `encp` = sealed to the run. */
const prefixOf = (b: Buffer) => b.subarray(0, 4).toString('latin1');

describe('with EVE_WORLD_AWS_KMS_KEY_ID: payloads are ciphertext at rest, and the runs still complete', () => {
  let e2e: E2e;
  const runs: Record<string, string> = {};

  beforeAll(async () => {
    e2e = await startE2e({
      extraEnv: { EVE_WORLD_AWS_KMS_KEY_ID: LOCAL_KMS_ALIAS },
      tuning: { payloadThresholdBytes: 400 },
    });
    expect(typeof e2e.world.getEncryptionKeyForRun).toBe('function');
    const counted = await start(e2e.workflows.countedSteps as never, [MARKER, 2]);
    expect(await counted.returnValue).toBe(8);
    runs.counted = counted.runId;
    const streamed = await start(e2e.workflows.sequentialWithStream as never, []);
    expect(await streamed.returnValue).toBe('hello world');
    runs.streamed = streamed.runId;
    // Over the (lowered) inline threshold even compressed: the step output goes to S3.
    const large = await start(e2e.workflows.largeOutput as never, [200_000]);
    expect(typeof (await large.returnValue)).toBe('number');
    runs.large = large.runId;
    // Hook payloads: written by resumeHook (outside the run), read by the run.
    const token = `kms-${MARKER}`;
    const hooked = await start(e2e.workflows.hookCollector as never, [token, 1]);
    for (let i = 0; ; i++) {
      try {
        await e2e.world.hooks.getByToken(token);
        break;
      } catch (err) {
        if (i > 400) throw err;
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    await resumeHook(token, { value: { note: `payload-${MARKER}` } });
    expect(await hooked.returnValue).toEqual([{ note: `payload-${MARKER}` }]);
    runs.hooked = hooked.runId;
  });
  afterAll(async () => {
    await e2e?.close();
  });

  it('stores no plaintext: every payload attribute carries the encrypted format prefix, the marker appears nowhere', async () => {
    const raw = await rawStorage(e2e, runs.counted!);
    expect(contains(raw, MARKER)).toBe(false);
    // input/output/result/error/payload of the run, its steps and its events.
    const payloads = raw.bytes.filter((b) => b.value.length >= 4);
    expect(payloads.length).toBeGreaterThanOrEqual(12); // run input + 6 step inputs + 6 step results + ...
    expect(new Set(payloads.map((b) => prefixOf(b.value)))).toEqual(new Set(['encr']));
    expect(payloads.map((b) => b.where)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^RUN#meta\.input$/), expect.stringMatching(/^STEP#.*\.input$/)]),
    );
  });

  it('hook payloads are ciphertext too (the run input, which holds the token, as well)', async () => {
    const raw = await rawStorage(e2e, runs.hooked!);
    expect(raw.bytes.some((b) => b.value.includes(`payload-${MARKER}`))).toBe(false);
    const received = raw.bytes.filter((b) => /^EVT#.*\.payload$/.test(b.where));
    expect(received).toHaveLength(1);
    // Sealed to the run's public key (core's `encp`): the resumer can write it but not read it back.
    expect(prefixOf(received[0]!.value)).toBe('encp');
    expect(prefixOf(raw.bytes.find((b) => b.where === 'RUN#meta.input')!.value)).toBe('encr');
  });

  it('stream chunks and S3-offloaded payloads are ciphertext too', async () => {
    const streamed = await rawStorage(e2e, runs.streamed!);
    expect(contains(streamed, 'hello')).toBe(false);
    const chunks = streamed.bytes.filter((b) => /^CHUNK#/.test(b.where));
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    for (const c of chunks)
      expect(c.value.includes(Buffer.from('hello')) || c.value.includes(Buffer.from('world'))).toBe(false);

    const large = await rawStorage(e2e, runs.large!);
    expect(large.objects.length).toBeGreaterThanOrEqual(1);
    for (const o of large.objects) expect(prefixOf(o.body)).toBe('encr');
  });

  it('keeps one wrapped key per run in the run partition; the runtime used exactly those keys', async () => {
    const stats = e2e.runKeys!.stats();
    // Each run's key was generated once (in start()), and every later request hit the cache.
    expect(stats.generateDataKey).toBe(4);
    expect(stats.racesLost).toBe(0);
    expect(stats.cacheHits).toBeGreaterThan(stats.requests / 2);
    for (const runId of Object.values(runs)) {
      const item = await e2e.fixture.clients.ddb.send(
        new QueryCommand({
          TableName: e2e.fixture.config.tableName,
          KeyConditionExpression: 'PK = :pk AND SK = :sk',
          ExpressionAttributeValues: { ':pk': { S: `RUN#${runId}` }, ':sk': { S: 'RUNKEY' } },
        }),
      );
      expect(item.Items).toHaveLength(1);
      expect(item.Items![0]!.wrappedKey!.B!.length).toBeGreaterThan(32);
      expect(item.Items![0]!.kmsKeyArn!.S).toMatch(/^arn:aws:kms:/);
      // Made in start() before run_created, so pending at first; the run exists, so it is kept.
      expect(item.Items![0]!.ttl).toBeUndefined();
      expect(item.Items![0]!.pendingTtl).toBeUndefined();
    }
  });

  it('an operator World (own clients, cold cache, KMS access) unwraps the same key and reads the payloads', async () => {
    const { config } = e2e.fixture;
    const clients = createClients(config);
    const operatorKeys = new RunKeys(createContext(config, clients), config.kmsKeyId as string);
    const operator = createWorld({ config, clients, runKeys: operatorKeys });
    try {
      const run = await operator.runs.get(runs.counted!);
      const key = await operator.getEncryptionKeyForRun!(run);
      expect(key).toHaveLength(32);
      expect(Buffer.from(key!).equals(Buffer.from((await e2e.world.getEncryptionKeyForRun!(run))!))).toBe(true);
      expect(operatorKeys.stats()).toMatchObject({ decrypt: 1, generateDataKey: 0, keyWrites: 0 });

      const keys = await deriveRunPayloadKeys(key!);
      const input = await prepareReplayPayload(run.input as Uint8Array, keys);
      expect(Buffer.from(input.data as Uint8Array).toString('utf8')).toContain(MARKER);
      const steps = await operator.steps.list({ runId: run.runId, pagination: {} });
      const texts = await Promise.all(
        steps.data.map(async (s) =>
          Buffer.from((await prepareReplayPayload(s.input as Uint8Array, keys)).data as Uint8Array).toString(),
        ),
      );
      expect(texts.filter((t) => t.includes(`${MARKER}:seq:`))).toHaveLength(2);

      // The same bytes do not open under another run's key.
      const other = await operator.getEncryptionKeyForRun!(await operator.runs.get(runs.streamed!));
      await expect(prepareReplayPayload(run.input as Uint8Array, await deriveRunPayloadKeys(other!))).rejects.toThrow();
    } finally {
      await operator.close();
      destroyClients(clients);
    }
  });
});

describe('without EVE_WORLD_AWS_KMS_KEY_ID (control): the same workflow is stored in plaintext', () => {
  let e2e: E2e;
  beforeAll(async () => {
    e2e = await startE2e();
  });
  afterAll(async () => {
    await e2e?.close();
  });

  it('has no getEncryptionKeyForRun, never loads KMS, and the marker is readable in the table', async () => {
    expect(e2e.world.getEncryptionKeyForRun).toBeUndefined();
    const run = await start(e2e.workflows.countedSteps as never, [MARKER, 1]);
    expect(await run.returnValue).toBe(7);
    const raw = await rawStorage(e2e, run.runId);
    expect(contains(raw, MARKER)).toBe(true);
    expect(new Set(raw.bytes.filter((b) => b.value.length >= 4).map((b) => prefixOf(b.value)))).not.toContain('encr');
    expect((e2e.fixture.clients.kms as unknown as { created?: unknown }).created).toBeUndefined();
  });
});
