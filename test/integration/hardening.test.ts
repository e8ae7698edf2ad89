/**
 * Hardening is re-applied and checked on every `init`, against the real emulators:
 * - a setting whose fix fails during `init` (fault injected in SDK middleware) is reported as drift,
 *   `doctor`'s verify and `--dry-run` show it without changing anything, and the next `init`
 *   applies it;
 * - drift made out of band (TTL switched off) is found and fixed the same way;
 * - settings the emulators do not implement (PITR on DynamoDB Local; bucket configuration on
 *   fauxqs) are reported `skipped` with the reason, never as applied.
 */
import { DeleteTableCommand, DescribeTimeToLiveCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients, destroyClients } from '../../src/aws/clients.js';
import { runDoctor } from '../../src/cli/doctor.js';
import { hasProblems, type ResourceReport, reconcile } from '../../src/provision/index.js';
import { stackEnv, testConfig, uniquePrefix } from '../helpers/aws.js';

const setting = (r: ResourceReport | undefined, name: string) => r?.settings?.find((s) => s.setting === name);
const table = (reports: ResourceReport[]) => reports.find((r) => r.kind === 'table');

async function ttlStatus(clients: AwsClients, tableName: string): Promise<string | undefined> {
  return (await clients.ddb.send(new DescribeTimeToLiveCommand({ TableName: tableName }))).TimeToLiveDescription
    ?.TimeToLiveStatus;
}

/** Makes the next `times` calls of `command` fail with AccessDenied before they are sent (no SDK retry). */
function failNext(clients: AwsClients, command: string, times = 1): { failed: number } {
  const state = { failed: 0 };
  clients.ddb.middlewareStack.add(
    (next: any, context: any) => async (args: any) => {
      if (context.commandName === command && state.failed < times) {
        state.failed++;
        throw Object.assign(new Error(`injected: not authorized to perform ${command}`), {
          name: 'AccessDeniedException',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name: `fail-${command}` },
  );
  return state;
}

describe('hardening on every init', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of cleanup) await c();
  });

  it('a setting that fails during init is reported, left alone by verify and --dry-run, and applied by the next init', async () => {
    const config = testConfig({}, 'hard');
    const faulty = createClients(config);
    const clients = createClients(config);
    cleanup.push(async () => {
      await clients.ddb.send(new DeleteTableCommand({ TableName: config.tableName })).catch(() => {});
      destroyClients(faulty);
      destroyClients(clients);
    });
    const fault = failNext(faulty, 'UpdateTimeToLiveCommand');

    // 1. init is "interrupted" at the TTL: the table exists without it, and the report says so.
    const first = await reconcile(faulty, config, 'apply');
    expect(fault.failed).toBe(1);
    expect(table(first)?.state).toBe('drift');
    expect(setting(table(first), 'time to live')).toMatchObject({
      state: 'failed',
      detail: expect.stringMatching(/AccessDeniedException: injected/),
    });
    expect(table(first)?.fix).toMatch(/eve-world-aws init.*time to live/);
    expect(hasProblems(first)).toBe(true);
    // The other resources were still reconciled.
    expect(first.filter((r) => r.kind !== 'table').map((r) => r.state)).toEqual(['created', 'created', 'created']);
    expect(await ttlStatus(clients, config.tableName)).not.toBe('ENABLED');

    // 2. doctor (verify) reports the drift; --dry-run plans the fix; neither changes anything.
    const verify = await reconcile(clients, config, 'verify');
    expect(table(verify)?.state).toBe('drift');
    expect(setting(table(verify), 'time to live')).toMatchObject({
      state: 'drift',
      detail: expect.stringMatching(/not enabled/),
    });
    const plan = await reconcile(clients, config, 'dry-run');
    expect(table(plan)?.state).toBe('would-update');
    expect(setting(table(plan), 'time to live')).toMatchObject({
      state: 'would-fix',
      detail: expect.stringMatching(/would enable TTL on attribute "ttl"/),
    });
    expect(await ttlStatus(clients, config.tableName)).not.toBe('ENABLED');

    // 3. The next init applies it.
    const second = await reconcile(clients, config, 'apply');
    expect(table(second)?.state).toBe('updated');
    expect(setting(table(second), 'time to live')?.state).toBe('fixed');
    expect(hasProblems(second)).toBe(false);
    expect(await ttlStatus(clients, config.tableName)).toBe('ENABLED');

    // 4. And then there is nothing left to do.
    const third = await reconcile(clients, config, 'apply');
    expect(third.map((r) => r.state)).toEqual(['present', 'present', 'present', 'present']);
    expect(setting(table(third), 'time to live')?.state).toBe('ok');
  });

  it('drift made out of band (TTL switched off) is reported by doctor and fixed by init', async () => {
    const env = { ...stackEnv(), EVE_WORLD_AWS_PREFIX: uniquePrefix('hard') };
    const config = testConfig({ EVE_WORLD_AWS_PREFIX: env.EVE_WORLD_AWS_PREFIX });
    const clients = createClients(config);
    cleanup.push(async () => {
      await clients.ddb.send(new DeleteTableCommand({ TableName: config.tableName })).catch(() => {});
      destroyClients(clients);
    });
    await reconcile(clients, config, 'apply');
    await clients.ddb.send(
      new UpdateTimeToLiveCommand({
        TableName: config.tableName,
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: false },
      }),
    );

    const checks = await runDoctor({ env });
    const schema = checks.find((c) => c.check === 'table schema');
    expect(schema).toMatchObject({
      status: 'fail',
      details: expect.stringMatching(/time to live: not enabled/),
      fix: expect.stringMatching(/eve-world-aws init/),
    });

    const fixed = await reconcile(clients, config, 'apply');
    expect(setting(table(fixed), 'time to live')?.state).toBe('fixed');
    expect(await ttlStatus(clients, config.tableName)).toBe('ENABLED');
    const after = await runDoctor({ env });
    expect(after.find((c) => c.check === 'table schema')?.status).toBe('pass');
  });

  it('a TTL fix whose response is lost and retried by the SDK is still reported fixed', async () => {
    const config = testConfig({}, 'hard');
    const clients = createClients(config);
    cleanup.push(async () => {
      await clients.ddb.send(new DeleteTableCommand({ TableName: config.tableName })).catch(() => {});
      destroyClients(clients);
    });
    const once = failNext(clients, 'UpdateTimeToLiveCommand'); // the first init leaves TTL off
    await reconcile(clients, config, 'apply');
    expect(once.failed).toBe(1);
    let sent = 0;
    // Inside the retry loop: the UpdateTimeToLive reaches DynamoDB, then its response is "lost".
    clients.ddb.middlewareStack.add(
      (next: any, context: any) => async (args: any) => {
        const out = await next(args);
        if (context.commandName === 'UpdateTimeToLiveCommand' && ++sent === 1) {
          throw Object.assign(new Error('socket hang up after the request was sent'), {
            name: 'TimeoutError',
            code: 'ECONNRESET',
          });
        }
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'loseFirstResponse' },
    );
    const second = await reconcile(clients, config, 'apply');
    // The retry reached DynamoDB, which answered "TimeToLive is already enabled": still a success.
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(setting(table(second), 'time to live')?.state).toBe('fixed');
    expect(table(second)?.state).toBe('updated');
    expect(await ttlStatus(clients, config.tableName)).toBe('ENABLED');
  });

  it('settings the emulators do not implement are reported skipped, with the reason', async () => {
    const config = testConfig({}, 'hard');
    const clients = createClients(config);
    cleanup.push(async () => {
      await clients.ddb.send(new DeleteTableCommand({ TableName: config.tableName })).catch(() => {});
      destroyClients(clients);
    });
    const reports = await reconcile(clients, config, 'apply');
    expect(setting(table(reports), 'point-in-time recovery')).toMatchObject({
      state: 'skipped',
      detail: expect.stringMatching(/not implemented by this endpoint \(UnknownOperationException\)/),
    });
    const bucket = reports.find((r) => r.kind === 'bucket');
    for (const name of ['public access block', 'encryption', 'TLS-only policy', 'lifecycle']) {
      expect(setting(bucket, name)).toMatchObject({
        state: 'skipped',
        detail: expect.stringMatching(/not implemented by this endpoint/),
      });
    }
    // Skipped is not drift: init succeeds, and the report names every setting.
    expect(hasProblems(reports)).toBe(false);
    expect(bucket?.details.join('\n')).toMatch(/TLS-only policy: skipped/);
  });
});
