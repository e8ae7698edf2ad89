/**
 * Large-value offload to S3.
 *
 * DynamoDB items are capped at 400 KB and SQS bodies at 1 MiB, while workflow payloads are opaque
 * byte strings of any size. A value larger than the threshold is written to S3 under a key that
 * names its owner (`runs/<runId>/...`), and the item keeps a pointer `{__s3: key}` instead.
 *
 * Invariants:
 * - Bytes round-trip exactly: a `Uint8Array` is stored as the raw object body, never re-encoded.
 * - Non-byte values (legacy spec < 2 payloads, arbitrary JSON) round-trip through JSON, flagged
 *   with `json: true` on the pointer so the reader knows which decoding to apply.
 * - The S3 put happens *before* the DynamoDB write that publishes the pointer, so a reader never
 *   sees a pointer to a missing object. An orphaned object (the write then lost a race, or the
 *   process died in between) costs storage only: `eve-world-aws sweep` deletes the ones under
 *   `runs/` that nothing can reference any more (src/sweep/run-payloads.ts); queue bodies
 *   (`queue/`) expire by the bucket's lifecycle rule.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { countMetric } from '../telemetry/metrics.js';

export interface S3Pointer {
  readonly __s3: string;
  readonly json?: true;
  readonly size: number;
}

export function isS3Pointer(v: unknown): v is S3Pointer {
  return typeof v === 'object' && v !== null && typeof (v as { __s3?: unknown }).__s3 === 'string';
}

export interface ListedObject {
  readonly key: string;
  readonly size: number;
  /** Epoch ms of the object's last write (S3's clock). */
  readonly lastModified: number;
}

/** DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;

export class PayloadStore {
  constructor(
    /** The S3 client, created on first use (see AwsClients.s3). */
    readonly s3: () => Promise<S3Client>,
    readonly bucket: string,
    readonly thresholdBytes: number,
  ) {}

  /** Bytes of `value` as stored: raw for `Uint8Array`, UTF-8 JSON otherwise. */
  static sizeOf(value: unknown): number {
    if (value instanceof Uint8Array) return value.byteLength;
    if (value === undefined) return 0;
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  }

  /** Returns `value` unchanged when it is small enough to keep inline, or uploads it to `key` and returns a pointer. */
  async offload<T>(key: string, value: T): Promise<T | S3Pointer> {
    if (value === undefined || value === null || PayloadStore.sizeOf(value) <= this.thresholdBytes) return value;
    return this.putBlob(key, value);
  }

  /** Unconditionally store `value` in S3 and return its pointer. */
  async putBlob(key: string, value: unknown): Promise<S3Pointer> {
    const isBytes = value instanceof Uint8Array;
    const body = isBytes ? value : Buffer.from(JSON.stringify(value), 'utf8');
    const [s3, { PutObjectCommand }] = await Promise.all([this.s3(), import('@aws-sdk/client-s3')]);
    await s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ContentType: isBytes ? 'application/octet-stream' : 'application/json',
      }),
    );
    countMetric('S3Offloads');
    return isBytes ? { __s3: key, size: body.byteLength } : { __s3: key, json: true, size: body.byteLength };
  }

  /** Resolve a pointer (or pass an inline value through). */
  async resolve<T = unknown>(value: T | S3Pointer): Promise<T> {
    if (!isS3Pointer(value)) return value as T;
    const bytes = await this.getBytes(value.__s3);
    return (value.json ? JSON.parse(Buffer.from(bytes).toString('utf8')) : bytes) as T;
  }

  /** Pages of the objects under `prefix` (ListObjectsV2, in key order). */
  async *list(prefix: string): AsyncGenerator<ListedObject[]> {
    for await (const page of this.#pages({ Prefix: prefix })) {
      yield (page.Contents ?? []).map((o) => ({
        key: o.Key ?? '',
        size: o.Size ?? 0,
        lastModified: o.LastModified?.getTime() ?? 0,
      }));
    }
  }

  /** Pages of the "folders" directly under `prefix` (`<prefix><name>/`), via the `/` delimiter. */
  async *listFolders(prefix: string): AsyncGenerator<string[]> {
    for await (const page of this.#pages({ Prefix: prefix, Delimiter: '/' })) {
      yield (page.CommonPrefixes ?? []).map((p) => p.Prefix ?? '').filter((p) => p !== '');
    }
  }

  /** Every ListObjectsV2 page of `query`, following continuation tokens. */
  async *#pages(query: { Prefix: string; Delimiter?: string }) {
    const [s3, { ListObjectsV2Command }] = await Promise.all([this.s3(), import('@aws-sdk/client-s3')]);
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: this.bucket, ...query, ContinuationToken: token }));
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * Delete `keys` (batches of 1,000). Idempotent: deleting a key that is already gone succeeds.
   * Returns the keys S3 refused, with its reason; never throws for a per-key failure.
   */
  async deleteKeys(keys: readonly string[]): Promise<Array<{ key: string; error: string }>> {
    if (keys.length === 0) return [];
    const [s3, { DeleteObjectsCommand }] = await Promise.all([this.s3(), import('@aws-sdk/client-s3')]);
    const failed: Array<{ key: string; error: string }> = [];
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const out = await s3.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      for (const e of out.Errors ?? [])
        failed.push({ key: e.Key ?? '', error: `${e.Code ?? 'Error'}: ${e.Message ?? ''}` });
    }
    return failed;
  }

  async getBytes(key: string): Promise<Uint8Array> {
    const [s3, { GetObjectCommand }] = await Promise.all([this.s3(), import('@aws-sdk/client-s3')]);
    const out = await s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    if (!out.Body) {
      throw Object.assign(new Error(`S3 object s3://${this.bucket}/${key} has no body`), { name: 'NoObjectBody' });
    }
    return new Uint8Array(await out.Body.transformToByteArray());
  }
}
