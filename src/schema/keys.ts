/**
 * The single-table layout, stated here (the table below) and built here: every key the World reads or writes comes from
 * this module and nowhere else, so the layout has exactly one implementation (docs/how-it-works.md draws the data path
 * over it; docs/design.md, "Keys and indexes", argues it).
 *
 * ```
 * PK                      SK                 what
 * RUN#<runId>             EVT#<slot:20>      event log, source of truth; slot = dense 1-based position. An
 *                                            item holds one event, or a pair (slots N and N+1, the second
 *                                            in the map `e2`; no EVT#<N+1> item then): storage/records/event.ts
 * RUN#<runId>             RUN#meta           run view
 * RUN#<runId>             STEP#<stepId>      step view (+ the step lease: leaseToken, leaseUntil, leaseBeat, leaseTtl;
 *                                            storage/write/step-lease.ts;
 *                                            fs = slot of its step_created, storage/read/correlation.ts)
 * RUN#<runId>             WAIT#<waitId>      wait view
 * RUN#<runId>             RUNRESUME#<rid>    hook_received dedupe claim (resumeId -> slot); sorts after
 *                                            RUN#meta so EVT#..RUN#meta is exactly log + run view
 * RUN#<runId>             ATTR#<corrId>      attr_set workflow-writer dedupe claim
 * RUN#<runId>             DUE                the liveness backstop's check of an active run (storage/records/due.ts,
 *                                            src/backstop/); sorts before EVT#, outside the log range
 * RUN#<runId>             RUNKEY             the run's KMS-wrapped data key (src/encryption/); sorts
 *                                            after RUN#meta, outside the EVT#..RUN#meta range
 * HOOK#<token>            HOOK#meta          hook by token (global uniqueness claim)
 * STREAM#<runId>#<name>   CHUNK#<index:20>   stream block: chunks from <index> on, or the EOF (streams/block-items.ts)
 * QKEY#<idempotencyKey>   QKEY               queue dedupe claim, with a TTL attribute
 * NONCE#<signature>       NONCE              accepted delivery signature (replay guard), with a TTL
 * PREFLIGHT               PREFLIGHT          never written: read once per process by src/preflight/resources.ts to
 *                                            prove the table exists and answers
 * FORMAT#                 meta               the table's format item: formats present, oldest reader allowed
 *                                            (src/schema/formats.ts, src/preflight/format-check.ts; written by `init`)
 * (an idempotency key or message id over 1,024 bytes is stored as `sha256:<hex>`: {@link boundedPart})
 * GSI1: GSI1PK/GSI1SK  CORR#<runId>#<correlationId> / EVT#<slot>   (first event of a hook/wait
 *                                                                   correlation; see below)
 *                      WF#<workflowName>#<shard> / <createdAt>#<runId>  (runs by workflow name)
 *                      RUNHOOKS#<runId> / <hookId>                  (hooks of a run)
 *                      RUNSTREAMS#<runId> / <name>                  (streams of a run; on block 0)
 *                      DUE#<shard> / <dueAt ms:13>#<runId>          (active runs by when the backstop checks them)
 * GSI2: GSI2PK/GSI2SK  RUNS#<shard> / <createdAt ISO>#<runId>       (all runs by time)
 *                      HOOKS#<shard> / <hookId>                     (hook by id; all hooks)
 * ```
 *
 * Slots and chunk indices are zero-padded to 20 digits so that string order is numeric order. The log items' covered
 * slots tile 1..last (a pair covers two), so `EVT#` keys are dense except for the second halves of pairs.
 *
 * **No hot index partition.** DynamoDB serves about 1,000 WCU/s per partition-key value, and a throttled index pushes
 * back on the base table's transactions. List keys are therefore sharded over {@link LIST_SHARDS} values by a hash of
 * the run id (hook id), so no key takes more than about 1/16 of an index's writes whatever the mix of workflow names;
 * readers merge the shards' sorted pages. **Small index items.** Both indexes project only the keys and `status` (the
 * run listing's filter); readers fetch the items by key. Large inputs and outputs never land in an index, and an update
 * that changes neither a key nor `status` writes no index copy.
 */

export const ATTR = {
  pk: 'PK',
  sk: 'SK',
  gsi1pk: 'GSI1PK',
  gsi1sk: 'GSI1SK',
  gsi2pk: 'GSI2PK',
  gsi2sk: 'GSI2SK',
  ttl: 'ttl',
} as const;

import { createHash } from 'node:crypto';

export const GSI1 = 'GSI1';
export const GSI2 = 'GSI2';

const pad = (n: number) => String(n).padStart(20, '0');

/**
 * A key part that comes from outside the World (an idempotency key, a message id from a message):
 * as is, or `sha256:<hex>` when over 1,024 bytes, so the key stays under DynamoDB's 2,048-byte cap.
 */
function boundedPart(value: string): string {
  return Buffer.byteLength(value) > 1024 ? `sha256:${createHash('sha256').update(value).digest('hex')}` : value;
}

export const keys = {
  runPk: (runId: string) => `RUN#${runId}`,
  runMeta: (runId: string) => ({ PK: `RUN#${runId}`, SK: 'RUN#meta' }),
  event: (runId: string, slot: number) => ({ PK: `RUN#${runId}`, SK: `EVT#${pad(slot)}` }),
  eventSkPrefix: 'EVT#',
  eventSk: (slot: number) => `EVT#${pad(slot)}`,
  slotFromEventSk: (sk: string) => Number(sk.slice(4)),
  step: (runId: string, stepId: string) => ({ PK: `RUN#${runId}`, SK: `STEP#${stepId}` }),
  stepSkPrefix: 'STEP#',
  wait: (runId: string, waitId: string) => ({ PK: `RUN#${runId}`, SK: `WAIT#${waitId}` }),
  waitSkPrefix: 'WAIT#',
  attrClaim: (runId: string, correlationId: string) => ({ PK: `RUN#${runId}`, SK: `ATTR#${correlationId}` }),
  hook: (token: string) => ({ PK: `HOOK#${token}`, SK: 'HOOK#meta' }),
  stream: (runId: string, name: string) => `STREAM#${runId}#${name}`,
  chunk: (runId: string, name: string, index: number) => ({ PK: `STREAM#${runId}#${name}`, SK: `CHUNK#${pad(index)}` }),
  chunkSk: (index: number) => `CHUNK#${pad(index)}`,
  chunkSkPrefix: 'CHUNK#',
  indexFromChunkSk: (sk: string) => Number(sk.slice(6)),
  qkey: (idempotencyKey: string) => ({ PK: `QKEY#${boundedPart(idempotencyKey)}`, SK: 'QKEY' }),
  preflight: { PK: 'PREFLIGHT', SK: 'PREFLIGHT' },
  deliveryNonce: (signature: string) => ({ PK: `NONCE#${signature}`, SK: 'NONCE' }),
  tableFormat: () => ({ PK: 'FORMAT#', SK: 'meta' }),
  /** A deployment of this World (src/deployment/registry.ts): one partition, listed by one Query. */
  deployment: (id: string) => ({ PK: 'DEPLOY#', SK: `DEP#${id}` }),
  // GSI partitions
  corrGsi: (runId: string, correlationId: string) => `CORR#${runId}#${correlationId}`,
  runHooksGsi: (runId: string) => `RUNHOOKS#${runId}`,
  runStreamsGsi: (runId: string) => `RUNSTREAMS#${runId}`,
  runsGsi: (shard: number) => `RUNS#${shard}`,
  due: (runId: string) => ({ PK: `RUN#${runId}`, SK: 'DUE' }),
  dueGsi: (shard: number) => `DUE#${shard}`,
  hooksGsi: (shard: number) => `HOOKS#${shard}`,
  pad,
} as const;

/** Number of shards of each list key (runs, runs of one workflow, hooks). */
export const LIST_SHARDS = 16;

/** The list shard of an id: FNV-1a (32-bit) of its UTF-8 bytes, modulo {@link LIST_SHARDS}. */
export function shardOf(id: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(id, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % LIST_SHARDS;
}

/** An index copying the keys and `status` only (see "small index items" above). */
const gsi = <N extends string, P extends string, S extends string>(name: N, pk: P, sk: S) => ({
  name,
  pk,
  sk,
  projection: { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: ['status'] },
});

/**
 * The table definition, as data: the one source of truth for `init`, `doctor`, the test harness
 * and the CDK construct. Projections use the shape of DynamoDB's `Projection`.
 */
export const TABLE_SCHEMA = {
  keySchema: [
    { AttributeName: ATTR.pk, KeyType: 'HASH' as const },
    { AttributeName: ATTR.sk, KeyType: 'RANGE' as const },
  ],
  attributeDefinitions: [
    { AttributeName: ATTR.pk, AttributeType: 'S' as const },
    { AttributeName: ATTR.sk, AttributeType: 'S' as const },
    { AttributeName: ATTR.gsi1pk, AttributeType: 'S' as const },
    { AttributeName: ATTR.gsi1sk, AttributeType: 'S' as const },
    { AttributeName: ATTR.gsi2pk, AttributeType: 'S' as const },
    { AttributeName: ATTR.gsi2sk, AttributeType: 'S' as const },
  ],
  gsis: [gsi(GSI1, ATTR.gsi1pk, ATTR.gsi1sk), gsi(GSI2, ATTR.gsi2pk, ATTR.gsi2sk)],
  ttlAttribute: ATTR.ttl,
} as const;

/** The storage's keys (why `RUNRESUME#` sorts after `RUN#meta`: the table above). */
export const storageKeys = {
  resumeClaim: (runId: string, resumeId: string) => ({ PK: `RUN#${runId}`, SK: `RUNRESUME#${resumeId}` }),
  runMetaSk: 'RUN#meta',
  workflowRunsGsi: (workflowName: string, shard: number) => `WF#${workflowName}#${shard}`,
  hookMetaSk: 'HOOK#meta',
  hookPkPrefix: 'HOOK#',
} as const;

/**
 * The run's wrapped data key lives in the run's partition, not on the run view, because core asks
 * for the key in `start()` before `run_created` exists, and a resilient `run_started` elsewhere
 * must find the same key.
 */
export const encryptionKeys = {
  runKey: (runId: string) => ({ PK: `RUN#${runId}`, SK: 'RUNKEY' }),
} as const;
