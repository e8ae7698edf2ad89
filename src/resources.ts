/**
 * The AWS resources the World needs — one table, one queue with its DLQ, one bucket — and a
 * reconciler that creates what is missing and reports drift in what exists. Shared by
 * `init` (apply / dry run), `emulate`, `doctor` (verify) and the test harness.
 *
 * Only standard AWS APIs are used, so the same code runs against real AWS and the emulators.
 * Settings an emulator does not implement (e.g. bucket lifecycle on fauxqs) are reported as
 * `skipped` with the reason rather than failing or being silently ignored.
 *
 * Hardening is re-checked on every run, not only when a resource is created (an interrupted `init`,
 * or a bucket that already existed, must not stay unhardened): the bucket's public-access block,
 * default encryption, TLS-only policy and lifecycle rule, and the table's TTL and point-in-time
 * recovery are each a {@link Setting}: checked, and when drifted fixed (`apply`), planned
 * (`dry-run`) or reported (`verify`, what `doctor` runs). A fix that fails is reported as drift
 * and the other settings are still reconciled; the next `init` applies it.
 */
import {
  CreateTableCommand,
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type TableDescription,
  UpdateContinuousBackupsCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  GetBucketEncryptionCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketPolicyCommand,
  GetPublicAccessBlockCommand,
  HeadBucketCommand,
  type LifecycleRule,
  PutBucketEncryptionCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketPolicyCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { AwsClients } from './aws/clients.js';
import { isNotFound, isUnsupported } from './aws/errors.js';
import { sleep } from './aws/sleep.js';
import type { WorldConfig } from './config.js';
import { GSI1, GSI2, TABLE_SCHEMA } from './ddb.js';
import { reconcileEncryption } from './encryption/at-rest.js';

export type ResourceKind = 'table' | 'queue' | 'dlq' | 'bucket' | 'encryption';
/**
 * `updated`: present, and `init` just fixed drifted settings; `would-update`: the dry-run plan for
 * that. `drift` is what is left that `init` could not (or, in `verify`, did not) fix.
 */
export type ResourceState = 'present' | 'created' | 'updated' | 'would-create' | 'would-update' | 'missing' | 'drift';

export interface ResourceReport {
  kind: ResourceKind;
  name: string;
  state: ResourceState;
  /** What was checked or done, one line each. */
  details: string[];
  /** For drift / missing: how to fix it. */
  fix?: string;
  /** Hardening settings of this resource and what happened to each. */
  settings?: SettingReport[];
}

/**
 * ok: as wanted. fixed: was drifted, applied now. would-fix: drifted, dry run. drift: drifted and
 * not fixed (verify mode, or not fixable automatically). failed: the fix was attempted and failed.
 * skipped: the endpoint does not implement the setting (an emulator), with the reason.
 */
export type SettingState = 'ok' | 'fixed' | 'would-fix' | 'drift' | 'failed' | 'skipped';

export interface SettingReport {
  setting: string;
  state: SettingState;
  detail: string;
}

/** One hardening setting: how to read it, and how to fix it when it drifted. */
interface Setting {
  name: string;
  /** What the fix does, e.g. "block all public access". */
  want: string;
  check(): Promise<SettingCheck>;
  /** Absent when the drift cannot be fixed automatically (then `check` names the manual fix). */
  apply?: () => Promise<void>;
}

type SettingCheck =
  | { ok: true; detail?: string }
  | { ok: false; problem: string; manualFix?: string }
  | { unsupported: string };

export type ReconcileMode = 'apply' | 'dry-run' | 'verify';

/**
 * Transient objects (queue bodies over the SQS size limit) live under these prefixes and expire.
 * Run payloads (`runs/`) do not: the event log keeps pointers to them for as long as the run exists.
 * Neither do bodies of waits longer than this window (`queue-held/`, src/queue/body-lifetime.ts):
 * their key carries their end, and `eve-world-aws sweep` deletes them after it.
 */
export const PAYLOAD_PREFIXES = ['queue/'] as const;
export const PAYLOAD_EXPIRY_DAYS = 30;
/** The tag storage puts on a finished run's objects under EVE_WORLD_AWS_RETENTION_DAYS. */
export const RETENTION_TAG = 'eve-world-aws-expired';
/** Message retention: the maximum, so that long-wait hops and DLQ triage have room. */
export const RETENTION_SECONDS = 1_209_600;
export const MAX_MESSAGE_SIZE = 1_048_576;

export function queueNameOf(ref: string): string {
  return /^https?:\/\//.test(ref) ? ref.split('/').pop()! : ref;
}

const errName = (err: unknown) => (err as { name?: string })?.name ?? '';
const errText = (err: unknown) =>
  `${errName(err) || 'Error'}: ${(err as { message?: string })?.message ?? String(err)}`;

/**
 * Check every setting and fix, plan or report its drift according to `mode`. Never throws for one
 * setting: a failed read or fix is reported and the others still run.
 */
async function reconcileSettings(settings: Setting[], mode: ReconcileMode): Promise<SettingReport[]> {
  const out: SettingReport[] = [];
  for (const s of settings) {
    let c: SettingCheck;
    try {
      c = await s.check();
    } catch (err) {
      if (isUnsupported(err))
        c = { unsupported: `not implemented by this endpoint (${errName(err) || 'unsupported'})` };
      else {
        out.push({ setting: s.name, state: 'failed', detail: `could not read it: ${errText(err)}` });
        continue;
      }
    }
    if ('unsupported' in c) {
      out.push({ setting: s.name, state: 'skipped', detail: `skipped: ${c.unsupported}` });
    } else if (c.ok) {
      out.push({ setting: s.name, state: 'ok', detail: c.detail ?? s.want });
    } else if (!s.apply || mode === 'verify' || c.manualFix !== undefined) {
      out.push({
        setting: s.name,
        state: 'drift',
        detail: c.manualFix ? `${c.problem}; fix: ${c.manualFix}` : c.problem,
      });
    } else if (mode === 'dry-run') {
      out.push({ setting: s.name, state: 'would-fix', detail: `${c.problem}; would ${s.want}` });
    } else {
      try {
        await s.apply();
        out.push({ setting: s.name, state: 'fixed', detail: `${c.problem}; fixed: ${s.want}` });
      } catch (err) {
        if (isUnsupported(err))
          out.push({
            setting: s.name,
            state: 'skipped',
            detail: `skipped: not implemented by this endpoint (${errName(err)})`,
          });
        else
          out.push({ setting: s.name, state: 'failed', detail: `${c.problem}; could not ${s.want}: ${errText(err)}` });
      }
    }
  }
  return out;
}

/** Fold the settings into the report: details, and the state they imply. */
function applySettings(report: ResourceReport, settings: SettingReport[], fixCommand: string): void {
  report.settings = settings;
  for (const s of settings) report.details.push(`${s.setting}: ${s.detail}`);
  const bad = settings.filter((s) => s.state === 'drift' || s.state === 'failed');
  if (bad.length > 0) {
    report.state = 'drift';
    const fix = `run \`${fixCommand}\` to apply ${bad.map((s) => s.setting).join(', ')}`;
    report.fix = report.fix ? `${report.fix}; ${fix}` : fix;
    return;
  }
  if (report.state !== 'present') return;
  if (settings.some((s) => s.state === 'fixed')) report.state = 'updated';
  else if (settings.some((s) => s.state === 'would-fix')) report.state = 'would-update';
}

/** AWS partition of a region (for ARNs): aws, aws-cn or aws-us-gov. */
export function partitionOf(region: string | undefined): string {
  if (region?.startsWith('cn-')) return 'aws-cn';
  if (region?.startsWith('us-gov-')) return 'aws-us-gov';
  return 'aws';
}

// ---------- table ----------

function tableDrift(t: TableDescription): string[] {
  const problems: string[] = [];
  const ks = (t.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
  if (ks !== 'PK:HASH,SK:RANGE') problems.push(`key schema is ${ks}, expected PK (HASH) + SK (RANGE)`);
  for (const g of TABLE_SCHEMA.gsis) {
    const found = t.GlobalSecondaryIndexes?.find((x) => x.IndexName === g.name);
    if (!found) {
      problems.push(`global secondary index ${g.name} is missing`);
      continue;
    }
    const gks = (found.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
    if (gks !== `${g.pk}:HASH,${g.sk}:RANGE`)
      problems.push(`index ${g.name} has keys ${gks}, expected ${g.pk} + ${g.sk}`);
    const want = g.projection;
    const got = found.Projection;
    const attrs = (a: readonly string[] | undefined) => [...(a ?? [])].sort().join(',');
    if (got?.ProjectionType !== want.ProjectionType || attrs(got?.NonKeyAttributes) !== attrs(want.NonKeyAttributes)) {
      problems.push(
        `index ${g.name} projects ${got?.ProjectionType}${got?.NonKeyAttributes ? ` (${attrs(got.NonKeyAttributes)})` : ''}, ` +
          `expected ${want.ProjectionType} (${attrs(want.NonKeyAttributes)})`,
      );
    }
  }
  return problems;
}

/** The table's hardening: TTL on `ttl` (expiry of finished runs and claims) and point-in-time recovery. */
function tableSettings(ddb: DynamoDBClient, table: string): Setting[] {
  const attr = TABLE_SCHEMA.ttlAttribute;
  return [
    {
      name: 'time to live',
      want: `enable TTL on attribute "${attr}"`,
      async check() {
        const d = (await ddb.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription;
        const on = d?.TimeToLiveStatus === 'ENABLED' || d?.TimeToLiveStatus === 'ENABLING';
        if (on && d?.AttributeName === attr) return { ok: true, detail: `enabled on "${attr}"` };
        if (on) {
          return {
            ok: false,
            problem: `enabled on attribute "${d?.AttributeName}", expected "${attr}"`,
            manualFix: 'a table has one TTL attribute; use another table (EVE_WORLD_AWS_TABLE)',
          };
        }
        return { ok: false, problem: `not enabled (status ${d?.TimeToLiveStatus ?? 'unknown'})` };
      },
      async apply() {
        try {
          await ddb.send(
            new UpdateTimeToLiveCommand({
              TableName: table,
              TimeToLiveSpecification: { AttributeName: attr, Enabled: true },
            }),
          );
        } catch (err) {
          // An SDK retry after a lost response finds its own change applied: that is success.
          if (!(errName(err) === 'ValidationException' && /already enabled/i.test(String((err as Error).message))))
            throw err;
        }
      },
    },
    {
      name: 'point-in-time recovery',
      want: 'enable point-in-time recovery',
      async check() {
        const d = (await ddb.send(new DescribeContinuousBackupsCommand({ TableName: table })))
          .ContinuousBackupsDescription;
        const status = d?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
        if (status === 'ENABLED') return { ok: true, detail: 'enabled' };
        return { ok: false, problem: `not enabled (status ${status ?? 'unknown'})` };
      },
      async apply() {
        await ddb.send(
          new UpdateContinuousBackupsCommand({
            TableName: table,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        );
      },
    },
  ];
}

async function reconcileTable(ddb: DynamoDBClient, table: string, mode: ReconcileMode): Promise<ResourceReport> {
  const report: ResourceReport = { kind: 'table', name: table, state: 'present', details: [] };
  let desc: TableDescription | undefined;
  try {
    desc = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  if (!desc) {
    if (mode !== 'apply') {
      report.state = mode === 'dry-run' ? 'would-create' : 'missing';
      report.details.push(
        `create table ${table} (PAY_PER_REQUEST, PK/SK, ${GSI1} + ${GSI2}, TTL on "${TABLE_SCHEMA.ttlAttribute}", point-in-time recovery)`,
      );
      if (mode === 'verify') report.fix = 'run `eve-world-aws init`';
      return report;
    }
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [...TABLE_SCHEMA.keySchema],
        AttributeDefinitions: [...TABLE_SCHEMA.attributeDefinitions],
        GlobalSecondaryIndexes: TABLE_SCHEMA.gsis.map((g) => ({
          IndexName: g.name,
          KeySchema: [
            { AttributeName: g.pk, KeyType: 'HASH' },
            { AttributeName: g.sk, KeyType: 'RANGE' },
          ],
          Projection: {
            ProjectionType: g.projection.ProjectionType,
            NonKeyAttributes: [...g.projection.NonKeyAttributes],
          },
        })),
      }),
    );
    // Real DynamoDB takes a few seconds to become ACTIVE; UpdateTimeToLive needs ACTIVE.
    for (let i = 0; i < 120; i++) {
      const t = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
      if (t?.TableStatus === 'ACTIVE') break;
      await sleep(1000);
    }
    report.state = 'created';
    report.details.push('created (PAY_PER_REQUEST, 2 GSIs)');
    applySettings(report, await reconcileSettings(tableSettings(ddb, table), mode), 'eve-world-aws init');
    return report;
  }
  const problems = tableDrift(desc);
  if (problems.length > 0) {
    report.state = 'drift';
    report.details.push(...problems);
    report.fix =
      `the table was not created by eve-world-aws or was changed. Use another table (EVE_WORLD_AWS_TABLE), ` +
      `or fix it: ${problems.map((p) => p.replace(/ is missing$/, '')).join('; ')}`;
  } else {
    report.details.push(`keys, ${GSI1} and ${GSI2} as expected`);
  }
  applySettings(report, await reconcileSettings(tableSettings(ddb, table), mode), 'eve-world-aws init');
  return report;
}

// ---------- queues ----------

async function queueUrl(sqs: SQSClient, ref: string): Promise<string | undefined> {
  if (/^https?:\/\//.test(ref)) {
    // Check that the URL answers.
    try {
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: ref, AttributeNames: ['QueueArn'] }));
      return ref;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
  try {
    return (await sqs.send(new GetQueueUrlCommand({ QueueName: ref }))).QueueUrl;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function queueAttrs(sqs: SQSClient, url: string): Promise<Record<string, string>> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  return out.Attributes ?? {};
}

async function reconcileQueues(
  sqs: SQSClient,
  config: WorldConfig,
  mode: ReconcileMode,
): Promise<{ dlq: ResourceReport; queue: ResourceReport }> {
  const dlqName = queueNameOf(config.deadLetterQueue);
  const qName = queueNameOf(config.queue);
  const dlq: ResourceReport = { kind: 'dlq', name: dlqName, state: 'present', details: [] };
  const queue: ResourceReport = { kind: 'queue', name: qName, state: 'present', details: [] };

  let dlqUrl = await queueUrl(sqs, config.deadLetterQueue);
  if (!dlqUrl) {
    if (mode !== 'apply') {
      dlq.state = mode === 'dry-run' ? 'would-create' : 'missing';
      dlq.details.push(`create queue ${dlqName} (retention ${RETENTION_SECONDS / 86400} days)`);
      if (mode === 'verify') dlq.fix = 'run `eve-world-aws init`';
    } else {
      dlqUrl = (
        await sqs.send(
          new CreateQueueCommand({
            QueueName: dlqName,
            Attributes: {
              MessageRetentionPeriod: String(RETENTION_SECONDS),
              MaximumMessageSize: String(MAX_MESSAGE_SIZE),
            },
          }),
        )
      ).QueueUrl;
      dlq.state = 'created';
      dlq.details.push(`created, retention ${RETENTION_SECONDS / 86400} days`);
    }
  } else {
    dlq.details.push('exists');
  }
  const dlqArn = dlqUrl ? (await queueAttrs(sqs, dlqUrl)).QueueArn : undefined;

  const wanted = {
    VisibilityTimeout: String(config.visibilityTimeoutSeconds),
    MaximumMessageSize: String(MAX_MESSAGE_SIZE),
    MessageRetentionPeriod: String(RETENTION_SECONDS),
    ReceiveMessageWaitTimeSeconds: '20',
  };
  const url = await queueUrl(sqs, config.queue);
  if (!url) {
    if (mode !== 'apply') {
      queue.state = mode === 'dry-run' ? 'would-create' : 'missing';
      queue.details.push(
        `create queue ${qName} (max message 1 MiB, visibility ${config.visibilityTimeoutSeconds} s, ` +
          `redrive to ${dlqName} after ${config.maxReceiveCount} receives)`,
      );
      if (mode === 'verify') queue.fix = 'run `eve-world-aws init`';
      return { dlq, queue };
    }
    await sqs.send(
      new CreateQueueCommand({
        QueueName: qName,
        Attributes: {
          ...wanted,
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: config.maxReceiveCount }),
        },
      }),
    );
    queue.state = 'created';
    queue.details.push(`created, redrive to ${dlqName} after ${config.maxReceiveCount} receives`);
    return { dlq, queue };
  }
  const drift = queueDrift(await queueAttrs(sqs, url), config, dlqArn);
  if (drift.problems.length === 0) {
    queue.details.push(
      `visibility ${config.visibilityTimeoutSeconds} s; redrive to ${dlqName} after ${config.maxReceiveCount} receives`,
    );
    return { dlq, queue };
  }
  queue.details.push(...drift.problems);
  const fixable = !drift.unfixable && dlqArn !== undefined;
  if (fixable && mode === 'apply') {
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: drift.wanted }));
    queue.state = 'updated';
    queue.details.push('fixed: queue attributes set to the configured values');
  } else if (fixable && mode === 'dry-run') {
    queue.state = 'would-update';
  } else {
    queue.state = 'drift';
    queue.fix = drift.unfixable
      ? 'create a standard (non-FIFO) queue and point EVE_WORLD_AWS_QUEUE at it'
      : `run \`eve-world-aws init\`, or \`aws sqs set-queue-attributes --queue-url ${url} --attributes '${JSON.stringify(drift.wanted)}'\``;
  }
  return { dlq, queue };
}

/**
 * Where the queue differs from the config. The consumer relies on these: the visibility is what
 * Lambda's copies are hidden for (and what the heartbeat reads), the redrive policy bounds poison
 * retries, the retention must outlast long-wait hops and DLQ triage.
 */
export function queueDrift(
  attrs: Record<string, string>,
  config: Pick<WorldConfig, 'visibilityTimeoutSeconds' | 'maxReceiveCount'>,
  dlqArn: string | undefined,
): { problems: string[]; wanted: Record<string, string>; unfixable: boolean } {
  const problems: string[] = [];
  let redrive: { deadLetterTargetArn?: string; maxReceiveCount?: number | string } | undefined;
  try {
    redrive = attrs.RedrivePolicy ? JSON.parse(attrs.RedrivePolicy) : undefined;
  } catch {
    redrive = undefined;
  }
  if (!redrive) problems.push('has no redrive policy (failed messages would be retried until retention expires)');
  else {
    if (dlqArn && redrive.deadLetterTargetArn !== dlqArn)
      problems.push(`redrives to ${redrive.deadLetterTargetArn}, expected ${dlqArn}`);
    if (Number(redrive.maxReceiveCount) !== config.maxReceiveCount) {
      problems.push(`redrives after ${redrive.maxReceiveCount} receives, configured ${config.maxReceiveCount}`);
    }
  }
  if (Number(attrs.VisibilityTimeout) !== config.visibilityTimeoutSeconds) {
    problems.push(
      `visibility timeout is ${attrs.VisibilityTimeout} s, configured ${config.visibilityTimeoutSeconds} s`,
    );
  }
  if (Number(attrs.MessageRetentionPeriod) !== RETENTION_SECONDS) {
    problems.push(`message retention is ${attrs.MessageRetentionPeriod} s, expected ${RETENTION_SECONDS} s (14 days)`);
  }
  if (Number(attrs.MaximumMessageSize) < MAX_MESSAGE_SIZE) {
    problems.push(`maximum message size is ${attrs.MaximumMessageSize} bytes, expected ${MAX_MESSAGE_SIZE}`);
  }
  const unfixable = attrs.FifoQueue === 'true';
  if (unfixable) problems.push('is a FIFO queue; eve-world-aws needs a standard queue');
  const wanted: Record<string, string> = {
    VisibilityTimeout: String(config.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(RETENTION_SECONDS),
    MaximumMessageSize: String(MAX_MESSAGE_SIZE),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlqArn ?? '<dlq-arn>',
      maxReceiveCount: config.maxReceiveCount,
    }),
  };
  return { problems, wanted, unfixable };
}

// ---------- bucket ----------

/** Sid of the statement `init` adds to the bucket policy; other statements are kept. */
export const TLS_ONLY_SID = 'EveWorldAwsDenyInsecureTransport';

const PUBLIC_ACCESS_BLOCK = {
  BlockPublicAcls: true,
  BlockPublicPolicy: true,
  IgnorePublicAcls: true,
  RestrictPublicBuckets: true,
};

/**
 * The bucket's lifecycle rules: offloaded queue bodies expire; with EVE_WORLD_AWS_RETENTION_DAYS,
 * objects of finished runs (tagged by storage/retention.ts) expire too.
 */
function lifecycleRules(retentionDays?: number): LifecycleRule[] {
  return [
    ...PAYLOAD_PREFIXES.map((p) => ({
      ID: `expire-${p.replace('/', '')}`,
      Status: 'Enabled' as const,
      Filter: { Prefix: p },
      Expiration: { Days: PAYLOAD_EXPIRY_DAYS },
    })),
    ...(retentionDays === undefined
      ? []
      : [
          {
            ID: 'expire-retained-runs',
            Status: 'Enabled' as const,
            Filter: { Tag: { Key: RETENTION_TAG, Value: 'true' } },
            Expiration: { Days: Math.max(1, retentionDays) },
          },
        ]),
  ];
}

/** A Get that answered 200 without the configuration: the endpoint does not implement the call. */
const notImplemented = (what: string) => ({
  unsupported: `not implemented by this endpoint (its answer has no ${what})`,
});

/** S3 "no such configuration" errors: the setting is absent (drift), not unsupported. */
const isAbsent = (err: unknown, ...names: string[]) => names.includes(errName(err));

interface PolicyStatement {
  Sid?: string;
  Effect?: string;
  Condition?: { Bool?: Record<string, unknown> };
}

function deniesInsecureTransport(st: PolicyStatement): boolean {
  const v = st.Condition?.Bool?.['aws:SecureTransport'];
  return st.Effect === 'Deny' && (v === 'false' || v === false || (Array.isArray(v) && v.includes('false')));
}

/** The bucket's hardening: no public access, default encryption, TLS only, expiry of transient objects. */
function bucketSettings(s3: S3Client, bucket: string, region: string | undefined, retentionDays?: number): Setting[] {
  const LIFECYCLE_RULES = lifecycleRules(retentionDays);
  const arn = `arn:${partitionOf(region)}:s3:::${bucket}`;
  const tlsOnly = {
    Sid: TLS_ONLY_SID,
    Effect: 'Deny',
    Principal: '*',
    Action: 's3:*',
    Resource: [arn, `${arn}/*`],
    Condition: { Bool: { 'aws:SecureTransport': 'false' } },
  };
  /** The current policy document; undefined when there is none; a string when the endpoint answered nonsense. */
  const readPolicy = async (): Promise<{ Statement?: PolicyStatement[] | PolicyStatement } | undefined | string> => {
    let text: string | undefined;
    try {
      text = (await s3.send(new GetBucketPolicyCommand({ Bucket: bucket }))).Policy;
    } catch (err) {
      if (isAbsent(err, 'NoSuchBucketPolicy')) return undefined;
      throw err;
    }
    try {
      return JSON.parse(text ?? '');
    } catch {
      return text ?? '';
    }
  };
  const readRules = async (): Promise<LifecycleRule[] | undefined | null> => {
    try {
      return (await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }))).Rules ?? null;
    } catch (err) {
      if (isAbsent(err, 'NoSuchLifecycleConfiguration')) return undefined;
      throw err;
    }
  };
  return [
    {
      name: 'public access block',
      want: 'block all public access',
      async check() {
        let cfg: Record<string, boolean | undefined> | undefined;
        try {
          cfg = (await s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket }))).PublicAccessBlockConfiguration as
            | Record<string, boolean | undefined>
            | undefined;
        } catch (err) {
          if (isAbsent(err, 'NoSuchPublicAccessBlockConfiguration'))
            return { ok: false, problem: 'no public access block' };
          throw err;
        }
        const keys = Object.keys(PUBLIC_ACCESS_BLOCK);
        if (!cfg || keys.every((k) => cfg?.[k] === undefined)) return notImplemented('public access block');
        const off = keys.filter((k) => cfg?.[k] !== true);
        return off.length === 0
          ? { ok: true, detail: 'all public access blocked' }
          : { ok: false, problem: `${off.join(', ')} off` };
      },
      async apply() {
        await s3.send(
          new PutPublicAccessBlockCommand({ Bucket: bucket, PublicAccessBlockConfiguration: PUBLIC_ACCESS_BLOCK }),
        );
      },
    },
    {
      name: 'encryption',
      want: 'set default encryption SSE-S3',
      async check() {
        let rules: { ApplyServerSideEncryptionByDefault?: { SSEAlgorithm?: string } }[] | undefined;
        try {
          rules = (await s3.send(new GetBucketEncryptionCommand({ Bucket: bucket }))).ServerSideEncryptionConfiguration
            ?.Rules;
        } catch (err) {
          if (isAbsent(err, 'ServerSideEncryptionConfigurationNotFoundError'))
            return { ok: false, problem: 'no default encryption' };
          throw err;
        }
        if (!rules || rules.length === 0) return notImplemented('default encryption configuration');
        const alg = rules.map((r) => r.ApplyServerSideEncryptionByDefault?.SSEAlgorithm).find(Boolean);
        // Any server-side algorithm is kept (a KMS key configured by the operator is never downgraded).
        return alg ? { ok: true, detail: `default ${alg}` } : { ok: false, problem: 'no default encryption algorithm' };
      },
      async apply() {
        await s3.send(
          new PutBucketEncryptionCommand({
            Bucket: bucket,
            ServerSideEncryptionConfiguration: {
              Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
            },
          }),
        );
      },
    },
    {
      name: 'TLS-only policy',
      want: `add statement ${TLS_ONLY_SID} (deny requests without TLS, aws:SecureTransport false) to the bucket policy`,
      async check() {
        const doc = await readPolicy();
        if (typeof doc === 'string') return notImplemented('bucket policy');
        if (!doc) return { ok: false, problem: 'no bucket policy' };
        const statements = Array.isArray(doc.Statement) ? doc.Statement : doc.Statement ? [doc.Statement] : [];
        return statements.some(deniesInsecureTransport)
          ? { ok: true, detail: 'requests without TLS denied' }
          : { ok: false, problem: 'the bucket policy does not deny requests without TLS' };
      },
      async apply() {
        // Merge: the operator's own statements stay.
        const doc = await readPolicy();
        const base: { Statement?: PolicyStatement[] | PolicyStatement } = typeof doc === 'object' && doc ? doc : {};
        const statements = (
          Array.isArray(base.Statement) ? base.Statement : base.Statement ? [base.Statement] : []
        ).filter((st) => st.Sid !== TLS_ONLY_SID);
        await s3.send(
          new PutBucketPolicyCommand({
            Bucket: bucket,
            Policy: JSON.stringify({ Version: '2012-10-17', ...base, Statement: [...statements, tlsOnly] }),
          }),
        );
      },
    },
    {
      name: 'lifecycle',
      want: `expire ${PAYLOAD_PREFIXES.join(' ')} objects after ${PAYLOAD_EXPIRY_DAYS} days`,
      async check() {
        const rules = await readRules();
        if (rules === null) return notImplemented('lifecycle configuration');
        const missing = LIFECYCLE_RULES.filter(
          (want) =>
            !rules?.some(
              (r) =>
                r.ID === want.ID &&
                r.Status === 'Enabled' &&
                r.Expiration?.Days !== undefined &&
                r.Expiration.Days <= (want.Expiration?.Days ?? PAYLOAD_EXPIRY_DAYS),
            ),
        );
        return missing.length === 0
          ? { ok: true, detail: `${PAYLOAD_PREFIXES.join(' ')} objects expire after ${PAYLOAD_EXPIRY_DAYS} days` }
          : { ok: false, problem: `no enabled expiry rule ${missing.map((r) => r.ID).join(', ')}` };
      },
      async apply() {
        // Merge: the operator's own rules stay; ours replace any rule with the same ID.
        const ours = new Set(LIFECYCLE_RULES.map((r) => r.ID));
        const existing = ((await readRules()) ?? []).filter((r) => !ours.has(r.ID));
        await s3.send(
          new PutBucketLifecycleConfigurationCommand({
            Bucket: bucket,
            LifecycleConfiguration: { Rules: [...existing, ...LIFECYCLE_RULES] },
          }),
        );
      },
    },
  ];
}

async function reconcileBucket(
  s3: S3Client,
  bucket: string,
  mode: ReconcileMode,
  region?: string,
  retentionDays?: number,
): Promise<ResourceReport> {
  const report: ResourceReport = { kind: 'bucket', name: bucket, state: 'present', details: [] };
  let exists = true;
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if (!isNotFound(err)) throw err;
    exists = false;
  }
  if (!exists) {
    if (mode !== 'apply') {
      report.state = mode === 'dry-run' ? 'would-create' : 'missing';
      report.details.push(
        `create bucket ${bucket} (private, SSE-S3, TLS only, expire ${PAYLOAD_PREFIXES.join(' ')} objects after ${PAYLOAD_EXPIRY_DAYS} days)`,
      );
      if (mode === 'verify') report.fix = 'run `eve-world-aws init`';
      return report;
    }
    await s3.send(
      new CreateBucketCommand({
        Bucket: bucket,
        ...(region && region !== 'us-east-1'
          ? { CreateBucketConfiguration: { LocationConstraint: region as never } }
          : {}),
      }),
    );
    report.state = 'created';
    report.details.push('created');
  }
  applySettings(
    report,
    await reconcileSettings(bucketSettings(s3, bucket, region, retentionDays), mode),
    'eve-world-aws init',
  );
  return report;
}

/** Create (apply), plan (dry-run) or check (verify) every resource, in dependency order. */
export async function reconcile(
  clients: AwsClients,
  config: WorldConfig,
  mode: ReconcileMode,
): Promise<ResourceReport[]> {
  const table = await reconcileTable(clients.ddb, config.tableName, mode);
  const { dlq, queue } = await reconcileQueues(clients.sqs, config, mode);
  const bucket = await reconcileBucket(await clients.s3(), config.bucket, mode, config.region, config.retentionDays);
  // With EVE_WORLD_AWS_KMS_KEY_ID: the key and SSE-KMS on all of the above (src/encryption/at-rest.ts).
  return [table, dlq, queue, bucket, ...(await reconcileEncryption(clients, config, mode))];
}

export function hasProblems(reports: ResourceReport[]): boolean {
  return reports.some((r) => r.state === 'drift' || r.state === 'missing');
}

/** Least-privilege IAM policy for the World at run time: generated from the command table (src/aws/iam-actions.ts). */
export { iamPolicy } from './aws/iam-policy.js';
