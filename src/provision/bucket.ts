/**
 * The bucket: created when missing, and hardened on every run with four settings: all public access
 * blocked, default encryption (any server-side algorithm is kept; an operator's KMS key is never
 * downgraded), a TLS-only bucket policy statement ({@link TLS_ONLY_SID}) and the lifecycle rules
 * that expire transient objects. Fixes merge: the operator's own policy statements and lifecycle
 * rules stay.
 */
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
import { partitionOf } from '../aws/arn.js';
import { isNoSuchConfiguration, unlessMissing } from '../aws/sdk-errors.js';
import { PAYLOAD_EXPIRY_DAYS, PAYLOAD_PREFIXES, RETENTION_TAG } from '../config/limits.js';
import { applySettings, type ReconcileMode, type ResourceReport, reconcileSettings, type Setting } from './settings.js';

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
 * objects of finished runs (tagged by storage/write/retention.ts) expire too.
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

/** What a Get answers, or undefined when the bucket has no such configuration. */
const unlessUnconfigured = <T>(call: Promise<T>): Promise<T | undefined> =>
  call.catch((err) => {
    if (isNoSuchConfiguration(err)) return undefined;
    throw err;
  });

/** A Get that answered 200 without the configuration: the endpoint does not implement the call. */
const notImplemented = (what: string) => ({
  unsupported: `not implemented by this endpoint (its answer has no ${what})`,
});

interface PolicyStatement {
  Sid?: string;
  Effect?: string;
  Condition?: { Bool?: Record<string, unknown> };
}

type PolicyDocument = { Statement?: PolicyStatement[] | PolicyStatement };

const statementsOf = (doc: PolicyDocument): PolicyStatement[] =>
  Array.isArray(doc.Statement) ? doc.Statement : doc.Statement ? [doc.Statement] : [];

function deniesInsecureTransport(st: PolicyStatement): boolean {
  const v = st.Condition?.Bool?.['aws:SecureTransport'];
  return st.Effect === 'Deny' && (v === 'false' || v === false || (Array.isArray(v) && v.includes('false')));
}

/** The statement `init` adds to the bucket policy: deny every request without TLS, on the bucket and its objects. */
export function tlsOnlyStatement(bucket: string, region: string | undefined) {
  const arn = `arn:${partitionOf(region)}:s3:::${bucket}`;
  return {
    Sid: TLS_ONLY_SID,
    Effect: 'Deny',
    Principal: '*',
    Action: 's3:*',
    Resource: [arn, `${arn}/*`],
    Condition: { Bool: { 'aws:SecureTransport': 'false' } },
  };
}

/** The bucket's hardening: no public access, default encryption, TLS only, expiry of transient objects. */
function bucketSettings(s3: S3Client, bucket: string, region: string | undefined, retentionDays?: number): Setting[] {
  const LIFECYCLE_RULES = lifecycleRules(retentionDays);
  const tlsOnly = tlsOnlyStatement(bucket, region);
  /** The current policy document; undefined when there is none; a string when the endpoint answered nonsense. */
  const readPolicy = async (): Promise<PolicyDocument | undefined | string> => {
    const out = await unlessUnconfigured(s3.send(new GetBucketPolicyCommand({ Bucket: bucket })));
    if (!out) return undefined;
    try {
      return JSON.parse(out.Policy ?? '');
    } catch {
      return out.Policy ?? '';
    }
  };
  const readRules = async (): Promise<LifecycleRule[] | undefined | null> => {
    const out = await unlessUnconfigured(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket })));
    return out && (out.Rules ?? null);
  };
  return [
    {
      name: 'public access block',
      want: 'block all public access',
      async check() {
        const out = await unlessUnconfigured(s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket })));
        if (!out) return { ok: false, problem: 'no public access block' };
        const cfg = out.PublicAccessBlockConfiguration as Record<string, boolean | undefined> | undefined;
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
        const out = await unlessUnconfigured(s3.send(new GetBucketEncryptionCommand({ Bucket: bucket })));
        if (!out) return { ok: false, problem: 'no default encryption' };
        const rules = out.ServerSideEncryptionConfiguration?.Rules;
        if (!rules || rules.length === 0) return notImplemented('default encryption configuration');
        const alg = rules.map((r) => r.ApplyServerSideEncryptionByDefault?.SSEAlgorithm).find(Boolean);
        // Any server-side algorithm is kept (a KMS key configured by the operator is never
        // downgraded).
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
        return statementsOf(doc).some(deniesInsecureTransport)
          ? { ok: true, detail: 'requests without TLS denied' }
          : { ok: false, problem: 'the bucket policy does not deny requests without TLS' };
      },
      async apply() {
        // Merge: the operator's own statements stay.
        const doc = await readPolicy();
        const base: PolicyDocument = typeof doc === 'object' && doc ? doc : {};
        const statements = statementsOf(base).filter((st) => st.Sid !== TLS_ONLY_SID);
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

export async function reconcileBucket(
  s3: S3Client,
  bucket: string,
  mode: ReconcileMode,
  region?: string,
  retentionDays?: number,
): Promise<ResourceReport> {
  const report: ResourceReport = { kind: 'bucket', name: bucket, state: 'present', details: [] };
  if (!(await unlessMissing(s3.send(new HeadBucketCommand({ Bucket: bucket }))))) {
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
