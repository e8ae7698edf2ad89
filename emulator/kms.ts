/**
 * A minimal AWS KMS endpoint for the embedded emulator. No KMS emulator can be installed here (none
 * on npm or in Debian), so this speaks just enough of the KMS JSON protocol (`POST /`,
 * `Content-Type: application/x-amz-json-1.1`, `X-Amz-Target: TrentService.<Operation>`) for the
 * real `@aws-sdk/client-kms` to talk to it over the wire through `AWS_ENDPOINT_URL_KMS`:
 *
 *   CreateKey, CreateAlias, DescribeKey, EnableKey, DisableKey, GenerateDataKey, Encrypt, Decrypt
 *
 * Invariants:
 * - Cryptography is real: every key is 32 random bytes of AES-256 material, and ciphertext blobs
 *   are AES-256-GCM with a fresh 12-byte IV. A blob embeds the id of the key that made it, so
 *   Decrypt needs no KeyId (as in KMS for symmetric keys).
 * - The encryption context is authenticated (it is part of the GCM additional data): Decrypt with
 *   a different or missing context fails with `InvalidCiphertextException`, as in KMS.
 * - Key material never leaves the server, except into the optional state file (mode 0600) that
 *   keeps keys across restarts when the emulator persists its DynamoDB data.
 * - It listens on 127.0.0.1 only, requires a SigV4 `Authorization` header (it does not verify
 *   the signature: like the other local emulators it accepts any credentials) and refuses bodies
 *   over 1 MiB.
 *
 * Not implemented (answered with `UnsupportedOperationException`): asymmetric and HMAC keys,
 * grants, key policies, rotation, multi-Region keys.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { type JsonBody, startJsonService } from './json-service.js';
import { ServiceError } from './service-server.js';

export interface KmsServerOptions {
  /** Port on 127.0.0.1 (0 = any free port). */
  port?: number;
  region?: string;
  accountId?: string;
  /** Keep keys (with their material) in this JSON file across restarts. */
  stateFile?: string;
  /** Create this alias (with a fresh key) at start when it does not exist, e.g. `alias/eve-world-local`. */
  defaultAlias?: string;
}

export interface KmsServer {
  readonly endpoint: string;
  readonly port: number;
  /** Requests served, by operation (successful or not). */
  readonly calls: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

interface StoredKey {
  id: string;
  /** base64 AES-256 material. */
  material: string;
  enabled: boolean;
  description: string;
  createdAt: number;
}

interface State {
  keys: Record<string, StoredKey>;
  aliases: Record<string, string>;
}

class KmsError extends ServiceError {}

const BLOB_VERSION = 1;
const ID_LEN = 36; // a UUID
const IV_LEN = 12;
const TAG_LEN = 16;
const HEADER_LEN = 1 + ID_LEN + IV_LEN + TAG_LEN;
const MAX_BODY = 1024 * 1024;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Canonical form of an encryption context: keys sorted, so `{a,b}` and `{b,a}` are one context. */
function canonicalContext(ctx: Record<string, string>): string {
  return JSON.stringify(
    Object.keys(ctx)
      .sort()
      .map((k) => [k, ctx[k]]),
  );
}

function aad(keyId: string, ctx: Record<string, string>): Buffer {
  return Buffer.from(`eve-world-aws/kms-emulator/v${BLOB_VERSION}\n${keyId}\n${canonicalContext(ctx)}`);
}

function seal(key: StoredKey, plaintext: Buffer, ctx: Record<string, string>): Buffer {
  const iv = randomBytes(IV_LEN);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(key.material, 'base64'), iv);
  cipher.setAAD(aad(key.id, ctx));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([BLOB_VERSION]), Buffer.from(key.id, 'ascii'), iv, cipher.getAuthTag(), ct]);
}

function blobKeyId(blob: Buffer): string {
  if (blob.length < HEADER_LEN || blob[0] !== BLOB_VERSION) {
    throw new KmsError('InvalidCiphertextException', 'The ciphertext is not a KMS ciphertext blob of this endpoint.');
  }
  const id = blob.subarray(1, 1 + ID_LEN).toString('ascii');
  if (!UUID_RE.test(id))
    throw new KmsError('InvalidCiphertextException', 'The ciphertext is not a KMS ciphertext blob of this endpoint.');
  return id;
}

function open(key: StoredKey, blob: Buffer, ctx: Record<string, string>): Buffer {
  const iv = blob.subarray(1 + ID_LEN, 1 + ID_LEN + IV_LEN);
  const tag = blob.subarray(1 + ID_LEN + IV_LEN, HEADER_LEN);
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(key.material, 'base64'), iv);
  decipher.setAAD(aad(key.id, ctx));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(blob.subarray(HEADER_LEN)), decipher.final()]);
  } catch {
    // Wrong encryption context, or a modified blob: KMS does not say which.
    throw new KmsError(
      'InvalidCiphertextException',
      'The ciphertext, its encryption context or the key does not match.',
    );
  }
}

type Body = JsonBody;

function str(body: Body, field: string, required: true): string;
function str(body: Body, field: string, required?: false): string | undefined;
function str(body: Body, field: string, required = false): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (required)
      throw new KmsError(
        'ValidationException',
        `1 validation error detected: Value null at '${field}' failed to satisfy constraint: Member must not be null`,
      );
    return undefined;
  }
  if (typeof v !== 'string') throw new KmsError('ValidationException', `${field} must be a string`);
  return v;
}

function blob(body: Body, field: string, max: number): Buffer {
  const v = str(body, field, true);
  const b = Buffer.from(v, 'base64');
  if (b.length === 0 || b.length > max) {
    throw new KmsError(
      'ValidationException',
      `1 validation error detected: Value at '${field}' failed to satisfy constraint: Member must have length between 1 and ${max}`,
    );
  }
  return b;
}

function context(body: Body): Record<string, string> {
  const v = body.EncryptionContext;
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v))
    throw new KmsError('ValidationException', 'EncryptionContext must be a map of strings');
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string')
      throw new KmsError('ValidationException', `EncryptionContext value for "${k}" must be a string`);
  }
  return v as Record<string, string>;
}

export async function startKmsServer(opts: KmsServerOptions = {}): Promise<KmsServer> {
  const region = opts.region ?? 'us-east-1';
  const accountId = opts.accountId ?? '000000000000';
  const arnOf = (id: string) => `arn:aws:kms:${region}:${accountId}:key/${id}`;
  const state: State =
    opts.stateFile && existsSync(opts.stateFile)
      ? (JSON.parse(readFileSync(opts.stateFile, 'utf8')) as State)
      : { keys: {}, aliases: {} };
  const save = () => {
    if (opts.stateFile) writeFileSync(opts.stateFile, JSON.stringify(state), { mode: 0o600 });
  };

  const createKey = (description: string): StoredKey => {
    const key: StoredKey = {
      id: randomUUID(),
      material: randomBytes(32).toString('base64'),
      enabled: true,
      description,
      createdAt: Date.now(),
    };
    state.keys[key.id] = key;
    save();
    return key;
  };
  if (opts.defaultAlias && !state.aliases[opts.defaultAlias]) {
    state.aliases[opts.defaultAlias] = createKey(`eve-world-aws local emulator key (${opts.defaultAlias})`).id;
    save();
  }

  /** KeyId may be a key id, key ARN, alias name or alias ARN. */
  const find = (ref: string): StoredKey => {
    let id = ref;
    const aliasArn = /^arn:aws[a-z-]*:kms:[^:]*:[^:]*:(alias\/.+)$/.exec(ref);
    const keyArn = /^arn:aws[a-z-]*:kms:[^:]*:[^:]*:key\/(.+)$/.exec(ref);
    if (aliasArn) id = state.aliases[aliasArn[1]!] ?? '';
    else if (ref.startsWith('alias/')) id = state.aliases[ref] ?? '';
    else if (keyArn) id = keyArn[1]!;
    const key = state.keys[id];
    if (!key) throw new KmsError('NotFoundException', `Key '${ref}' does not exist`);
    return key;
  };
  const usable = (key: StoredKey): StoredKey => {
    if (!key.enabled) throw new KmsError('DisabledException', `${arnOf(key.id)} is disabled.`);
    return key;
  };
  const metadata = (key: StoredKey) => ({
    AWSAccountId: accountId,
    KeyId: key.id,
    Arn: arnOf(key.id),
    CreationDate: key.createdAt / 1000,
    Enabled: key.enabled,
    Description: key.description,
    KeyUsage: 'ENCRYPT_DECRYPT',
    KeyState: key.enabled ? 'Enabled' : 'Disabled',
    Origin: 'AWS_KMS',
    KeyManager: 'CUSTOMER',
    CustomerMasterKeySpec: 'SYMMETRIC_DEFAULT',
    KeySpec: 'SYMMETRIC_DEFAULT',
    EncryptionAlgorithms: ['SYMMETRIC_DEFAULT'],
    MultiRegion: false,
  });
  const algorithm = (body: Body) => {
    const a = str(body, 'EncryptionAlgorithm');
    if (a !== undefined && a !== 'SYMMETRIC_DEFAULT')
      throw new KmsError('UnsupportedOperationException', `EncryptionAlgorithm ${a} is not supported by this emulator`);
  };

  const operations: Record<string, (body: Body) => unknown> = {
    CreateKey(body) {
      const usage = str(body, 'KeyUsage') ?? 'ENCRYPT_DECRYPT';
      const spec = str(body, 'KeySpec') ?? str(body, 'CustomerMasterKeySpec') ?? 'SYMMETRIC_DEFAULT';
      if (usage !== 'ENCRYPT_DECRYPT' || spec !== 'SYMMETRIC_DEFAULT') {
        throw new KmsError(
          'UnsupportedOperationException',
          'This emulator only creates SYMMETRIC_DEFAULT ENCRYPT_DECRYPT keys',
        );
      }
      return { KeyMetadata: metadata(createKey(str(body, 'Description') ?? '')) };
    },
    CreateAlias(body) {
      const name = str(body, 'AliasName', true);
      if (!/^alias\/[a-zA-Z0-9/_-]{1,250}$/.test(name) || name.startsWith('alias/aws/')) {
        throw new KmsError(
          'ValidationException',
          `Alias name "${name}" must be alias/<1-250 of a-zA-Z0-9/_-> and not start with alias/aws/`,
        );
      }
      if (state.aliases[name])
        throw new KmsError(
          'AlreadyExistsException',
          `An alias with the name ${arnOf('').replace(/key\/$/, name)} already exists`,
        );
      state.aliases[name] = find(str(body, 'TargetKeyId', true)).id;
      save();
      return {};
    },
    DescribeKey(body) {
      return { KeyMetadata: metadata(find(str(body, 'KeyId', true))) };
    },
    EnableKey(body) {
      find(str(body, 'KeyId', true)).enabled = true;
      save();
      return {};
    },
    DisableKey(body) {
      find(str(body, 'KeyId', true)).enabled = false;
      save();
      return {};
    },
    GenerateDataKey(body) {
      const key = usable(find(str(body, 'KeyId', true)));
      const n = body.NumberOfBytes;
      const spec = str(body, 'KeySpec');
      if ((n === undefined) === (spec === undefined))
        throw new KmsError('ValidationException', 'Specify exactly one of KeySpec or NumberOfBytes');
      let size: number;
      if (spec !== undefined) {
        if (spec !== 'AES_256' && spec !== 'AES_128')
          throw new KmsError('ValidationException', `KeySpec must be AES_256 or AES_128, got ${spec}`);
        size = spec === 'AES_256' ? 32 : 16;
      } else {
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 1024)
          throw new KmsError('ValidationException', 'NumberOfBytes must be between 1 and 1024');
        size = n;
      }
      const plaintext = randomBytes(size);
      return {
        KeyId: arnOf(key.id),
        Plaintext: plaintext.toString('base64'),
        CiphertextBlob: seal(key, plaintext, context(body)).toString('base64'),
      };
    },
    Encrypt(body) {
      const key = usable(find(str(body, 'KeyId', true)));
      algorithm(body);
      const plaintext = blob(body, 'Plaintext', 4096);
      return {
        KeyId: arnOf(key.id),
        CiphertextBlob: seal(key, plaintext, context(body)).toString('base64'),
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    },
    Decrypt(body) {
      algorithm(body);
      const ciphertext = blob(body, 'CiphertextBlob', 6144);
      const embedded = blobKeyId(ciphertext);
      const key = state.keys[embedded];
      if (!key)
        throw new KmsError(
          'InvalidCiphertextException',
          'The ciphertext refers to a key that does not exist on this endpoint.',
        );
      const wanted = str(body, 'KeyId');
      if (wanted !== undefined && find(wanted).id !== key.id) {
        throw new KmsError(
          'IncorrectKeyException',
          'The key ID in the request does not identify the KMS key that encrypted the ciphertext.',
        );
      }
      usable(key);
      return {
        KeyId: arnOf(key.id),
        Plaintext: open(key, ciphertext, context(body)).toString('base64'),
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    },
  };

  return startJsonService({
    service: 'KMS',
    targetPrefix: 'TrentService',
    maxBodyBytes: MAX_BODY,
    tooLargeType: 'ValidationException',
    internalType: 'KMSInternalException',
    operations,
    port: opts.port,
  });
}
