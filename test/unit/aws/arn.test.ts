/** src/aws/arn.ts: the partition of every region family the SDK knows, queue names from URLs, ARN parts. */
import { describe, expect, it } from 'vitest';
import { isQueueUrl, parseArn, partitionOf, queueNameOf } from '../../../src/aws/arn.js';

describe('partitionOf', () => {
  it.each([
    ['us-east-1', 'aws'],
    ['eu-west-3', 'aws'],
    ['ap-southeast-5', 'aws'],
    ['il-central-1', 'aws'],
    ['cn-north-1', 'aws-cn'],
    ['cn-northwest-1', 'aws-cn'],
    ['us-gov-west-1', 'aws-us-gov'],
    ['us-gov-east-1', 'aws-us-gov'],
    ['us-iso-east-1', 'aws-iso'],
    ['us-iso-west-1', 'aws-iso'],
    ['us-isob-east-1', 'aws-iso-b'],
    ['eu-isoe-west-1', 'aws-iso-e'],
    ['us-isof-south-1', 'aws-iso-f'],
    ['us-isof-east-1', 'aws-iso-f'],
    ['eusc-de-east-1', 'aws-eusc'],
  ])('%s is in %s', (region, partition) => {
    expect(partitionOf(region)).toBe(partition);
  });

  it('an unknown or missing region is the commercial partition', () => {
    expect(partitionOf(undefined)).toBe('aws');
    expect(partitionOf('')).toBe('aws');
    expect(partitionOf('<region>')).toBe('aws');
  });
});

describe('queue references', () => {
  it('a URL names its queue by its last path segment; a name is itself', () => {
    const url = 'https://sqs.us-east-1.amazonaws.com/123456789012/eve-world-queue';
    expect(isQueueUrl(url)).toBe(true);
    expect(queueNameOf(url)).toBe('eve-world-queue');
    expect(queueNameOf(`${url}/`)).toBe('eve-world-queue');
    expect(queueNameOf('http://127.0.0.1:4566/000000000000/q-dlq')).toBe('q-dlq');
    expect(isQueueUrl('eve-world-queue')).toBe(false);
    expect(queueNameOf('eve-world-queue')).toBe('eve-world-queue');
  });
});

describe('parseArn', () => {
  it('splits an ARN into its parts; the resource keeps its own separators', () => {
    expect(parseArn('arn:aws:sqs:us-east-1:000000000000:eve-world-queue')).toEqual({
      partition: 'aws',
      service: 'sqs',
      region: 'us-east-1',
      account: '000000000000',
      resource: 'eve-world-queue',
    });
    expect(parseArn('arn:aws-us-gov:scheduler:us-gov-west-1:123456789012:schedule/g/n')?.resource).toBe('schedule/g/n');
    expect(parseArn('arn:aws:iam::123456789012:role/x')).toMatchObject({
      service: 'iam',
      region: '',
      resource: 'role/x',
    });
  });

  it('is undefined for anything that is not an ARN', () => {
    for (const s of ['', 'eve-world-queue', 'https://sqs.us-east-1.amazonaws.com/1/q', 'arn:aws:sqs:us-east-1:12:q'])
      expect(parseArn(s), s).toBeUndefined();
  });
});
