/**
 * The embedded emulator's KMS endpoint, driven by the real `@aws-sdk/client-kms` over the wire
 * (the endpoint the global setup started, found through AWS_ENDPOINT_URL_KMS like any client).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CreateAliasCommand,
  CreateKeyCommand,
  DecryptCommand,
  DescribeKeyCommand,
  DisableKeyCommand,
  EnableKeyCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  KMSClient,
} from '@aws-sdk/client-kms';
import { afterAll, describe, expect, it } from 'vitest';
import { startKmsServer } from '../../../emulator/kms.js';
import { LOCAL_KMS_ALIAS } from '../../../emulator/stack.js';
import { stackEnv } from '../../helpers/aws.js';

function client(endpoint = stackEnv().AWS_ENDPOINT_URL_KMS): KMSClient {
  return new KMSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

const kms = client();
afterAll(() => kms.destroy());

async function newKey(description = 'test'): Promise<string> {
  const out = await kms.send(new CreateKeyCommand({ Description: description }));
  return out.KeyMetadata!.KeyId!;
}

const errorName = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: Error) => e.name,
  );

describe('KMS endpoint of the embedded emulator', () => {
  it('is on 127.0.0.1 and always has the local alias', async () => {
    expect(new URL(stackEnv().AWS_ENDPOINT_URL_KMS!).hostname).toBe('127.0.0.1');
    const d = await kms.send(new DescribeKeyCommand({ KeyId: LOCAL_KMS_ALIAS }));
    expect(d.KeyMetadata).toMatchObject({
      Enabled: true,
      KeyState: 'Enabled',
      KeyUsage: 'ENCRYPT_DECRYPT',
      KeySpec: 'SYMMETRIC_DEFAULT',
    });
    expect(d.KeyMetadata!.Arn).toMatch(/^arn:aws:kms:us-east-1:\d{12}:key\/[0-9a-f-]{36}$/);
    expect(d.KeyMetadata!.CreationDate).toBeInstanceOf(Date);
  });

  it('GenerateDataKey: the wrapped key decrypts to the plaintext only under the same encryption context', async () => {
    const keyId = await newKey();
    const ctx = { 'eve-world-aws:runId': 'wrun_A', other: 'x' };
    const g = await kms.send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256', EncryptionContext: ctx }));
    expect(g.Plaintext).toHaveLength(32);
    expect(g.KeyId).toMatch(new RegExp(`:key/${keyId}$`));
    expect(Buffer.from(g.CiphertextBlob!).includes(Buffer.from(g.Plaintext!))).toBe(false);

    // No KeyId needed: the blob names its key. Context order does not matter.
    const d = await kms.send(
      new DecryptCommand({
        CiphertextBlob: g.CiphertextBlob,
        EncryptionContext: { other: 'x', 'eve-world-aws:runId': 'wrun_A' },
      }),
    );
    expect(Buffer.from(d.Plaintext!).equals(Buffer.from(g.Plaintext!))).toBe(true);
    expect(d.KeyId).toBe(g.KeyId);

    for (const wrong of [{ ...ctx, 'eve-world-aws:runId': 'wrun_B' }, { 'eve-world-aws:runId': 'wrun_A' }, undefined]) {
      expect(
        await errorName(kms.send(new DecryptCommand({ CiphertextBlob: g.CiphertextBlob, EncryptionContext: wrong }))),
      ).toBe('InvalidCiphertextException');
    }
    const tampered = Buffer.from(g.CiphertextBlob!);
    tampered[tampered.length - 1]! ^= 1;
    expect(await errorName(kms.send(new DecryptCommand({ CiphertextBlob: tampered, EncryptionContext: ctx })))).toBe(
      'InvalidCiphertextException',
    );
    expect(await errorName(kms.send(new DecryptCommand({ CiphertextBlob: Buffer.from('not a blob') })))).toBe(
      'InvalidCiphertextException',
    );
  });

  it('two data keys differ, NumberOfBytes works, and bad sizes are ValidationException', async () => {
    const keyId = await newKey();
    const a = await kms.send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256' }));
    const b = await kms.send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256' }));
    expect(Buffer.from(a.Plaintext!).equals(Buffer.from(b.Plaintext!))).toBe(false);
    expect((await kms.send(new GenerateDataKeyCommand({ KeyId: keyId, NumberOfBytes: 64 }))).Plaintext).toHaveLength(
      64,
    );
    expect(await errorName(kms.send(new GenerateDataKeyCommand({ KeyId: keyId })))).toBe('ValidationException');
    expect(await errorName(kms.send(new GenerateDataKeyCommand({ KeyId: keyId, NumberOfBytes: 2000 })))).toBe(
      'ValidationException',
    );
  });

  it("Encrypt / Decrypt round-trip; a KeyId that is not the blob's key is IncorrectKeyException", async () => {
    const [k1, k2] = [await newKey(), await newKey()];
    const e = await kms.send(
      new EncryptCommand({ KeyId: k1, Plaintext: Buffer.from('secret'), EncryptionContext: { a: 'b' } }),
    );
    const d = await kms.send(
      new DecryptCommand({ CiphertextBlob: e.CiphertextBlob, EncryptionContext: { a: 'b' }, KeyId: k1 }),
    );
    expect(Buffer.from(d.Plaintext!).toString()).toBe('secret');
    expect(
      await errorName(
        kms.send(new DecryptCommand({ CiphertextBlob: e.CiphertextBlob, EncryptionContext: { a: 'b' }, KeyId: k2 })),
      ),
    ).toBe('IncorrectKeyException');
  });

  it('resolves key ids, ARNs, aliases and alias ARNs; unknown keys are NotFoundException', async () => {
    const keyId = await newKey();
    const alias = `alias/t-${keyId.slice(0, 8)}`;
    await kms.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: keyId }));
    const arn = (await kms.send(new DescribeKeyCommand({ KeyId: keyId }))).KeyMetadata!.Arn!;
    for (const ref of [keyId, arn, alias, arn.replace(/key\/.*$/, alias)]) {
      expect((await kms.send(new DescribeKeyCommand({ KeyId: ref }))).KeyMetadata!.KeyId).toBe(keyId);
    }
    expect(await errorName(kms.send(new DescribeKeyCommand({ KeyId: 'alias/nope' })))).toBe('NotFoundException');
    expect(
      await errorName(
        kms.send(new GenerateDataKeyCommand({ KeyId: '00000000-0000-0000-0000-000000000000', KeySpec: 'AES_256' })),
      ),
    ).toBe('NotFoundException');
    expect(await errorName(kms.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: keyId })))).toBe(
      'AlreadyExistsException',
    );
  });

  it('a disabled key neither generates nor decrypts until it is enabled again', async () => {
    const keyId = await newKey();
    const g = await kms.send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256' }));
    await kms.send(new DisableKeyCommand({ KeyId: keyId }));
    expect((await kms.send(new DescribeKeyCommand({ KeyId: keyId }))).KeyMetadata!.KeyState).toBe('Disabled');
    expect(await errorName(kms.send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256' })))).toBe(
      'DisabledException',
    );
    expect(await errorName(kms.send(new DecryptCommand({ CiphertextBlob: g.CiphertextBlob })))).toBe(
      'DisabledException',
    );
    await kms.send(new EnableKeyCommand({ KeyId: keyId }));
    expect((await kms.send(new DecryptCommand({ CiphertextBlob: g.CiphertextBlob }))).Plaintext).toHaveLength(32);
  });

  it('refuses unsigned requests and unknown operations with KMS-shaped errors', async () => {
    const endpoint = stackEnv().AWS_ENDPOINT_URL_KMS!;
    const post = (target: string, auth?: string) =>
      fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': target,
          ...(auth ? { authorization: auth } : {}),
        },
        body: JSON.stringify({ KeyId: LOCAL_KMS_ALIAS }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { __type: string; message: string } }));
    expect(await post('TrentService.DescribeKey')).toMatchObject({
      status: 400,
      body: { __type: 'MissingAuthenticationTokenException' },
    });
    const sig =
      'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/kms/aws4_request, SignedHeaders=host, Signature=0';
    expect(await post('TrentService.ScheduleKeyDeletion', sig)).toMatchObject({
      status: 400,
      body: { __type: 'UnsupportedOperationException' },
    });
    expect(await post('DynamoDB_20120810.ListTables', sig)).toMatchObject({
      status: 400,
      body: { __type: 'UnknownOperationException' },
    });
    expect(await post('TrentService.DescribeKey', sig)).toMatchObject({ status: 200 });
  });

  it('keeps keys in its state file (mode 0600) across restarts, so stored wrapped keys stay readable', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kms-state-'));
    const stateFile = path.join(dir, 'kms-keys.json');
    try {
      const first = await startKmsServer({ stateFile, defaultAlias: 'alias/persisted' });
      const c1 = client(first.endpoint);
      const g = await c1.send(
        new GenerateDataKeyCommand({ KeyId: 'alias/persisted', KeySpec: 'AES_256', EncryptionContext: { r: '1' } }),
      );
      c1.destroy();
      await first.close();
      expect(statSync(stateFile).mode & 0o777).toBe(0o600);

      const second = await startKmsServer({ stateFile, defaultAlias: 'alias/persisted' });
      const c2 = client(second.endpoint);
      const d = await c2.send(new DecryptCommand({ CiphertextBlob: g.CiphertextBlob, EncryptionContext: { r: '1' } }));
      expect(Buffer.from(d.Plaintext!).equals(Buffer.from(g.Plaintext!))).toBe(true);
      expect(second.calls.get('Decrypt')).toBe(1);
      c2.destroy();
      await second.close();

      // Without the state file a restarted endpoint has new keys: the old blob is refused.
      const fresh = await startKmsServer({ defaultAlias: 'alias/persisted' });
      const c3 = client(fresh.endpoint);
      expect(
        await errorName(
          c3.send(new DecryptCommand({ CiphertextBlob: g.CiphertextBlob, EncryptionContext: { r: '1' } })),
        ),
      ).toBe('InvalidCiphertextException');
      c3.destroy();
      await fresh.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
