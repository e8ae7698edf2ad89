/**
 * `init` / `doctor` for EVE_WORLD_AWS_KMS_KEY_ID: the key is usable, and the table, both queues and
 * the bucket are encrypted at rest under it (SSE-KMS) instead of AWS-owned keys.
 *
 * One report (`kind: 'encryption'`) lists a line per resource. Modes as in ./settings.ts: `apply`
 * sets what differs (every change here is online and non-destructive: DynamoDB re-keys in the
 * background, an SQS attribute, the bucket's default for new objects), `dry-run` says what it would
 * set, `verify` reports drift with the command that fixes it.
 *
 * Settings an emulator does not implement are reported `skipped` with the reason, never as applied:
 * DynamoDB Local accepts and ignores SSESpecification (its ARNs name the region `ddblocal`), and
 * fauxqs accepts PutBucketEncryption but does not report it back.
 *
 * The key itself is never created here: a customer-managed key carries a key policy and a monthly
 * cost that are the owner's decision. A missing key is reported with the command to make one.
 */
import { DescribeTableCommand, UpdateTableCommand } from '@aws-sdk/client-dynamodb';
import { DecryptCommand, DescribeKeyCommand, GenerateDataKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import { GetBucketEncryptionCommand, PutBucketEncryptionCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { isQueueUrl, queueNameOf } from '../aws/arn.js';
import type { AwsClients } from '../aws/clients.js';
import {
  describeError,
  errorName,
  isAccessDenied,
  isNoSuchConfiguration,
  isNotFound,
  isUnsupported,
} from '../aws/sdk-errors.js';
import type { WorldConfig } from '../config/index.js';
import type { ReconcileMode, ResourceReport } from './settings.js';

const nameOf = (err: unknown) => errorName(err) || 'Error';

/** One resource's line: ok, fixed (apply), would fix (dry-run), drift (verify) or skipped. */
interface Line {
  text: string;
  problem?: string;
}

/** The configured key, as DescribeKey names it. */
type Key = { arn: string; id: string };

/** Key ids, ARNs and aliases of one key compare equal: resolve anything that is not the ARN. */
async function sameKey(kms: KMSClient, ref: string | undefined, key: Key): Promise<boolean> {
  if (!ref) return false;
  if (ref === key.arn || ref === key.id) return true;
  try {
    return (await kms.send(new DescribeKeyCommand({ KeyId: ref }))).KeyMetadata?.Arn === key.arn;
  } catch {
    return false;
  }
}

async function checkKey(kms: KMSClient, config: WorldConfig): Promise<{ key?: Key; line: Line }> {
  const ref = config.kmsKeyId!;
  let meta: Record<string, unknown> | undefined;
  try {
    meta = (await kms.send(new DescribeKeyCommand({ KeyId: ref }))).KeyMetadata as Record<string, unknown> | undefined;
  } catch (err) {
    return {
      line: {
        text: `key ${ref}: ${describeError(err)}`,
        problem: isNotFound(err)
          ? `the KMS key ${ref} does not exist in this account and region: create one (\`aws kms create-key --description eve-world\` then \`aws kms create-alias --alias-name alias/eve-world --target-key-id <KeyId>\`) or fix EVE_WORLD_AWS_KMS_KEY_ID`
          : isAccessDenied(err)
            ? `allow this caller kms:DescribeKey, kms:GenerateDataKey and kms:Decrypt on ${ref}`
            : `see the error above`,
      },
    };
  }
  const arn = String(meta?.Arn);
  const key = { arn, id: String(meta?.KeyId) };
  const problems: string[] = [];
  if (meta?.KeyState !== 'Enabled') problems.push(`key state is ${meta?.KeyState}, expected Enabled`);
  if (meta?.KeyUsage !== 'ENCRYPT_DECRYPT') problems.push(`key usage is ${meta?.KeyUsage}, expected ENCRYPT_DECRYPT`);
  if ((meta?.KeySpec ?? meta?.CustomerMasterKeySpec) !== 'SYMMETRIC_DEFAULT')
    problems.push(`key spec is ${meta?.KeySpec}, expected SYMMETRIC_DEFAULT`);
  if (problems.length > 0) {
    return {
      line: {
        text: `key ${arn}: ${problems.join('; ')}`,
        problem: `use an enabled symmetric ENCRYPT_DECRYPT key (${problems.join('; ')})`,
      },
    };
  }
  // Prove this caller can do what the World does with it: wrap and unwrap a data key.
  try {
    const context = { 'eve-world-aws:check': config.tableName };
    const g = await kms.send(
      new GenerateDataKeyCommand({ KeyId: arn, KeySpec: 'AES_256', EncryptionContext: context }),
    );
    const d = await kms.send(new DecryptCommand({ CiphertextBlob: g.CiphertextBlob, EncryptionContext: context }));
    if (!d.Plaintext || !g.Plaintext || Buffer.compare(Buffer.from(d.Plaintext), Buffer.from(g.Plaintext)) !== 0) {
      return {
        key,
        line: {
          text: `key ${arn}: a data key did not round-trip`,
          problem: 'the KMS endpoint returned a different key on Decrypt',
        },
      };
    }
  } catch (err) {
    return {
      key,
      line: {
        text: `key ${arn}: ${describeError(err)}`,
        problem: `allow this caller kms:GenerateDataKey and kms:Decrypt on ${arn}`,
      },
    };
  }
  return { key, line: { text: `key ${arn}: enabled, symmetric, GenerateDataKey + Decrypt work for this caller` } };
}

async function tableLine(
  clients: AwsClients,
  config: WorldConfig,
  kms: KMSClient,
  key: Key,
  mode: ReconcileMode,
): Promise<Line> {
  const name = config.tableName;
  let t: Record<string, unknown> | undefined;
  try {
    t = (await clients.ddb.send(new DescribeTableCommand({ TableName: name }))).Table as
      | Record<string, unknown>
      | undefined;
  } catch (err) {
    return { text: `table ${name}: not checked (${nameOf(err)}); create it first` };
  }
  if (/^arn:aws[a-z-]*:dynamodb:ddblocal:/.test(String(t?.TableArn))) {
    return { text: `table ${name}: SSE-KMS skipped (DynamoDB Local does not implement table encryption settings)` };
  }
  const sse = t?.SSEDescription as { Status?: string; SSEType?: string; KMSMasterKeyArn?: string } | undefined;
  const ok =
    (sse?.Status === 'ENABLED' || sse?.Status === 'UPDATING' || sse?.Status === 'ENABLING') && sse.SSEType === 'KMS';
  if (ok && (await sameKey(kms, sse.KMSMasterKeyArn, key))) return { text: `table ${name}: SSE-KMS under the key` };
  const was = ok ? `SSE-KMS under ${sse.KMSMasterKeyArn}` : 'an AWS owned key';
  const fix = `aws dynamodb update-table --table-name ${name} --sse-specification Enabled=true,SSEType=KMS,KMSMasterKeyId=${key.arn}`;
  if (mode === 'verify')
    return { text: `table ${name}: encrypted with ${was}, expected SSE-KMS under ${key.arn}`, problem: fix };
  if (mode === 'dry-run') return { text: `table ${name}: would switch from ${was} to SSE-KMS under the key` };
  await clients.ddb.send(
    new UpdateTableCommand({
      TableName: name,
      SSESpecification: { Enabled: true, SSEType: 'KMS', KMSMasterKeyId: key.arn },
    }),
  );
  return { text: `table ${name}: switched from ${was} to SSE-KMS under the key (DynamoDB re-keys in the background)` };
}

async function queueLine(
  clients: AwsClients,
  kms: KMSClient,
  ref: string,
  key: Key,
  mode: ReconcileMode,
): Promise<Line> {
  const label = queueNameOf(ref);
  let url: string | undefined;
  try {
    url = isQueueUrl(ref) ? ref : (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: ref }))).QueueUrl;
  } catch (err) {
    return { text: `queue ${label}: not checked (${nameOf(err)}); create it first` };
  }
  const attrs =
    (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))).Attributes ??
    {};
  if (await sameKey(kms, attrs.KmsMasterKeyId, key)) return { text: `queue ${label}: SSE-KMS under the key` };
  const was = attrs.KmsMasterKeyId
    ? `SSE-KMS under ${attrs.KmsMasterKeyId}`
    : attrs.SqsManagedSseEnabled === 'true'
      ? 'SSE-SQS'
      : 'no SSE-KMS';
  const fix = `aws sqs set-queue-attributes --queue-url ${url} --attributes KmsMasterKeyId=${key.arn}`;
  if (mode === 'verify') return { text: `queue ${label}: ${was}, expected SSE-KMS under ${key.arn}`, problem: fix };
  if (mode === 'dry-run') return { text: `queue ${label}: would switch from ${was} to SSE-KMS under the key` };
  // 300 s data-key reuse (the SQS default): one KMS call per 5 minutes per producer, not per
  // message.
  await clients.sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: url,
      Attributes: { KmsMasterKeyId: key.arn, KmsDataKeyReusePeriodSeconds: '300' },
    }),
  );
  return { text: `queue ${label}: switched from ${was} to SSE-KMS under the key` };
}

type BucketRule = { ApplyServerSideEncryptionByDefault?: { SSEAlgorithm?: string; KMSMasterKeyID?: string } };

async function bucketRules(clients: AwsClients, bucket: string): Promise<BucketRule[] | 'unsupported' | 'none'> {
  const s3 = await clients.s3();
  try {
    const rules = (await s3.send(new GetBucketEncryptionCommand({ Bucket: bucket }))).ServerSideEncryptionConfiguration
      ?.Rules;
    return rules && rules.length > 0 ? rules : 'unsupported'; // real S3 always reports at least SSE-S3
  } catch (err) {
    if (isNoSuchConfiguration(err)) return 'none';
    if (isUnsupported(err)) return 'unsupported';
    throw err;
  }
}

async function bucketLine(
  clients: AwsClients,
  config: WorldConfig,
  kms: KMSClient,
  key: Key,
  mode: ReconcileMode,
): Promise<Line> {
  const bucket = config.bucket;
  let rules: Awaited<ReturnType<typeof bucketRules>>;
  try {
    rules = await bucketRules(clients, bucket);
  } catch (err) {
    return { text: `bucket ${bucket}: not checked (${nameOf(err)}); create it first` };
  }
  const current = typeof rules === 'string' ? undefined : rules[0]?.ApplyServerSideEncryptionByDefault;
  if (current?.SSEAlgorithm === 'aws:kms' && (await sameKey(kms, current.KMSMasterKeyID, key)))
    return { text: `bucket ${bucket}: default SSE-KMS under the key` };
  const was = current
    ? `default ${current.SSEAlgorithm}${current.KMSMasterKeyID ? ` under ${current.KMSMasterKeyID}` : ''}`
    : 'no reported default encryption';
  const fix =
    `aws s3api put-bucket-encryption --bucket ${bucket} --server-side-encryption-configuration ` +
    `'{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"aws:kms","KMSMasterKeyID":"${key.arn}"},"BucketKeyEnabled":true}]}'`;
  if (mode === 'verify') {
    if (rules === 'unsupported')
      return { text: `bucket ${bucket}: SSE-KMS skipped (this endpoint does not report bucket encryption)` };
    return { text: `bucket ${bucket}: ${was}, expected default SSE-KMS under ${key.arn}`, problem: fix };
  }
  if (mode === 'dry-run') return { text: `bucket ${bucket}: would set default SSE-KMS under the key (was ${was})` };
  const s3 = await clients.s3();
  await s3.send(
    new PutBucketEncryptionCommand({
      Bucket: bucket,
      ServerSideEncryptionConfiguration: {
        // S3 Bucket Keys: one KMS call per bucket-key period instead of one per object.
        Rules: [
          {
            ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: key.arn },
            BucketKeyEnabled: true,
          },
        ],
      },
    }),
  );
  if ((await bucketRules(clients, bucket)) === 'unsupported') {
    return {
      text: `bucket ${bucket}: SSE-KMS skipped (the endpoint accepted PutBucketEncryption but does not report bucket encryption back)`,
    };
  }
  return {
    text: `bucket ${bucket}: default encryption set to SSE-KMS under the key (was ${was}; existing objects keep theirs)`,
  };
}

/** The `encryption` report, or none when EVE_WORLD_AWS_KMS_KEY_ID is unset. */
export async function reconcileEncryption(
  clients: AwsClients,
  config: WorldConfig,
  mode: ReconcileMode,
): Promise<ResourceReport[]> {
  if (!config.kmsKeyId) return [];
  const kms = await clients.kms();
  const report: ResourceReport = { kind: 'encryption', name: config.kmsKeyId, state: 'present', details: [] };
  const { key, line } = await checkKey(kms, config);
  const lines: Line[] = [line];
  if (key && !line.problem) {
    lines.push(
      await tableLine(clients, config, kms, key, mode),
      await queueLine(clients, kms, config.deadLetterQueue, key, mode),
      await queueLine(clients, kms, config.queue, key, mode),
      await bucketLine(clients, config, kms, key, mode),
    );
  }
  report.details = lines.map((l) => l.text);
  const problems = lines.filter((l) => l.problem).map((l) => l.problem!);
  if (problems.length > 0) {
    report.state = !key && line.problem?.includes('does not exist') ? 'missing' : 'drift';
    report.fix = problems.join('; ');
  }
  return [report];
}
