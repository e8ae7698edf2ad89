/**
 * The checks a value must pass, each a function from the raw value to the problem (undefined when
 * it is acceptable): URLs, resource names and ARNs, the strength of a signing secret.
 */

/** True for http(s) URLs on this machine: 127.0.0.0/8, ::1 or `localhost`. */
export function isLoopbackUrl(raw: string): boolean {
  if (!URL.canParse(raw)) return false;
  const host = new URL(raw).hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

export function httpUrlProblem(raw: string): string | undefined {
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : '';
  return protocol === 'http:' || protocol === 'https:' ? undefined : `must be an http(s) URL, got "${raw}"`;
}

/** The minimum strength of a signing secret (each one, when it is a rotation list). */
export const SECRET_RULE = {
  minLength: 32,
  minDistinct: 8,
  words: 'at least 32 characters, at least 8 distinct characters, and not one shorter string repeated',
} as const;

/** Undefined when `secret` meets {@link SECRET_RULE}, else what is wrong. */
export function secretWeakness(secret: string): string | undefined {
  if (secret.length < SECRET_RULE.minLength) return `is ${secret.length} characters`;
  if (new Set(secret).size < SECRET_RULE.minDistinct) return `has only ${new Set(secret).size} distinct characters`;
  for (let p = 1; p <= secret.length / 2; p++) {
    if (secret.length % p === 0 && secret.slice(0, p).repeat(secret.length / p) === secret)
      return `repeats "${secret.slice(0, p)}"`;
  }
  return undefined;
}

// DynamoDB: 3-255 of [a-zA-Z0-9_.-]
export const TABLE_RE = /^[a-zA-Z0-9_.-]{3,255}$/;
// SQS: 1-80 of [a-zA-Z0-9_-] (no .fifo: the design uses one standard queue), or a URL.
const QUEUE_RE = /^[a-zA-Z0-9_-]{1,80}$/;
// S3: 3-63 lowercase letters, digits, dots and hyphens, starting and ending alphanumeric.
export const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
// KMS: key id (UUID or multi-Region mrk-), key ARN, alias name, alias ARN.
export const KMS_KEY_RE =
  /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32}|alias\/[a-zA-Z0-9/_-]{1,250}|arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(?:key\/(?:[0-9a-f-]{36}|mrk-[0-9a-f]{32})|alias\/[a-zA-Z0-9/_-]{1,250}))$/;
export const PREFIX_RE = /^[a-z0-9][a-z0-9-]{0,39}$/;
export const ROLE_ARN_RE = /^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/;
export const SECRET_ARN_RE = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$/;
export const REGION_RE = /^[a-z]{2}(-[a-z]+)+-\d+$/;
// EventBridge Scheduler: schedule group names are 1-64 of [0-9a-zA-Z-_.].
export const SCHEDULE_GROUP_RE = /^[0-9a-zA-Z_.-]{1,64}$/;

/** Whether a queue setting is a URL rather than a name. */
export function isHttpUrl(raw: string): boolean {
  return /^https?:\/\//.test(raw);
}

export function queueProblem(raw: string): string | undefined {
  if (isHttpUrl(raw)) return httpUrlProblem(raw);
  return QUEUE_RE.test(raw)
    ? undefined
    : `is not a valid SQS queue name or URL ("${raw}": 1-80 letters, digits, - or _)`;
}
