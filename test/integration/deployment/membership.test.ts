/**
 * The table decides (src/deployment/membership.ts), against the real table:
 * - a new, empty table that no `init` recorded is recorded with affinity by its first process
 *   when asked (EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on: a new CDK stack's host), and a table that
 *   already holds a run never is (the variable is then named and ignored: an existing stack keeps
 *   what it has);
 * - a process that cannot take part in the table's affinity refuses before anything is written or
 *   sent (a Lambda `$LATEST`; a table recording affinity while still admitting older readers), its
 *   flow route answers 503 (the message is parked, not dead-lettered), and `doctor` with the same
 *   environment fails with the same words; a variable that disagrees is a doctor warning.
 */
import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../../src/cli/doctor.js';
import { loadConfig } from '../../../src/config/index.js';
import { createContext } from '../../../src/context/world-context.js';
import { listDeployments, readDeployment } from '../../../src/deployment/registry.js';
import { type AwsWorld, createWorld } from '../../../src/index.js';
import { readTableFormat, TableFormatError } from '../../../src/preflight/format-check.js';
import { reconcile } from '../../../src/provision/index.js';
import { AFFINITY_MIN_READER } from '../../../src/schema/formats.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';
import { runCli } from '../../helpers/cli.js';
import { MemoryLogger } from '../../helpers/queue.js';
import { devl, sv } from '../../helpers/runs.js';

const worlds: AwsWorld[] = [];
afterAll(async () => {
  for (const w of worlds) await w.close().catch(() => undefined);
});

function world(fixture: Fixture, env: Record<string, string> = {}, logger = new MemoryLogger()): AwsWorld {
  const config = loadConfig({ ...fixture.env, ...env });
  const w = createWorld({ config, clients: fixture.clients, consumer: { consumer: 'none', logger } });
  worlds.push(w);
  return w;
}

/** The table as a CDK stack creates it: no format item, nothing in it. */
async function unrecorded(fixture: Fixture): Promise<void> {
  await fixture.clients.ddb.send(
    new DeleteItemCommand({ TableName: fixture.config.tableName, Key: { PK: { S: 'FORMAT#' }, SK: { S: 'meta' } } }),
  );
}

const createRun = (w: AwsWorld) =>
  w.events.create(null, {
    eventType: 'run_created',
    specVersion: sv,
    eventData: { deploymentId: 'eve-world-aws', workflowName: 'workflow//./w//w', input: devl(1) },
  } as never);

describe('a new table and the variable', () => {
  it('a new, empty table is recorded with affinity by its first process when asked; then that process takes part', async () => {
    const fixture = await createFixture({}, 'mbn');
    await unrecorded(fixture);
    const logger = new MemoryLogger();
    const first = world(
      fixture,
      { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on', EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-1' },
      logger,
    );
    expect(first.capabilities?.deploymentAffinity).toBeUndefined();
    expect(await first.getDeploymentId()).toBe('release-1');
    expect(first.capabilities?.deploymentAffinity).toBe(true);
    expect(await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).toMatchObject({
      recorded: true,
      affinity: true,
      minReader: AFFINITY_MIN_READER,
    });
    expect(await readDeployment(createContext(fixture.config, fixture.clients), 'release-1', true)).toMatchObject({
      status: 'active',
      beats: 1,
    });
    // Any later process follows the table, whatever its variable says.
    const later = world(fixture, { EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-2' });
    expect(await later.getDeploymentId()).toBe('release-2');
    expect(later.capabilities?.deploymentAffinity).toBe(true);
    expect(logger.lines.filter((l) => l.includes('is ignored'))).toEqual([]);
  });

  it('a table that already holds a run keeps what it has: the variable is named and ignored', async () => {
    const fixture = await createFixture({}, 'mbo');
    await unrecorded(fixture);
    await createRun(world(fixture));
    const logger = new MemoryLogger();
    const asked = world(fixture, { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' }, logger);
    expect(await asked.getDeploymentId()).toBe('eve-world-aws');
    expect(asked.capabilities?.deploymentAffinity).toBeUndefined();
    expect((await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).recorded).toBe(false);
    expect(await listDeployments(createContext(fixture.config, fixture.clients))).toEqual([]);
    expect(logger.lines.join('\n')).toMatch(
      /WARN \[eve-world-aws\] EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on is ignored: table \S+ does not pin runs/,
    );
  });
});

describe('a process that cannot take part', () => {
  it('refuses on $LATEST before anything is written; its flow route answers 503; doctor fails with the same words', async () => {
    const fixture = await createFixture({}, 'mbl');
    await reconcile(fixture.clients, fixture.config, 'apply', { minReader: AFFINITY_MIN_READER, affinity: true });
    const lambda = { AWS_LAMBDA_FUNCTION_NAME: 'host', AWS_LAMBDA_FUNCTION_VERSION: '$LATEST' };
    const w = world(fixture, lambda);
    const refusal = /AWS_LAMBDA_FUNCTION_VERSION is \$LATEST, but host runs on a table with deployment affinity/;
    await expect(w.getDeploymentId()).rejects.toThrow(refusal);
    await expect(w.getDeploymentId()).rejects.toBeInstanceOf(TableFormatError);
    await expect(createRun(w)).rejects.toThrow(refusal);
    const route = w.createQueueHandler('__wkf_workflow_' as never, async () => new Response('ran'));
    const res = await route(
      new Request('http://localhost/.well-known/workflow/v1/flow', { method: 'POST', body: '{}' }),
    );
    expect(res.status).toBe(503);
    const reader = createWorld({ config: fixture.config, clients: fixture.clients, client: {} });
    worlds.push(reader);
    expect((await reader.runs.list({ resolveData: 'none', pagination: { limit: 10 } })).data).toEqual([]);
    expect(await listDeployments(createContext(fixture.config, fixture.clients))).toEqual([]);

    const checks = await runDoctor({ env: { ...fixture.env, ...lambda } });
    const affinity = checks.find((c) => c.check === 'deployment affinity');
    expect(affinity).toMatchObject({ status: 'fail' });
    expect(affinity?.details).toMatch(refusal);
    // The same environment on a published version takes part: doctor passes the check.
    const v4 = await runDoctor({ env: { ...fixture.env, ...lambda, AWS_LAMBDA_FUNCTION_VERSION: '4' } });
    expect(v4.find((c) => c.check === 'deployment affinity')).toMatchObject({ status: 'pass' });
  });

  it('refuses a table that records affinity but still admits older readers; doctor fails; a disagreeing variable is a warning', async () => {
    const fixture = await createFixture({}, 'mbr');
    const n = (v: number) => ({ N: String(v) });
    await fixture.clients.ddb.send(
      new PutItemCommand({
        TableName: fixture.config.tableName,
        Item: {
          PK: { S: 'FORMAT#' },
          SK: { S: 'meta' },
          log: n(2),
          records: n(2),
          messages: n(2),
          minReader: n(1),
          deploymentAffinity: { BOOL: true },
        },
      }),
    );
    const refusal = /pins runs to their deployment but still allows readers from format 1/;
    await expect(world(fixture, { EVE_WORLD_AWS_DEPLOYMENT_ID: 'r1' }).getDeploymentId()).rejects.toThrow(refusal);
    const checks = await runDoctor({ env: fixture.env });
    expect(checks.find((c) => c.check === 'deployment affinity')).toMatchObject({ status: 'fail' });
    expect(checks.find((c) => c.check === 'deployment affinity')?.details).toMatch(refusal);

    // Fixed by `init --deployment-affinity`; then `off` in a process's environment is only a warning.
    await reconcile(fixture.clients, fixture.config, 'apply', { minReader: AFFINITY_MIN_READER, affinity: true });
    const off = await runDoctor({ env: { ...fixture.env, EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'off' } });
    expect(off.find((c) => c.check === 'deployment affinity')).toMatchObject({
      status: 'warn',
      fix: 'unset EVE_WORLD_AWS_DEPLOYMENT_AFFINITY',
    });
    expect(off.every((c) => c.status !== 'fail')).toBe(true);
  });
});

describe('init --deployment-affinity', () => {
  it('refuses a table with active runs (named), unless --force; --force alone is a usage error', async () => {
    const fixture = await createFixture({}, 'mbi');
    const created = (await createRun(world(fixture))) as { run: { runId: string } };
    const refused = await runCli(['init', '--deployment-affinity'], fixture.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`has 1 active run (${created.run.runId})`);
    expect(refused.stderr).toMatch(/each fails with DEPLOYMENT_MISMATCH at its next delivery.*--force/);
    expect((await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).affinity).toBe(false);
    expect((await runCli(['init', '--force'], fixture.env)).code).toBe(2);
    const forced = await runCli(['init', '--deployment-affinity', '--force'], fixture.env);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/deployment affinity/);
    expect(await readTableFormat(fixture.clients.ddb, fixture.config.tableName)).toMatchObject({
      affinity: true,
      minReader: AFFINITY_MIN_READER,
    });
    // Again: nothing to do, nothing refused (the table already pins runs).
    const again = await runCli(['init', '--deployment-affinity'], fixture.env);
    expect(again.code, again.stderr).toBe(0);
  }, 120_000);
});
