/**
 * The AWS resources the World needs — one table, one queue with its DLQ, one bucket — and a
 * reconciler that creates what is missing and reports drift in what exists. Shared by
 * `init` (apply / dry run), `emulate`, `doctor` (verify) and the test harness.
 *
 * Only standard AWS APIs are used, so the same code runs against real AWS and the emulators.
 * Settings an emulator does not implement (e.g. bucket lifecycle on fauxqs) are reported as
 * `skipped` with the reason rather than failing or being silently ignored.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  GetBucketEncryptionCommand,
  HeadBucketCommand,
  PutBucketEncryptionCommand,
  PutBucketLifecycleConfigurationCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueDoesNotExist,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { AwsClients } from './aws/clients.js';
import type { WorldConfig } from './config.js';
import { GSI1, GSI2, TABLE_SCHEMA } from './ddb.js';

export type ResourceKind = 'table' | 'queue' | 'dlq' | 'bucket';
export type ResourceState = 'present' | 'created' | 'would-create' | 'missing' | 'drift';

export interface ResourceReport {
  kind: ResourceKind;
  name: string;
  state: ResourceState;
  /** What was checked or done, one line each. */
  details: string[];
  /** For drift / missing: how to fix it. */
  fix?: string;
}

export type ReconcileMode = 'apply' | 'dry-run' | 'verify';

/**
 * Transient objects (queue bodies over the SQS size limit) live under these prefixes and expire.
 * Run payloads (`runs/`) do not: the event log keeps pointers to them for as long as the run exists.
 */
export const PAYLOAD_PREFIXES = ['queue/'] as const;
export const PAYLOAD_EXPIRY_DAYS = 30;
/** Message retention: the maximum, so that long-wait hops and DLQ triage have room. */
export const RETENTION_SECONDS = 1_209_600;
export const MAX_MESSAGE_SIZE = 1_048_576;

export function queueNameOf(ref: string): string {
  return /^https?:\/\//.test(ref) ? ref.split('/').pop()! : ref;
}

function isMissing(err: unknown): boolean {
  const name = (err as { name?: string })?.name ?? '';
  const status = (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  return (
    err instanceof ResourceNotFoundException ||
    err instanceof QueueDoesNotExist ||
    name === 'ResourceNotFoundException' ||
    name === 'QueueDoesNotExist' ||
    name === 'AWS.SimpleQueueService.NonExistentQueue' ||
    name === 'NotFound' ||
    name === 'NoSuchBucket' ||
    status === 404
  );
}

function isUnsupported(err: unknown): boolean {
  const name = (err as { name?: string })?.name ?? '';
  const status = (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  return name === 'NotImplemented' || name === 'InvalidAction' || status === 501 || status === 405;
}

// ---------- table ----------

function tableDrift(t: TableDescription, ttlOn: boolean): string[] {
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
    if (gks !== `${g.pk}:HASH,${g.sk}:RANGE`) problems.push(`index ${g.name} has keys ${gks}, expected ${g.pk} + ${g.sk}`);
    if (found.Projection?.ProjectionType !== 'ALL') problems.push(`index ${g.name} projects ${found.Projection?.ProjectionType}, expected ALL`);
  }
  if (!ttlOn) problems.push(`time to live is not enabled on attribute "${TABLE_SCHEMA.ttlAttribute}"`);
  return problems;
}

async function ttlEnabled(ddb: DynamoDBClient, table: string): Promise<boolean> {
  const out = await ddb.send(new DescribeTimeToLiveCommand({ TableName: table }));
  const d = out.TimeToLiveDescription;
  return (d?.TimeToLiveStatus === 'ENABLED' || d?.TimeToLiveStatus === 'ENABLING') && d.AttributeName === TABLE_SCHEMA.ttlAttribute;
}

async function reconcileTable(ddb: DynamoDBClient, table: string, mode: ReconcileMode): Promise<ResourceReport> {
  const report: ResourceReport = { kind: 'table', name: table, state: 'present', details: [] };
  let desc: TableDescription | undefined;
  try {
    desc = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  if (!desc) {
    if (mode !== 'apply') {
      report.state = mode === 'dry-run' ? 'would-create' : 'missing';
      report.details.push(`create table ${table} (PAY_PER_REQUEST, PK/SK, ${GSI1} + ${GSI2}, TTL on "${TABLE_SCHEMA.ttlAttribute}")`);
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
          Projection: { ProjectionType: 'ALL' },
        })),
      }),
    );
    // Real DynamoDB takes a few seconds to become ACTIVE; UpdateTimeToLive needs ACTIVE.
    for (let i = 0; i < 120; i++) {
      const t = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
      if (t?.TableStatus === 'ACTIVE') break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    await ddb.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true },
      }),
    );
    report.state = 'created';
    report.details.push('created (PAY_PER_REQUEST, 2 GSIs, TTL on)');
    return report;
  }
  const problems = tableDrift(desc, await ttlEnabled(ddb, table));
  if (problems.length > 0) {
    report.state = 'drift';
    report.details.push(...problems);
    report.fix =
      `the table was not created by eve-world-aws or was changed. Use another table (EVE_WORLD_AWS_TABLE), ` +
      `or fix it: ${problems.map((p) => p.replace(/ is missing$/, '')).join('; ')}` +
      (problems.some((p) => p.startsWith('time to live'))
        ? `; enable TTL with \`aws dynamodb update-time-to-live --table-name ${table} --time-to-live-specification Enabled=true,AttributeName=${TABLE_SCHEMA.ttlAttribute}\``
        : '');
    return report;
  }
  report.details.push(`keys, ${GSI1}, ${GSI2} and TTL as expected`);
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
      if (isMissing(err)) return undefined;
      throw err;
    }
  }
  try {
    return (await sqs.send(new GetQueueUrlCommand({ QueueName: ref }))).QueueUrl;
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

async function queueAttrs(sqs: SQSClient, url: string): Promise<Record<string, string>> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  return out.Attributes ?? {};
}

export interface QueueAttrsWanted {
  visibilityTimeoutSeconds: number;
  maxReceiveCount: number;
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
            Attributes: { MessageRetentionPeriod: String(RETENTION_SECONDS), MaximumMessageSize: String(MAX_MESSAGE_SIZE) },
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
  const attrs = await queueAttrs(sqs, url);
  const problems: string[] = [];
  let redrive: { deadLetterTargetArn?: string; maxReceiveCount?: number | string } | undefined;
  try {
    redrive = attrs.RedrivePolicy ? JSON.parse(attrs.RedrivePolicy) : undefined;
  } catch {
    redrive = undefined;
  }
  if (!redrive) problems.push('has no redrive policy (failed messages would be retried until retention expires)');
  else if (dlqArn && redrive.deadLetterTargetArn !== dlqArn)
    problems.push(`redrives to ${redrive.deadLetterTargetArn}, expected ${dlqArn}`);
  if (Number(attrs.MaximumMessageSize) < MAX_MESSAGE_SIZE)
    problems.push(`maximum message size is ${attrs.MaximumMessageSize} bytes, expected ${MAX_MESSAGE_SIZE}`);
  if (attrs.FifoQueue === 'true') problems.push('is a FIFO queue; eve-world-aws needs a standard queue');
  if (problems.length > 0) {
    queue.state = 'drift';
    queue.details.push(...problems);
    queue.fix =
      `set the queue attributes, e.g. \`aws sqs set-queue-attributes --queue-url ${url} --attributes ` +
      `'{"MaximumMessageSize":"${MAX_MESSAGE_SIZE}","RedrivePolicy":"{\\"deadLetterTargetArn\\":\\"${dlqArn ?? '<dlq-arn>'}\\",\\"maxReceiveCount\\":\\"${config.maxReceiveCount}\\"}"}'\``;
  } else {
    queue.details.push(`redrive to ${dlqName} after ${redrive?.maxReceiveCount} receives; max message ${attrs.MaximumMessageSize} bytes`);
  }
  return { dlq, queue };
}

// ---------- bucket ----------

async function reconcileBucket(s3: S3Client, bucket: string, mode: ReconcileMode, region?: string): Promise<ResourceReport> {
  const report: ResourceReport = { kind: 'bucket', name: bucket, state: 'present', details: [] };
  let exists = true;
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if (!isMissing(err)) throw err;
    exists = false;
  }
  if (!exists) {
    if (mode !== 'apply') {
      report.state = mode === 'dry-run' ? 'would-create' : 'missing';
      report.details.push(`create bucket ${bucket} (private, SSE-S3, expire ${PAYLOAD_PREFIXES.join(' ')} objects after ${PAYLOAD_EXPIRY_DAYS} days)`);
      if (mode === 'verify') report.fix = 'run `eve-world-aws init`';
      return report;
    }
    await s3.send(
      new CreateBucketCommand({
        Bucket: bucket,
        ...(region && region !== 'us-east-1' ? { CreateBucketConfiguration: { LocationConstraint: region as never } } : {}),
      }),
    );
    report.state = 'created';
    report.details.push('created');
    const settings: Array<[string, () => Promise<unknown>]> = [
      [
        'public access blocked',
        () =>
          s3.send(
            new PutPublicAccessBlockCommand({
              Bucket: bucket,
              PublicAccessBlockConfiguration: {
                BlockPublicAcls: true,
                BlockPublicPolicy: true,
                IgnorePublicAcls: true,
                RestrictPublicBuckets: true,
              },
            }),
          ),
      ],
      [
        'SSE-S3 encryption',
        () =>
          s3.send(
            new PutBucketEncryptionCommand({
              Bucket: bucket,
              ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
            }),
          ),
      ],
      [
        `lifecycle: expire offloaded queue bodies after ${PAYLOAD_EXPIRY_DAYS} days`,
        () =>
          s3.send(
            new PutBucketLifecycleConfigurationCommand({
              Bucket: bucket,
              LifecycleConfiguration: {
                Rules: PAYLOAD_PREFIXES.map((p) => ({
                  ID: `expire-${p.replace('/', '')}`,
                  Status: 'Enabled',
                  Filter: { Prefix: p },
                  Expiration: { Days: PAYLOAD_EXPIRY_DAYS },
                })),
              },
            }),
          ),
      ],
    ];
    for (const [what, apply] of settings) {
      try {
        await apply();
        report.details.push(what);
      } catch (err) {
        if (!isUnsupported(err)) throw err;
        report.details.push(`${what}: skipped (this endpoint does not support it)`);
      }
    }
    return report;
  }
  try {
    await s3.send(new GetBucketEncryptionCommand({ Bucket: bucket }));
    report.details.push('exists, encryption configured');
  } catch (err) {
    if (isUnsupported(err)) report.details.push('exists (encryption not checked: endpoint does not support it)');
    else if ((err as { name?: string }).name === 'ServerSideEncryptionConfigurationNotFoundError') {
      report.details.push('exists, no default encryption (S3 encrypts new objects with SSE-S3 by default)');
    } else throw err;
  }
  return report;
}

/** Create (apply), plan (dry-run) or check (verify) every resource, in dependency order. */
export async function reconcile(clients: AwsClients, config: WorldConfig, mode: ReconcileMode): Promise<ResourceReport[]> {
  const table = await reconcileTable(clients.ddb, config.tableName, mode);
  const { dlq, queue } = await reconcileQueues(clients.sqs, config, mode);
  const bucket = await reconcileBucket(await clients.s3(), config.bucket, mode, config.region);
  return [table, dlq, queue, bucket];
}

export function hasProblems(reports: ResourceReport[]): boolean {
  return reports.some((r) => r.state === 'drift' || r.state === 'missing');
}

/** Least-privilege IAM policy for the World at run time: generated from the command table (src/aws/iam-actions.ts). */
export { iamPolicy } from './aws/iam-policy.js';
