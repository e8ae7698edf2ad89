/**
 * AWS facts have one home each: errors are recognised by src/aws/sdk-errors.ts, partitions and queue
 * names come from src/aws/arn.ts, DynamoDB expressions are written by src/aws/expression.ts. Scans
 * every module under src/ for a rival: an `instanceof` on an SDK exception class (fails across SDK
 * copies), a comparison of an error's name with an AWS exception name, a partition table, its own
 * queue-URL test, or expression text or placeholders of its own. Pure: reads the files.
 */
import { describe, expect, it } from 'vitest';
import { sourceFiles, stripComments } from '../../helpers/imports.js';

/** [what, pattern, the one module allowed to have it]. */
const RULES: [string, RegExp, string][] = [
  ['instanceof an SDK exception (use src/aws/sdk-errors.ts)', /\binstanceof\s+\w+Exception\b/, ''],
  [
    'an AWS error name compared by hand (use src/aws/sdk-errors.ts)',
    /\.(name|Code|code|__type)\s*[!=]==?\s*'[A-Za-z.]*(Exception|AccessDenied|CredentialsProviderError|NotFound|NoSuch\w*|ConditionalCheckFailed|TransactionConflict|ThrottlingError|ProvisionedThroughputExceeded|ValidationError)'/,
    'aws/sdk-errors.ts',
  ],
  ['a partition table (use partitionOf from src/aws/arn.ts)', /['"]aws-(cn|us-gov|iso)/, 'aws/arn.ts'],
  ['a queue-URL test (use isQueueUrl / queueNameOf from src/aws/arn.ts)', /\^https\?:\\\//, 'aws/arn.ts'],
  [
    'a DynamoDB expression written by hand (use src/aws/expression.ts)',
    /\b(ConditionExpression|KeyConditionExpression|FilterExpression|UpdateExpression|ProjectionExpression|ExpressionAttributeNames|ExpressionAttributeValues)\s*:/,
    'aws/expression.ts',
  ],
];

/**
 * Modules that may match a rule for another reason: config/checks.ts tells a queue setting's URL
 * from a name before any client exists (config/ is the base, below src/aws/, which it never imports).
 */
const EXCEPTIONS: Record<string, string[]> = { 'config/checks.ts': ['a queue-URL test'] };

function rivals(files: { rel: string; text: string }[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const text = stripComments(f.text);
    for (const [what, re, home] of RULES) {
      if (f.rel === home || EXCEPTIONS[f.rel]?.some((e) => what.startsWith(e))) continue;
      if (re.test(text)) out.push(`${f.rel}: ${what}`);
    }
  }
  return out;
}

const files = sourceFiles();

describe('one place for AWS facts', () => {
  it('no module under src/ recognises AWS errors, partitions or queue URLs, or writes an expression, on its own', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(rivals(files)).toEqual([]);
  });

  it('detects each kind of rival (the check can fail)', () => {
    const planted = [
      { rel: 'encryption/run-keys.ts', text: 'if (!(err instanceof ConditionalCheckFailedException)) throw err;' },
      { rel: 'streams/block-items.ts', text: "return (err as E)?.name === 'ConditionalCheckFailedException';" },
      { rel: 'cli/doctor.ts', text: "if (e?.name === 'AccessDeniedException' || e?.name === 'AccessDenied') {" },
      { rel: 'cli/init.ts', text: "if (e?.name === 'CredentialsProviderError') {" },
      { rel: 'resources.ts', text: "if (region?.startsWith('cn-')) return 'aws-cn';" },
      { rel: 'queue/transport.ts', text: 'const isUrl = (ref: string) => /^https?:\\/\\//.test(ref);' },
      { rel: 'aws/sdk-errors.ts', text: "return e.name === 'ThrottlingException';" },
      { rel: 'aws/arn.ts', text: "[/^cn-/, 'aws-cn'], /^https?:\\/\\//" },
      { rel: 'cli/world.ts', text: "(err as E)?.name === 'WorkflowRunNotFoundError' // a workflow error, not AWS" },
      { rel: 'queue/ok.ts', text: "// e.name === 'ThrottlingException' in a comment" },
      { rel: 'storage/write/commit.ts', text: "c.reasons.some((r) => r.Code === 'ConditionalCheckFailed')" },
      { rel: 'streams/queries.ts', text: "new QueryCommand({ KeyConditionExpression: 'PK = :pk' })" },
      { rel: 'preflight/resources.ts', text: "new GetItemCommand({ Key, ProjectionExpression: 'PK' })" },
      { rel: 'storage/read/runs.ts', text: '...readInput({ filter: [when.oneOf(ATTR.status, statuses)] })' },
    ];
    expect(rivals(planted)).toEqual([
      'encryption/run-keys.ts: instanceof an SDK exception (use src/aws/sdk-errors.ts)',
      'streams/block-items.ts: an AWS error name compared by hand (use src/aws/sdk-errors.ts)',
      'cli/doctor.ts: an AWS error name compared by hand (use src/aws/sdk-errors.ts)',
      'cli/init.ts: an AWS error name compared by hand (use src/aws/sdk-errors.ts)',
      'resources.ts: a partition table (use partitionOf from src/aws/arn.ts)',
      'queue/transport.ts: a queue-URL test (use isQueueUrl / queueNameOf from src/aws/arn.ts)',
      'storage/write/commit.ts: an AWS error name compared by hand (use src/aws/sdk-errors.ts)',
      'streams/queries.ts: a DynamoDB expression written by hand (use src/aws/expression.ts)',
      'preflight/resources.ts: a DynamoDB expression written by hand (use src/aws/expression.ts)',
    ]);
  });
});
