/**
 * `World.getEncryptionKeyForRun` with KMS envelope encryption.
 *
 * Each run has its own 32-byte AES-256 data key. KMS generates it (`GenerateDataKey` under the
 * customer-managed key `EVE_WORLD_AWS_KMS_KEY_ID`) and only the wrapped form is stored, in the
 * run's partition (`RUN#<runId>` / `RUNKEY`, see src/schema/keys.ts). Core derives its payload keys
 * from the plaintext and encrypts step inputs/outputs, run input/output, hook payloads and stream
 * chunks with AES-GCM before they reach the World, so the table, the bucket and the queue only ever
 * hold ciphertext of them.
 *
 * Invariants:
 * - One key per run, whoever asks first: the key item is an owned record (src/aws/owned-record.ts)
 *   whose owner token is the wrapped key itself (unique per GenerateDataKey), claimed while absent
 *   or ours. Two processes that generate at once converge on the winner's key (the loser unwraps
 *   the key its refused claim returned), and an SDK retry of our own put after a lost response
 *   finds its own blob and wins. No payload is ever encrypted under a key that is not stored.
 * - The encryption context is `{ "eve-world-aws:runId": <runId> }`: a wrapped key copied to another
 *   run's item does not unwrap (KMS answers InvalidCiphertextException), and CloudTrail shows which
 *   run each Decrypt was for. It deliberately does not name the table, so a table restored under
 *   another name still decrypts.
 * - Unwrapped keys are cached in process ({@link KeyCache}: bounded in count and age), and
 *   concurrent requests for one run share one load, so a busy run costs one KMS call per process
 *   per cache lifetime.
 * - Reading never creates: a terminal run without a key item (created before encryption was turned
 *   on) gets `undefined` (its payloads are plaintext), not a fresh key.
 * - The KMS SDK is loaded on the first key that needs KMS (like `clients.kms()`), never at import:
 *   a cold start that needs no key does not pay for it.
 * - Only run ids are keyed: a string that is not `wrun_` + a ULID (core's run id, which
 *   `run_created` insists on) is refused before any KMS call or write.
 * - A key made before its run exists (core asks in `start()`, before `run_created`; a health check
 *   asks for a run that may never be created) is written with a TTL ({@link PENDING_KEY_SECONDS}
 *   after the later of now and the id's ULID time, past the 24 h in which core may still create the
 *   run) and `pendingTtl` = that TTL. The first request that finds the run created (the run was
 *   passed, or its view exists) removes both, in one conditional update that leaves a TTL retention
 *   set since alone; so keys of runs that never materialise expire, and keys of real runs live
 *   exactly as long as the run's other items.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { WorkflowWorldError } from '@workflow/errors';
import { isTerminalWorkflowRunStatus, type WorkflowRun, workflowRunIdSchema } from '@workflow/world';
import { decodeTime } from 'ulid';
import { readInput, when } from '../aws/expression.js';
import { type Fields, OwnedRecord, tableOf } from '../aws/owned-record.js';
import { keysOf } from '../aws/item-codec.js';
import { describeError, errorName } from '../aws/sdk-errors.js';
import type { WorldContext } from '../context/world-context.js';
import { ATTR, encryptionKeys, keys } from '../schema/keys.js';
import { KeyCache, type KeyCacheOptions } from './key-cache.js';

/** The KMS encryption context of a run's key (see above). */
const kmsContext = (runId: string) => ({ 'eve-world-aws:runId': runId });

/** How long the key of a run that was never created is kept (s): two days past its id's time. */
export const PENDING_KEY_SECONDS = 2 * 86_400;
/** The most run ids whose key is pending kept in memory (past it, their keys leave the cache too). */
const MAX_PENDING = 10_000;
/** How often a pending key's run is looked for (ms). */
const PENDING_CHECK_MS = 1000;

/** Counters for the bench and for tests (`stats()` of the RunKeys handed to `createWorld({ runKeys })`). */
export interface RunKeyStats {
  /** Calls to getEncryptionKeyForRun. */
  requests: number;
  /** Answered from the in-process cache. */
  cacheHits: number;
  /** KMS GenerateDataKey calls (one per run, plus one per lost creation race). */
  generateDataKey: number;
  /** KMS Decrypt calls (a cache miss on an existing key). */
  decrypt: number;
  /** Key items read / written. */
  keyReads: number;
  keyWrites: number;
  /** Creation races lost to another process (its key was adopted). */
  racesLost: number;
  /** Pending key items whose run was found created (their TTL removed). */
  keysKept: number;
}

/** The `RUNKEY` item as an owned record: its owner token is the wrapped key. */
const runKeys = new OwnedRecord('run key', { owner: 'wrappedKey' });

/** The wrapped key of a stored key item, and whether it is still pending (see above). */
function storedKey(item: Fields | undefined): { wrapped: Uint8Array; pending: boolean } | undefined {
  const b = item?.wrappedKey;
  return b instanceof Uint8Array && b.length > 0 ? { wrapped: b, pending: item?.pendingTtl !== undefined } : undefined;
}

export class RunKeys {
  readonly #ctx: WorldContext;
  readonly #keyId: string;
  readonly #cache: KeyCache;
  readonly #loading = new Map<string, Promise<Uint8Array | undefined>>();
  /** Run ids whose key item is still pending (see above) -> when to look for the run next. */
  readonly #pending = new Map<string, number>();
  readonly #stats: RunKeyStats = {
    requests: 0,
    cacheHits: 0,
    generateDataKey: 0,
    decrypt: 0,
    keyReads: 0,
    keyWrites: 0,
    racesLost: 0,
    keysKept: 0,
  };

  constructor(ctx: WorldContext, keyId: string, opts: KeyCacheOptions = {}) {
    this.#ctx = ctx;
    this.#keyId = keyId;
    this.#cache = new KeyCache(opts);
  }

  stats(): RunKeyStats {
    return { ...this.#stats };
  }

  /** Unwrapped keys held in process right now. */
  get cached(): number {
    return this.#cache.size;
  }

  /** Forget every unwrapped key (zeroed). */
  clear(): void {
    this.#cache.clear();
  }

  /** The run's 32-byte data key; created on first request unless the run is already terminal. */
  async forRun(runOrId: WorkflowRun | string): Promise<Uint8Array | undefined> {
    const run = typeof runOrId === 'string' ? undefined : runOrId;
    const runId = typeof runOrId === 'string' ? runOrId : runOrId?.runId;
    if (typeof runId !== 'string' || !workflowRunIdSchema.safeParse(runId).success) {
      const shown = typeof runId === 'string' ? JSON.stringify(runId.slice(0, 100)) : typeof runId;
      throw new WorkflowWorldError(
        `getEncryptionKeyForRun needs a run or a run id (wrun_ followed by a ULID), got ${shown}`,
        { status: 400 },
      );
    }
    this.#stats.requests++;
    const hit = this.#cache.get(runId);
    if (hit) {
      this.#stats.cacheHits++;
      await this.#settlePending(runId, run);
      return hit;
    }
    let loading = this.#loading.get(runId);
    if (!loading) {
      loading = this.#load(runId, run !== undefined && isTerminalWorkflowRunStatus(run.status)).finally(() =>
        this.#loading.delete(runId),
      );
      this.#loading.set(runId, loading);
    }
    const key = await loading;
    if (key) await this.#settlePending(runId, run);
    return key?.slice();
  }

  async #load(runId: string, terminal: boolean): Promise<Uint8Array | undefined> {
    this.#stats.keyReads++;
    // A key item of a newer format is refused, never misread (src/schema/formats.ts).
    const fields = ['wrappedKey', 'pendingTtl'];
    const stored = storedKey(await runKeys.read(tableOf(this.#ctx), encryptionKeys.runKey(runId), { fields }));
    let key: Uint8Array | undefined;
    if (stored) {
      key = await this.#unwrap(runId, stored.wrapped);
      if (stored.pending) this.#markPending(runId);
    } else if (!terminal) key = await this.#create(runId);
    if (key) this.#cache.set(runId, key);
    return key;
  }

  #markPending(runId: string): void {
    this.#pending.set(runId, 0);
    while (this.#pending.size > MAX_PENDING) {
      // Forgotten here, so it must be re-read (and found pending again) on its next request.
      const oldest = this.#pending.keys().next().value as string;
      this.#pending.delete(oldest);
      this.#cache.delete(oldest);
    }
  }

  /**
   * A pending key whose run now exists stops expiring. Looked for at most once a second per run;
   * a failure is retried on a later request (the key stays pending, never lost before its TTL).
   */
  async #settlePending(runId: string, run: WorkflowRun | undefined): Promise<void> {
    const next = this.#pending.get(runId);
    if (next === undefined || (run === undefined && Date.now() < next)) return;
    this.#pending.set(runId, Date.now() + PENDING_CHECK_MS);
    try {
      if (run === undefined && !(await this.#runExists(runId))) return;
      await this.#keepKey(runId);
      this.#pending.delete(runId);
    } catch {
      // Retried on a later request.
    }
  }

  async #runExists(runId: string): Promise<boolean> {
    const out = await this.#ctx.clients.ddb.send(
      new GetItemCommand({
        TableName: this.#ctx.config.tableName,
        Key: keysOf(keys.runMeta(runId)),
        ConsistentRead: true,
        ...readInput({ projection: [ATTR.pk] }),
      }),
    );
    return out.Item !== undefined;
  }

  /** Removes the pending TTL (only if still the one creation set) and the mark. Idempotent. */
  async #keepKey(runId: string): Promise<void> {
    const table = tableOf(this.#ctx);
    const key = encryptionKeys.runKey(runId);
    this.#stats.keysKept++;
    const pendingAsCreated = when.all(when.has('pendingTtl'), when.same(ATTR.ttl, 'pendingTtl'));
    if (await runKeys.update(table, key, { remove: [ATTR.ttl, 'pendingTtl'] }, pendingAsCreated)) return;
    // Already kept, or retention set its own TTL since: keep that, drop the mark (a key item that
    // is gone has nothing to keep).
    await runKeys.update(table, key, { remove: ['pendingTtl'] }, when.present);
  }

  async #create(runId: string): Promise<Uint8Array> {
    const kms = await this.#ctx.clients.kms();
    const { GenerateDataKeyCommand } = await import('@aws-sdk/client-kms');
    this.#stats.generateDataKey++;
    const generated = await kms
      .send(
        new GenerateDataKeyCommand({ KeyId: this.#keyId, KeySpec: 'AES_256', EncryptionContext: kmsContext(runId) }),
      )
      .catch((err) => {
        throw this.#kmsError('generate a data key for', runId, err);
      });
    const { Plaintext: plaintext, CiphertextBlob: wrapped, KeyId: keyArn } = generated;
    if (plaintext?.length !== 32 || !wrapped) {
      throw new WorkflowWorldError(
        `KMS GenerateDataKey for run ${runId} returned no 32-byte key (key ${this.#keyId})`,
        { status: 502 },
      );
    }
    // Pending until the run is found created (see above).
    const pendingTtl = Math.floor(Math.max(Date.now(), decodeTime(runId.slice(5))) / 1000) + PENDING_KEY_SECONDS;
    this.#stats.keyWrites++;
    const claim = await runKeys.claim(tableOf(this.#ctx), encryptionKeys.runKey(runId), wrapped, {
      kmsKeyArn: keyArn ?? this.#keyId,
      createdAt: Date.now(),
      [ATTR.ttl]: pendingTtl,
      pendingTtl,
    });
    if (claim.won) {
      this.#markPending(runId);
      return plaintext;
    }
    // Someone stored a key first: use what is stored.
    const stored = storedKey(claim.current);
    if (!stored)
      throw new WorkflowWorldError(`The data key item of run ${runId} vanished during creation; retry`, {
        status: 409,
      });
    if (stored.pending) this.#markPending(runId);
    plaintext.fill(0);
    this.#stats.racesLost++;
    return this.#unwrap(runId, stored.wrapped);
  }

  async #unwrap(runId: string, wrapped: Uint8Array): Promise<Uint8Array> {
    const kms = await this.#ctx.clients.kms();
    const { DecryptCommand } = await import('@aws-sdk/client-kms');
    this.#stats.decrypt++;
    const out = await kms
      .send(new DecryptCommand({ CiphertextBlob: wrapped, EncryptionContext: kmsContext(runId) }))
      .catch((err) => {
        throw this.#kmsError('unwrap the data key of', runId, err);
      });
    if (out.Plaintext?.length !== 32) {
      throw new WorkflowWorldError(`KMS Decrypt of run ${runId}'s data key did not return 32 bytes`, { status: 502 });
    }
    return out.Plaintext;
  }

  /** A KMS failure as an error that says what failed and what to do about it. */
  #kmsError(what: string, runId: string, err: unknown): WorkflowWorldError {
    const name = errorName(err);
    const hint: Record<string, string> = {
      AccessDeniedException: `grant this role kms:GenerateDataKey and kms:Decrypt on ${this.#keyId} (see \`eve-world-aws init --print-iam-policy\`)`,
      DisabledException: `the KMS key is disabled: enable it (aws kms enable-key) or point EVE_WORLD_AWS_KMS_KEY_ID at an enabled key`,
      KMSInvalidStateException: 'the KMS key is pending deletion or import; cancel the deletion or use another key',
      NotFoundException: `the KMS key ${this.#keyId} does not exist in this account and region; check EVE_WORLD_AWS_KMS_KEY_ID and AWS_REGION`,
      InvalidCiphertextException: `the stored data key of run ${runId} does not decrypt under its encryption context: it was altered or copied from another run`,
    };
    return new WorkflowWorldError(
      `Cannot ${what} run ${runId} with KMS (${describeError(err)}). ${hint[name] ? `Fix: ${hint[name]}.` : ''}`.trim(),
      { cause: err },
    );
  }
}
