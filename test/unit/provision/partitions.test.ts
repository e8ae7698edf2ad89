/**
 * Provisioning names resources in the partition of the configured region: the bucket's TLS-only
 * statement and every ARN of the printed IAM policy, both through src/aws/arn.ts (a bucket policy
 * naming `arn:aws:s3:::` in an ISO region would not match its own bucket).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { tlsOnlyStatement } from '../../../src/provision/bucket.js';
import { iamPolicy } from '../../../src/provision/iam-policy.js';

const CASES = [
  ['us-east-1', 'aws'],
  ['cn-north-1', 'aws-cn'],
  ['us-gov-west-1', 'aws-us-gov'],
  ['us-iso-east-1', 'aws-iso'],
  ['us-isob-east-1', 'aws-iso-b'],
  ['eu-isoe-west-1', 'aws-iso-e'],
  ['us-isof-south-1', 'aws-iso-f'],
] as const;

describe.each(CASES)('region %s (partition %s)', (region, partition) => {
  it('the bucket TLS-only statement names the bucket in that partition', () => {
    expect(tlsOnlyStatement('b', region).Resource).toEqual([`arn:${partition}:s3:::b`, `arn:${partition}:s3:::b/*`]);
  });

  it('every ARN of the run-time policy is in that partition', () => {
    const config = loadConfig({ AWS_REGION: region, EVE_WORLD_AWS_SIGNING_SECRET: randomBytes(32).toString('hex') });
    const arns = iamPolicy(config, '123456789012').Statement.flatMap((s) => s.Resource);
    expect(arns.length).toBeGreaterThan(3);
    for (const arn of arns) expect(arn.startsWith(`arn:${partition}:`), arn).toBe(true);
  });
});
