/**
 * Every refusal of the format checks (src/schema/formats.ts, src/preflight/format-check.ts), against a real table
 * and queue, shown by a "bumped" build: this checkout with the next format (every family and the
 * reader version one higher, writes that need that reader), built by test/helpers/builds.ts.
 *
 * - a table the bumped build's `init` upgraded: this build's `start()`, a CLI command, `doctor`
 *   and `init` refuse it with one error naming both versions and the upgrade step; the bumped
 *   build itself refuses the table before its `init` (migrations run before the code);
 * - a message the bumped build sent: this build's consumer parks it (never delivered, never
 *   counted toward the DLQ) with a log line naming both versions;
 * - items the bumped build wrote: this build's reads refuse them with a clear error.
 */
import { GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import type { Storage } from '@workflow/world';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { readTableFormat, TableFormatError } from '../../src/preflight/format-check.js';
import { FORMATS, READER_FORMAT } from '../../src/schema/formats.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { type Build, buildBumped, buildCurrent, removeBuild } from '../helpers/builds.js';
import { runCommand } from '../helpers/cli.js';

type BumpedModule = { createWorld: (o: Record<string, unknown>) => AwsWorld };

let bumped: Build & { format: number };
let current: Build;
let bumpedApi: BumpedModule;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  [bumped, current] = await Promise.all([buildBumped(), buildCurrent('formats')]);
  bumpedApi = (await import(bumped.indexUrl)) as BumpedModule;
  expect(bumped.format).toBe(READER_FORMAT + 1);
}, 120_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  if (bumped) removeBuild(bumped);
  if (current) removeBuild(current);
});

const cli = (build: Build, fixture: Fixture, args: string[]) =>
  runCommand(process.execPath, ['--no-warnings', build.cli, ...args], fixture.env, 90_000);

describe('a table upgraded by a newer build', () => {
  let fixture: Fixture;
  beforeAll(async () => {
    fixture = await createFixture({}, 'fmt');
  });

  it('the newer build refuses the table before its init, and its init --dry-run and init say what they change', async () => {
    const early = bumpedApi.createWorld({ config: fixture.config, consumer: { consumer: 'none' } });
    closers.push(() => early.close());
    await expect(early.start()).rejects.toThrow(
      new RegExp(
        `writes formats that need reader format ${bumped.format}, and table ${fixture.config.tableName} still allows readers from format 1\\. .*run \`eve-world-aws init\``,
      ),
    );

    const plan = await cli(bumped, fixture, ['init', '--dry-run']);
    expect(plan.code, plan.stderr).toBe(0);
    const change = `log 2, records 2, messages 2; oldest reader 1 -> log ${bumped.format}, records ${bumped.format}, messages ${bumped.format}; oldest reader ${bumped.format}`;
    expect(plan.stdout).toContain('would fix');
    expect(plan.stdout.replace(/\s+/g, ' ')).toContain(change);
    expect((await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).minReader).toBe(1); // unchanged

    const init = await cli(bumped, fixture, ['init', '--json']);
    expect(init.code, init.stderr).toBe(0);
    const report = (JSON.parse(init.stdout) as { resources: { kind: string; state: string; details: string[] }[] })
      .resources;
    expect(report.find((r) => r.kind === 'table')).toMatchObject({
      state: 'updated',
      details: expect.arrayContaining([`format: ${change}`]),
    });
    expect(await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).toMatchObject({
      recorded: true,
      minReader: bumped.format,
    });
    // Applied twice: nothing left to change.
    const again = await cli(bumped, fixture, ['init', '--json']);
    expect(JSON.parse(again.stdout).resources.find((r: { kind: string }) => r.kind === 'table').state).toBe('present');
  });

  const refusal = () =>
    new RegExp(
      `table ${fixture.config.tableName} needs reader format ${bumped.format} or later \\(formats present: log ${bumped.format}, records ${bumped.format}, messages ${bumped.format}\\); ` +
        `this build of @portfolio/eve-world-aws reads format ${READER_FORMAT}\\. Upgrade this process to a build that reads format ${bumped.format} \\(docs/operations.md, "Upgrading and versions"\\)\\.`,
    );

  it("this build's start() refuses it with one error naming both versions and the upgrade step", async () => {
    const world = createWorld({ config: fixture.config, consumer: { consumer: 'none' } });
    closers.push(() => world.close());
    const err = await world.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TableFormatError);
    expect(String((err as Error).message)).toMatch(refusal());
  });

  it("this build's CLI commands refuse it: one line, exit 1; doctor fails the table check; init never lowers it", async () => {
    const runs = await cli(current, fixture, ['runs']);
    expect(runs.code).toBe(1);
    expect(runs.stdout).toBe('');
    expect(runs.stderr.trim().split('\n')).toHaveLength(1);
    expect(runs.stderr).toMatch(refusal());

    const doctor = await cli(current, fixture, ['doctor', '--json']);
    expect(doctor.code).toBe(1);
    const checks = JSON.parse(doctor.stdout) as { checks: { check: string; status: string; fix?: string }[] };
    expect(checks.checks.find((c) => c.check === 'table schema')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining(`upgrade eve-world-aws to a build that reads format ${bumped.format}`),
    });

    const init = await cli(current, fixture, ['init']);
    expect(init.code).toBe(1);
    expect(init.stdout).toContain('DRIFT');
    expect((await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).minReader).toBe(bumped.format);
  });
});

describe('messages and items of a newer format', () => {
  let fixture: Fixture;
  let world: AwsWorld;
  let newer: AwsWorld;
  const warnings: string[] = [];
  const delivered: string[] = [];

  beforeAll(async () => {
    // Short visibility and few receives: a message that counted toward the DLQ would be there in seconds.
    fixture = await createFixture(
      { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '2', EVE_WORLD_AWS_MAX_RECEIVE_COUNT: '3' },
      'fmtmsg',
    );
    newer = bumpedApi.createWorld({ config: fixture.config, consumer: { consumer: 'none' } });
    closers.push(() => newer.close());
    const logger = {
      debug() {},
      info() {},
      warn: (m: string) => warnings.push(m),
      error: (m: string) => warnings.push(m),
    };
    world = createWorld({ config: fixture.config, consumer: { logger, waitTimeSeconds: 1 } });
    closers.push(() => world.close());
    world.registerHandler('__wkf_workflow_', async (req) => {
      delivered.push(req.headers.get('x-vqs-message-id') ?? '');
      return Response.json({ ok: true });
    });
    // The rolling upgrade's order: this build's consumer started (and checked the table) before the
    // bumped build's `init` raised the table's oldest reader; only then may the bumped build write.
    await world.start();
    const init = await cli(bumped, fixture, ['init', '--json']);
    expect(init.code).toBe(0);
  });

  it('a message is parked with a log line naming both versions: never delivered, never dead-lettered', async () => {
    const { messageId } = await newer.queue('__wkf_workflow_formats' as never, { runId: 'wrun_newer' } as never);
    if (!messageId) throw new Error('queue() returned no message id');
    const parked = () => warnings.filter((w) => w.includes(messageId));
    // More receives than maxReceiveCount (3): SQS would have dead-lettered a counted message by now.
    while (parked().length < 5) await new Promise((r) => setTimeout(r, 250));
    expect(parked()[0]).toContain(
      `message format ${bumped.format} is newer than this build reads (messages 1 to ${FORMATS.messages.current}); parked for a consumer that reads format ${bumped.format}`,
    );
    expect(parked()[0]).toContain('not delivered, not counted toward the DLQ');
    expect(delivered).toEqual([]);
    const sqs = fixture.clients.sqs;
    const dlq = await sqs.send(new GetQueueUrlCommand({ QueueName: fixture.config.deadLetterQueue }));
    const attrs = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: dlq.QueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(attrs.Attributes?.ApproximateNumberOfMessages).toBe('0');
    expect(attrs.Attributes?.ApproximateNumberOfMessagesNotVisible).toBe('0');
  }, 120_000);

  it('log items and views it wrote are refused by reads, naming the item, its format and this build', async () => {
    const storage = newer as unknown as Storage;
    const { run } = await storage.events.create(null, {
      eventType: 'run_created',
      specVersion: 2,
      eventData: { deploymentId: 'd', workflowName: 'w', input: new Uint8Array([1]) },
    } as never);
    const runId = (run as { runId: string }).runId;
    await expect(world.events.list({ runId, resolveData: 'none' })).rejects.toThrow(
      new RegExp(
        `log item RUN#${runId} / EVT#0+1 is log format ${bumped.format}; this build of @portfolio/eve-world-aws reads log formats 1 to ${FORMATS.log.current}\\. A newer build wrote it`,
      ),
    );
    await expect(world.runs.get(runId)).rejects.toThrow(
      new RegExp(`run view RUN#${runId} / RUN#meta is records format ${bumped.format}; .* reads records formats 1 to`),
    );
  });
});
