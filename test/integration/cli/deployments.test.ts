/**
 * `eve-world-aws deployments` (src/cli/deployments.ts) and the sweep's retire pass
 * (src/sweep/deployments.ts) against the real registry and real runs: the list counts each
 * deployment's active runs and says which are live; `retire` refuses an unregistered deployment,
 * one with active runs and one heard of within the grace period (unless forced), and retiring
 * twice changes nothing; the sweep retires exactly the drained deployments past their grace.
 * The command itself (built CLI): `--json` and exit codes 0/1/2.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerLambdaTarget } from '../../../emulator/lambda-service.js';
import { deploymentRows, renderDeployments, retireDeployment } from '../../../src/cli/deployments.js';
import { readDeployment, registerDeployment } from '../../../src/deployment/registry.js';
import { sweepDeployments } from '../../../src/sweep/deployments.js';
import { sweepOrphans } from '../../../src/sweep/index.js';
import { runCli } from '../../helpers/cli.js';
import { devl, ev, type OpsFixture, opsFixture, sv } from '../../helpers/runs.js';

const H = 3_600_000;

let ops: OpsFixture;
beforeAll(async () => {
  ops = await opsFixture({}, 'deps');
});
afterAll(() => ops?.close());

async function runOn(deploymentId: string): Promise<string> {
  const r = await ops.world.events.create(null, {
    eventType: 'run_created',
    specVersion: sv,
    eventData: { deploymentId, workflowName: 'workflow//./w//w', input: devl(1) },
  } as never);
  return (r as { run: { runId: string } }).run.runId;
}

async function finish(runId: string): Promise<void> {
  await ev(ops.world, runId, { eventType: 'run_started' });
  await ev(ops.world, runId, { eventType: 'run_completed', eventData: { output: devl(2) } });
}

describe('eve-world-aws deployments', () => {
  it('lists each deployment with its active runs; retire refuses active runs and the grace period unless forced', async () => {
    const now = Date.now();
    await registerDeployment(ops.context, 'build:aaaa', 'node', now - 48 * H);
    await registerDeployment(ops.context, 'build:bbbb', 'node', now - 47 * H);
    await registerDeployment(ops.context, 'build:live', 'node', now);
    const a1 = await runOn('build:aaaa');
    await runOn('build:aaaa');
    await finish(await runOn('build:bbbb'));

    const rows = await deploymentRows(ops.context, now);
    expect(rows.map((r) => [r.id, r.status, r.activeRuns, r.live])).toEqual([
      ['build:aaaa', 'active', 2, false],
      ['build:bbbb', 'active', 0, false],
      ['build:live', 'active', 0, true],
    ]);
    // B's last run ended just now, later than its heartbeat.
    expect(rows[1].quietSince).toBeGreaterThanOrEqual(now - 60_000);
    const table = renderDeployments(rows, false);
    expect(table).toMatch(/build:aaaa\s+│?\s*node\s+│?\s*active, no consumer/);
    expect(table).toMatch(/build:live\s+│?\s*node\s+│?\s*active, live/);

    await expect(retireDeployment(ops.context, 'build:none')).rejects.toThrow(
      /deployment build:none is not registered on table/,
    );
    await expect(retireDeployment(ops.context, 'build:aaaa', { now })).rejects.toThrow(
      /deployment build:aaaa has 2 active runs: wait until they finish .* or pass --force/,
    );
    // A run of B ended just now: within the default 24 h grace; a live process: too.
    await expect(retireDeployment(ops.context, 'build:bbbb', { now })).rejects.toThrow(
      /deployment build:bbbb was last heard of \d+ s ago .* less than the grace period of 24\.0 h: .* pass --force/,
    );
    await expect(retireDeployment(ops.context, 'build:live', { now })).rejects.toThrow(/less than the grace period/);
    expect((await readDeployment(ops.context, 'build:bbbb', true))?.status).toBe('active');

    // 25 h later B is past its grace (or with a shorter grace now).
    expect(await retireDeployment(ops.context, 'build:bbbb', { now: now + 25 * H })).toMatchObject({
      status: 'retired',
      reason: 'retired by operator',
    });
    // Twice: unchanged.
    const again = await retireDeployment(ops.context, 'build:bbbb', { force: true });
    expect(again.reason).toBe('retired by operator');
    expect(await retireDeployment(ops.context, 'build:aaaa', { force: true })).toMatchObject({
      status: 'retired',
      reason: 'forced with 2 active runs',
    });
    expect(await retireDeployment(ops.context, 'build:live', { force: true, now })).toMatchObject({
      status: 'retired',
      reason: 'forced within the grace period',
    });
    expect((await ops.world.runs.get(a1)).deploymentId).toBe('build:aaaa');
  });

  it('the sweep retires only drained deployments past the grace period (a dry run retires none; twice is once)', async () => {
    const now = Date.now();
    await registerDeployment(ops.context, 'sweep:drained', 'node', now - 30 * H);
    await registerDeployment(ops.context, 'sweep:busy', 'node', now - 30 * H);
    await registerDeployment(ops.context, 'sweep:ended', 'node', now - 30 * H);
    await registerDeployment(ops.context, 'sweep:current', 'node', now - 30_000);
    await runOn('sweep:busy');
    await finish(await runOn('sweep:ended'));

    const dry = await sweepDeployments(ops.context, { now, dryRun: true });
    expect(dry.retired).toEqual(['sweep:drained']);
    expect((await readDeployment(ops.context, 'sweep:drained', true))?.status).toBe('active');

    const swept = await sweepDeployments(ops.context, { now });
    expect(swept.retired).toEqual(['sweep:drained']);
    const kept = Object.fromEntries(swept.kept.filter((k) => k.id.startsWith('sweep:')).map((k) => [k.id, k.why]));
    expect(kept).toEqual({
      'sweep:busy': 'active-runs',
      'sweep:ended': 'within-grace',
      'sweep:current': 'within-grace',
    });
    expect(await readDeployment(ops.context, 'sweep:drained', true)).toMatchObject({
      status: 'retired',
      reason: expect.stringMatching(/^retired by the sweep: no active run, quiet 30\.0 h$/),
    });
    expect((await sweepDeployments(ops.context, { now })).retired).toEqual([]);

    // The World's sweep (what `eve-world-aws sweep` and the daily Lambda run) includes it: a day
    // later the run of `sweep:ended` is past the grace too; the busy one stays, and so does the
    // current one, whose live process heartbeats.
    await registerDeployment(ops.context, 'sweep:current', 'node', now + 25 * H - 60_000);
    const report = await sweepOrphans(ops.context, { now: now + 25 * H, graceMs: 0 });
    expect(report.deployments?.retired).toEqual(['sweep:ended']);
    for (const id of ['sweep:busy', 'sweep:current'])
      expect((await readDeployment(ops.context, id, true))?.status).toBe('active');
    // With a run id it is a run's sweep only.
    expect((await sweepOrphans(ops.context, { runId: await runOn('sweep:busy') })).deployments).toBeUndefined();
  });

  it('the command: --json, exit 0 on success, 1 when refused, 2 on bad usage', async () => {
    const now = Date.now();
    await registerDeployment(ops.context, 'cli:old', 'node', now - 48 * H);
    await registerDeployment(ops.context, 'cli:new', 'node', now);

    const list = await runCli(['deployments', '--json'], ops.env);
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as { deployments: Array<{ id: string; live: boolean }> };
    expect(listed.deployments.find((d) => d.id === 'cli:new')).toMatchObject({ live: true, activeRuns: 0 });

    const refused = await runCli(['deployments', 'retire', 'cli:new', '--json'], ops.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/less than the grace period of 24\.0 h/);

    const retired = await runCli(['deployments', 'retire', 'cli:old', '--json'], ops.env);
    expect(retired.code, retired.stderr).toBe(0);
    expect(JSON.parse(retired.stdout)).toMatchObject({ deployment: { id: 'cli:old', status: 'retired' } });

    const shortGrace = await runCli(['deployments', 'retire', 'cli:new', '--grace', '0s'], ops.env);
    expect(shortGrace.code, shortGrace.stderr).toBe(0);
    expect(shortGrace.stdout).toBe('Deployment cli:new is retired.\n');

    const bad = await runCli(['deployments', 'retire', 'cli:new', '--grace', 'soon'], ops.env);
    expect(bad.code).toBe(2);
    const unknown = await runCli(['deployments', 'retire', 'cli:none'], ops.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/deployment cli:none is not registered/);

    const help = await runCli(['deployments', '--help']);
    expect(help.code).toBe(0);
    for (const s of ['retire', 'grace period', 'DEPLOYMENT_MISMATCH', 'active, no consumer', 'Exit codes'])
      expect(help.stdout).toContain(s);
    const retireHelp = await runCli(['deployments', 'retire', '--help']);
    for (const s of ['--force', '--grace <duration>', '--json']) expect(retireHelp.stdout).toContain(s);
  }, 120_000);

  it('retiring a Lambda deployment deletes its published version (unless --keep-version); a version already gone is fine', async () => {
    const endpoint = ops.env.AWS_ENDPOINT_URL_LAMBDA as string;
    const fn = `host-${Date.now().toString(36)}`;
    // Versions 3 and 4 of a host function, each standing for one published version.
    const app = createServer((_req, res) => res.end('{}')).listen(0, '127.0.0.1');
    await once(app, 'listening');
    const url = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    try {
      await registerLambdaTarget(endpoint, fn, '3', url);
      await registerLambdaTarget(endpoint, fn, '4', url);
      const old = Date.now() - 48 * H;
      await registerDeployment(ops.context, `lambda:${fn}:3`, 'lambda', old);
      await registerDeployment(ops.context, `lambda:${fn}:4`, 'lambda', old);
      const lambda = await ops.fixture.clients.lambda();
      const invoke = (v: string) =>
        lambda.send(new InvokeCommand({ FunctionName: fn, Qualifier: v, Payload: Buffer.from('{}') })).then(
          () => 'there',
          (err: Error) => err.name,
        );

      const r = await runCli(['deployments', 'retire', `lambda:${fn}:3`, '--json'], ops.env);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        deployment: { id: `lambda:${fn}:3`, status: 'retired' },
        lambdaVersion: { functionName: fn, version: '3', deleted: true },
      });
      expect(await invoke('3')).toBe('ResourceNotFoundException');

      const again = await runCli(['deployments', 'retire', `lambda:${fn}:3`], ops.env);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain(`Version 3 of Lambda function ${fn} was already gone.`);

      const kept = await runCli(['deployments', 'retire', `lambda:${fn}:4`, '--keep-version'], ops.env);
      expect(kept.code, kept.stderr).toBe(0);
      expect(kept.stdout).toBe(`Deployment lambda:${fn}:4 is retired.\n`);
      expect(await invoke('4')).toBe('there');
    } finally {
      app.close();
    }
  }, 120_000);
});
