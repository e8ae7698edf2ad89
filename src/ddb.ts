/**
 * The single-table layout. Every key the World reads or writes is built here and nowhere else,
 * so the layout documented in design.md has exactly one implementation.
 *
 * ```
 * PK                      SK                 what
 * RUN#<runId>             EVT#<slot:20>      event log, source of truth; slot = dense 1-based position
 * RUN#<runId>             RUN#meta           run view
 * RUN#<runId>             STEP#<stepId>      step view
 * RUN#<runId>             WAIT#<waitId>      wait view
 * RUN#<runId>             RUNRESUME#<rid>    hook_received dedupe claim (resumeId -> slot); sorts after
 *                                            RUN#meta so EVT#..RUN#meta is exactly log + run view
 * RUN#<runId>             ATTR#<corrId>      attr_set workflow-writer dedupe claim
 * HOOK#<token>            HOOK#meta          hook by token (global uniqueness claim)
 * STREAM#<runId>#<name>   CHUNK#<index:20>   stream chunk
 * STREAM#<runId>#<name>   STREAM#meta        { tailIndex, done }
 * QKEY#<idempotencyKey>   QKEY               queue dedupe claim, with a TTL attribute
 * LEASE#<messageId>       LEASE              in-progress delivery lease of one logical message, with a TTL
 * GSI1: GSI1PK/GSI1SK  CORR#<runId>#<correlationId> / EVT#<slot>   (events by correlation)
 *                      WF#<workflowName> / <createdAt>#<runId>      (runs by workflow name)
 *                      RUNHOOKS#<runId> / <hookId>                  (hooks of a run)
 *                      RUNSTREAMS#<runId> / <name>                  (streams of a run)
 * GSI2: GSI2PK/GSI2SK  "RUN" / <createdAt ISO>#<runId>              (global run listing by time)
 *                      "HOOKID#<hookId>" / "HOOK"                   (hook by id)
 * ```
 *
 * Slots and chunk indices are zero-padded to 20 digits so that string order is numeric order
 * and `CHUNK#` sorts before `STREAM#meta` (one Query returns chunks and the meta row together).
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

export const GSI1 = 'GSI1';
export const GSI2 = 'GSI2';

const pad = (n: number) => String(n).padStart(20, '0');

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
  streamMeta: (runId: string, name: string) => ({ PK: `STREAM#${runId}#${name}`, SK: 'STREAM#meta' }),
  chunk: (runId: string, name: string, index: number) => ({ PK: `STREAM#${runId}#${name}`, SK: `CHUNK#${pad(index)}` }),
  chunkSk: (index: number) => `CHUNK#${pad(index)}`,
  chunkSkPrefix: 'CHUNK#',
  indexFromChunkSk: (sk: string) => Number(sk.slice(6)),
  qkey: (idempotencyKey: string) => ({ PK: `QKEY#${idempotencyKey}`, SK: 'QKEY' }),
  deliveryLease: (messageId: string) => ({ PK: `LEASE#${messageId}`, SK: 'LEASE' }),
  // GSI partitions
  corrGsi: (runId: string, correlationId: string) => `CORR#${runId}#${correlationId}`,
  runHooksGsi: (runId: string) => `RUNHOOKS#${runId}`,
  runStreamsGsi: (runId: string) => `RUNSTREAMS#${runId}`,
  runsGsi: 'RUN',
  hookIdGsi: (hookId: string) => `HOOKID#${hookId}`,
  pad,
} as const;

/** Table definition shared by `init`, `doctor` and the test harness. */
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
  gsis: [
    { name: GSI1, pk: ATTR.gsi1pk, sk: ATTR.gsi1sk },
    { name: GSI2, pk: ATTR.gsi2pk, sk: ATTR.gsi2sk },
  ],
  ttlAttribute: ATTR.ttl,
} as const;

/**
 * Storage additions (appended by the storage component).
 *
 * - `resumeClaim`: the `(runId, resumeId)` dedupe claim of `hook_received`. Its sort key sorts
 *   *after* `RUN#meta` (`RUNRESUME#` > `RUN#meta`), so the range `EVT#` .. `RUN#meta` of a run's
 *   partition holds exactly the event log followed by the run view: one Query returns the log
 *   tail and the run together.
 * - `workflowRunsGsi`: GSI1 partition of a run view, so runs are listed by workflow name without
 *   filtering the global `RUN` partition of GSI2.
 */
export const storageKeys = {
  resumeClaim: (runId: string, resumeId: string) => ({ PK: `RUN#${runId}`, SK: `RUNRESUME#${resumeId}` }),
  runMetaSk: 'RUN#meta',
  workflowRunsGsi: (workflowName: string) => `WF#${workflowName}`,
  hookMetaSk: 'HOOK#meta',
  hookIdGsiSk: 'HOOK',
} as const;
