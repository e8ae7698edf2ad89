/**
 * Every command that opens the World (`runs`, `tail`, `redrive`, `redrive --stranded`, `sweep`,
 * `sweep --dry-run`) names a missing table, queue, dead-letter queue or bucket with the variable
 * that chose its name and the fix, and exits 2 as the configuration error it is (issue 34, item 4;
 * issue 43: docs/cli.md's exit codes): the real CLI, spawned against
 * the emulators with one name wrong at a time, the other resources present.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyClients } from '../../../src/aws/clients.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';
import { runCli } from '../../helpers/cli.js';

let fx: Fixture;

beforeAll(async () => {
  fx = await createFixture({}, 'miss');
});
afterAll(() => {
  if (fx) destroyClients(fx.clients);
});

const RUN_ID = 'wrun_01JD0000000000000000000000';

const COMMANDS: string[][] = [
  ['runs'],
  ['runs', '--json'],
  ['tail', RUN_ID],
  ['redrive', '--dry-run'],
  ['redrive', '--stranded', '--dry-run'],
  ['sweep'],
  ['sweep', '--dry-run'],
];

// Every command with a missing table (what they all read first); the queue and the bucket with two
// commands each (the check is one seam, src/cli/shared/world.ts: the commands differ only in what follows).
describe.each([
  ['table', 'EVE_WORLD_AWS_TABLE', 'DynamoDB table', 'AWS_ENDPOINT_URL_DYNAMODB', COMMANDS],
  ['queue', 'EVE_WORLD_AWS_QUEUE', 'SQS queue', 'AWS_ENDPOINT_URL_SQS', [['runs'], ['sweep', '--dry-run']]],
  [
    'bucket',
    'EVE_WORLD_AWS_BUCKET',
    'S3 bucket',
    'AWS_ENDPOINT_URL_S3',
    [
      ['tail', RUN_ID],
      ['redrive', '--dry-run'],
    ],
  ],
])('a missing %s', (_, variable, what, endpoint, commands) => {
  it.each(commands.map((c) => [c.join(' '), c]))('`%s` names it with the fix and exits 2', async (_name, args) => {
    const wrong = `${fx.config.prefix}-wrong`;
    const r = await runCli(args as string[], { ...fx.env, [variable]: wrong });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `error: eve-world-aws: the ${what} ${wrong} does not exist (named by ${variable}=${wrong}; region us-east-1, endpoint ${fx.env[endpoint]})`,
    );
    expect(r.stderr).toMatch(/`eve-world-aws doctor`.*`eve-world-aws init` creates them/);
    // One line, no stack trace, no raw SDK text.
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

it('a name that comes from the prefix names EVE_WORLD_AWS_PREFIX, and every missing resource at once', async () => {
  const prefix = `${fx.config.prefix}-other`;
  const r = await runCli(['runs'], { ...fx.env, EVE_WORLD_AWS_PREFIX: prefix });
  expect(r.code).toBe(2);
  for (const [what, name] of [
    ['DynamoDB table', prefix],
    ['SQS queue', `${prefix}-queue`],
    ['S3 bucket', `${prefix}-payloads`],
  ])
    expect(r.stderr).toContain(`the ${what} ${name} does not exist (named by EVE_WORLD_AWS_PREFIX=${prefix};`);
});

it('redrive also checks the dead-letter queue it reads; the other commands do not need it', async () => {
  const wrong = `${fx.config.prefix}-wrong-dlq`;
  const env = { ...fx.env, EVE_WORLD_AWS_DLQ: wrong };
  for (const args of [['redrive'], ['redrive', '--stranded', '--dry-run']]) {
    const r = await runCli(args, env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `the SQS dead-letter queue ${wrong} does not exist (named by EVE_WORLD_AWS_DLQ=${wrong}; region us-east-1`,
    );
  }
  const runs = await runCli(['runs', '--json'], env);
  expect(runs.code).toBe(0);
  expect(JSON.parse(runs.stdout)).toEqual({ runs: [], hasMore: false });
});

it('with every name right the same commands succeed (the failures above are the names)', async () => {
  for (const args of [['runs'], ['sweep', '--dry-run'], ['redrive', '--dry-run']]) {
    const r = await runCli(args, fx.env);
    expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
  }
});
