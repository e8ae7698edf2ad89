/**
 * ARN parts derived from configuration: the partition of a region, the name of a queue given as a
 * name or a queue URL, and the parts of an ARN. The one place any of them is computed (IAM
 * policies, bucket policies, reports, the CLI and the emulators all ask here).
 */
import { isHttpUrl } from '../config/checks.js';

/**
 * Region patterns per partition, as in the AWS SDK's partition table
 * (`@aws-sdk/core` util-endpoints `partitions.json`). Anything else is the commercial `aws`.
 */
const PARTITIONS: readonly [RegExp, string][] = [
  [/^cn-\w+-\d+$/, 'aws-cn'],
  [/^us-gov-\w+-\d+$/, 'aws-us-gov'],
  [/^us-iso-\w+-\d+$/, 'aws-iso'],
  [/^us-isob-\w+-\d+$/, 'aws-iso-b'],
  [/^eu-isoe-\w+-\d+$/, 'aws-iso-e'],
  [/^us-isof-\w+-\d+$/, 'aws-iso-f'],
  [/^eusc-de-\w+-\d+$/, 'aws-eusc'],
];

/** The ARN partition of `region`: `cn-north-1` -> `aws-cn`, `us-iso-east-1` -> `aws-iso`, ...; default `aws`. */
export function partitionOf(region: string | undefined): string {
  if (region) for (const [re, partition] of PARTITIONS) if (re.test(region)) return partition;
  return 'aws';
}

/** Whether a queue reference is a queue URL (else it is a queue name): the config's own test. */
export const isQueueUrl = isHttpUrl;

/** The queue name of a reference that is a name or a URL (`https://.../123456789012/name` -> `name`). */
export function queueNameOf(ref: string): string {
  return isQueueUrl(ref) ? (ref.replace(/\/+$/, '').split('/').pop() ?? ref) : ref;
}

/**
 * Whether `arn` (an event source's `eventSourceARN`) is the queue `ref` names: the same name, and
 * when `ref` is a queue URL that names an account, the same account.
 */
export function isQueueArnOf(ref: string, arn: string | undefined): boolean {
  const parts = arn === undefined ? undefined : parseArn(arn);
  if (parts?.service !== 'sqs' || parts.resource !== queueNameOf(ref)) return false;
  const account = isQueueUrl(ref) ? /\/(\d{12})\/[^/]+\/*$/.exec(ref)?.[1] : undefined;
  return account === undefined || account === parts.account;
}

export interface ArnParts {
  readonly partition: string;
  readonly service: string;
  readonly region: string;
  readonly account: string;
  /** Everything after the account, e.g. a queue name or `role/name`. */
  readonly resource: string;
}

/** `arn:<partition>:<service>:<region>:<account>:<resource>` -> its parts; undefined when it is not an ARN. */
export function parseArn(arn: string): ArnParts | undefined {
  const m = /^arn:(aws[a-z-]*):([a-z0-9-]+):([a-z0-9-]*):(\d{12}|):(.+)$/.exec(arn);
  if (!m) return undefined;
  const [, partition, service, region, account, resource] = m;
  return { partition, service, region, account, resource };
}
