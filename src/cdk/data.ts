/**
 * The run data at rest: the table, the payload bucket and the optional customer-managed key both
 * are encrypted under.
 *
 * - Table from the same schema `init` creates (src/schema/keys.ts TABLE_SCHEMA), on demand, PITR
 *   on, deletion protection on by default.
 * - Payload bucket: public access blocked, SSE-S3, TLS only, the lifecycle rules of `init`.
 * - `kmsKey`: an existing key, or `'create'` for a new one with yearly rotation. The table and the
 *   bucket are encrypted under it here; the queues (./queue.ts) and the functions'
 *   EVE_WORLD_AWS_KMS_KEY_ID (./world-env.ts, per-run envelope encryption of payloads) use it too.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { PAYLOAD_EXPIRY_DAYS, PAYLOAD_PREFIXES } from '../config/limits.js';
import { TABLE_SCHEMA } from '../schema/keys.js';
import type { EveWorldAwsProps, Settings } from './props.js';

export interface Data {
  readonly kmsKey?: kms.IKey;
  readonly table: dynamodb.Table;
  readonly bucket: s3.Bucket;
}

/** Key, table and bucket, in `scope` (ids `Key`, `Table`, `Payloads`). */
export function addData(scope: Construct, props: EveWorldAwsProps, settings: Settings): Data {
  const { removalPolicy } = settings;
  const kmsKey =
    props.kmsKey === 'create'
      ? new kms.Key(scope, 'Key', {
          description: 'eve-world-aws run data: per-run data keys, and the table, queues and bucket at rest',
          enableKeyRotation: true,
          removalPolicy,
        })
      : props.kmsKey;

  const table = new dynamodb.Table(scope, 'Table', {
    partitionKey: keyOf('HASH'),
    sortKey: keyOf('RANGE'),
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    deletionProtection: props.deletionProtection ?? true,
    ...(kmsKey ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: kmsKey } : {}),
    removalPolicy,
  });
  for (const g of TABLE_SCHEMA.gsis) {
    table.addGlobalSecondaryIndex({
      indexName: g.name,
      partitionKey: { name: g.pk, type: attrType(g.pk) },
      sortKey: { name: g.sk, type: attrType(g.sk) },
      // The projection `init` creates: the listing attributes only, not every item's payload.
      projectionType: dynamodb.ProjectionType.INCLUDE,
      nonKeyAttributes: [...g.projection.NonKeyAttributes],
    });
  }

  const bucket = new s3.Bucket(scope, 'Payloads', {
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    // SSE-KMS with an S3 Bucket Key: one KMS call per bucket key period, not per object.
    ...(kmsKey
      ? { encryption: s3.BucketEncryption.KMS, encryptionKey: kmsKey, bucketKeyEnabled: true }
      : { encryption: s3.BucketEncryption.S3_MANAGED }),
    enforceSSL: true,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    serverAccessLogsBucket: props.accessLogsBucket,
    serverAccessLogsPrefix: props.accessLogsBucket ? 'eve-world-aws-payloads/' : undefined,
    lifecycleRules: PAYLOAD_PREFIXES.map((prefix) => ({
      id: `expire-${prefix.replace('/', '')}`,
      prefix,
      expiration: Duration.days(PAYLOAD_EXPIRY_DAYS),
    })),
    removalPolicy,
  });
  if (!props.accessLogsBucket) {
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only the World’s function roles can reach this private, TLS-only bucket; pass accessLogsBucket to turn server access logs on.',
    });
  }
  return { kmsKey, table, bucket };
}

function attrType(name: string): dynamodb.AttributeType {
  const def = TABLE_SCHEMA.attributeDefinitions.find((a) => a.AttributeName === name);
  if (!def) throw new Error(`TABLE_SCHEMA has no attribute definition for ${name}`);
  return def.AttributeType === 'S'
    ? dynamodb.AttributeType.STRING
    : def.AttributeType === 'N'
      ? dynamodb.AttributeType.NUMBER
      : dynamodb.AttributeType.BINARY;
}

function keyOf(type: 'HASH' | 'RANGE'): dynamodb.Attribute {
  const k = TABLE_SCHEMA.keySchema.find((x) => x.KeyType === type);
  if (!k) throw new Error(`TABLE_SCHEMA has no ${type} key`);
  return { name: k.AttributeName, type: attrType(k.AttributeName) };
}
