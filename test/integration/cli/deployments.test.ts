/**
 * `eve-world-aws deployments` (src/cli/deployments.ts) and the sweep's retire pass
 * (src/sweep/deployments.ts) against the real registry and real runs: the list counts each
 * deployment's active runs and says which are live (a deployment whose heartbeat counter another
 * "process" here keeps moving, judged on the command's own clock); `retire` refuses an
 * unregistered deployment, one whose process counts heartbeats, one with active runs and one heard
 * of within the grace period (unless forced, which first names the runs it fails), and retiring
 * twice changes nothing; the sweep retires exactly the drained deployments past their grace, and
 * never one whose process runs. The command itself (built CLI, default window): `--json` and exit
 * codes 0/1/2.
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
/** A short liveness window where liveness is not what a case is about (the CLI cases use the default). */
const W = 3_000;

let ops: OpsFixture;
const beaters: NodeJS.Timeout[] = [];
afterAll(() => {
  for (const b of beaters) clearInterval(b);
});

/** A running process of deployment `id`, as far as the registry can tell: its counter moves every 500 ms. */
function beat(id: string, shape: 'node' | 'lambda' = 'node'): NodeJS.Timeout {
  const t = setInterval(() => void registerDeployment(ops.context, id, shape).catch(() => undefined), 500);
  beaters.push(t);
  return t;
}
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
  it('lists each deployment with its active runs; retire refuses a running process, active runs and the grace period unless forced', async () => {
    const now = Date.now();
    await registerDeployment(ops.context, 'build:aaaa', 'node', now - 48 * H);
    await registerDeployment(ops.context, 'build:bbbb', 'node', now - 47 * H);
    // Registered long ago by its own clock, yet its counter moves: live (lastSeen decides nothing).
    await registerDeployment(ops.context, 'build:live', 'node', now - 46 * H);
    const live = beat('build:live');
    const a1 = await runOn('build:aaaa');
    await runOn('build:aaaa');
    await finish(await runOn('build:bbbb'));

    const rows = (await deploymentRows(ops.context, { windowMs: W })).filter((r) => r.id.startsWith('build:'));
    expect(rows.map((r) => [r.id, r.status, r.activeRuns, r.live, r.consumer])).toEqual([
      ['build:aaaa', 'active', 2, false, 'silent'],
      ['build:bbbb', 'active', 0, false, 'silent'],
      ['build:live', 'active', 0, true, 'live'],
    ]);
    // B's last run ended just now, later than its heartbeat.
    expect(rows[1].quietSince).toBeGreaterThanOrEqual(now - 60_000);
    const table = renderDeployments(rows, false);
    expect(table).toMatch(/build:aaaa\s+│?\s*node\s+│?\s*active, no consumer/);
    expect(table).toMatch(/build:bbbb\s+│?\s*node\s+│?\s*active, draining/);
    expect(table).toMatch(/build:live\s+│?\s*node\s+│?\s*active, live/);

    await expect(retireDeployment(ops.context, 'build:none')).rejects.toThrow(
      /deployment build:none is not registered on table/,
    );
    await expect(retireDeployment(ops.context, 'build:aaaa', { now, windowMs: W })).rejects.toThrow(
      /deployment build:aaaa has 2 active runs: wait until they finish .* or pass --force/,
    );
    // A run of B ended just now: within the default 24 h grace.
    await expect(retireDeployment(ops.context, 'build:bbbb', { now, windowMs: W })).rejects.toThrow(
      /deployment build:bbbb was last heard of \d+ s ago .* less than the grace period of 24\.0 h: .* pass --force/,
    );
    // A process of it runs: refused even past any grace.
    await expect(
      retireDeployment(ops.context, 'build:live', { now: now + 100 * H, graceMs: 0, windowMs: W }),
    ).rejects.toThrow(/a process of deployment build:live is running \(its heartbeat counter moved while watched\)/);
    expect((await readDeployment(ops.context, 'build:bbbb', true))?.status).toBe('active');

    // 25 h later B is past its grace (or with a shorter grace now).
    expect(await retireDeployment(ops.context, 'build:bbbb', { now: now + 25 * H, windowMs: W })).toMatchObject({
      record: { status: 'retired', reason: 'retired by operator' },
      failing: [],
      wasLive: false,
    });
    // Twice: unchanged.
    const again = await retireDeployment(ops.context, 'build:bbbb', { force: true });
    expect(again.record.reason).toBe('retired by operator');
    // Forced: the runs it fails are named before anything is written.
    const told: string[][] = [];
    const forced = await retireDeployment(ops.context, 'build:aaaa', {
      force: true,
      windowMs: W,
      onFailing: async (runs) => {
        told.push(runs);
        expect((await readDeployment(ops.context, 'build:aaaa', true))?.status).toBe('active');
      },
    });
    expect(forced).toMatchObject({ record: { status: 'retired', reason: 'forced with 2 active runs' } });
    expect(told).toHaveLength(1);
    expect(new Set(told[0])).toEqual(new Set(forced.failing));
    expect(forced.failing).toContain(a1);
    expect(forced.failing).toHaveLength(2);
    expect(await retireDeployment(ops.context, 'build:live', { force: true, now, windowMs: W })).toMatchObject({
      record: { status: 'retired', reason: 'forced while a process of it ran' },
      wasLive: true,
    });
    // Its process still counts beats: shown as retired, still running (seen while the listing
    // waits for a silent active one; retired ones alone are not waited for).
    await registerDeployment(ops.context, 'build:zzzz', 'node', now - 45 * H);
    const after = (await deploymentRows(ops.context, { windowMs: W })).find((r) => r.id === 'build:live');
    expect(after).toMatchObject({ status: 'retired', consumer: 'live', live: false });
    expect(renderDeployments([after as never], false)).toMatch(/retired, still running/);
    clearInterval(live);
    expect((await ops.world.runs.get(a1)).deploymentId).toBe('build:aaaa');
  }, 120_000);

  it('the sweep retires only drained deployments past the grace period, never one whose process runs (a dry run retires none; twice is once)', async () => {
    const now = Date.now();
    await registerDeployment(ops.context, 'sweep:drained', 'node', now - 30 * H);
    await registerDeployment(ops.context, 'sweep:busy', 'node', now - 30 * H);
    await registerDeployment(ops.context, 'sweep:ended', 'node', now - 30 * H);
    await registerDeployment(ops.context, 'sweep:current', 'node', now - 30_000);
    await runOn('sweep:busy');
    await finish(await runOn('sweep:ended'));

    // Drained and long quiet by its own clock, but a process of it still counts heartbeats.
    await registerDeployment(ops.context, 'sweep:running', 'node', now - 30 * H);
    const running = beat('sweep:running');

    // Only this case's deployments (the table is shared with the other cases of this file).
    const own = (ids: string[]) => ids.filter((id) => id.startsWith('sweep:'));
    const dry = await sweepDeployments(ops.context, { now, dryRun: true, windowMs: W });
    expect(own(dry.retired)).toEqual(['sweep:drained']);
    expect((await readDeployment(ops.context, 'sweep:drained', true))?.status).toBe('active');

    const swept = await sweepDeployments(ops.context, { now, windowMs: W });
    expect(own(swept.retired)).toEqual(['sweep:drained']);
    const kept = Object.fromEntries(swept.kept.filter((k) => k.id.startsWith('sweep:')).map((k) => [k.id, k.why]));
    expect(kept).toEqual({
      'sweep:busy': 'active-runs',
      'sweep:ended': 'within-grace',
      'sweep:current': 'within-grace',
      'sweep:running': 'live',
    });
    clearInterval(running);
    expect(await readDeployment(ops.context, 'sweep:drained', true)).toMatchObject({
      status: 'retired',
      reason: expect.stringMatching(/^retired by the sweep: no active run, quiet 30\.0 h$/),
    });
    expect(own((await sweepDeployments(ops.context, { now, windowMs: W })).retired)).toEqual([]);

    // The World's sweep (what `eve-world-aws sweep` and the daily Lambda run) includes it: a day
    // later the run of `sweep:ended` is past the grace too; the busy one stays, and so does the
    // current one, whose live process heartbeats.
    await registerDeployment(ops.context, 'sweep:current', 'node', now + 25 * H - 60_000);
    const report = await sweepOrphans(ops.context, { now: now + 25 * H, graceMs: 0 });
    expect(report.deployments?.retired).toEqual(expect.arrayContaining(['sweep:ended', 'sweep:running']));
    for (const id of ['sweep:busy', 'sweep:current'])
      expect((await readDeployment(ops.context, id, true))?.status).toBe('active');
    // With a run id it is a run's sweep only.
    expect((await sweepOrphans(ops.context, { runId: await runOn('sweep:busy') })).deployments).toBeUndefined();
  });

  it('the command: --json, exit 0 on success, 1 when refused, 2 on bad usage; --force names what it fails', async () => {
    const now = Date.now();
    await registerDeployment(ops.context, 'cli:old', 'node', now - 48 * H);
    await registerDeployment(ops.context, 'cli:new', 'node', now);
    const live = beat('cli:new');
    const pinned = await runOn('cli:new');

    const list = await runCli(['deployments', '--json'], ops.env);
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as { deployments: Array<{ id: string; live: boolean }> };
    expect(listed.deployments.find((d) => d.id === 'cli:new')).toMatchObject({ live: true, activeRuns: 1 });
    expect(listed.deployments.find((d) => d.id === 'cli:old')).toMatchObject({ live: false, consumer: 'silent' });

    const refused = await runCli(['deployments', 'retire', 'cli:new', '--grace', '0s', '--json'], ops.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a process of deployment cli:new is running/);

    const retired = await runCli(['deployments', 'retire', 'cli:old', '--json'], ops.env);
    expect(retired.code, retired.stderr).toBe(0);
    expect(JSON.parse(retired.stdout)).toMatchObject({ deployment: { id: 'cli:old', status: 'retired' }, failing: [] });

    const forced = await runCli(['deployments', 'retire', 'cli:new', '--force'], ops.env);
    expect(forced.code, forced.stderr).toBe(0);
    const lines = forced.stdout.split('\n');
    // The runs it fails come first, then the retirement, then what the running process does.
    expect(lines[0]).toBe('A process of deployment cli:new is running: it is retired anyway (--force).');
    expect(lines[1]).toBe('Retiring deployment cli:new fails 1 active run (DEPLOYMENT_MISMATCH at the next delivery):');
    expect(lines[2]).toBe(`  ${pinned}`);
    expect(lines[3]).toBe('Deployment cli:new is retired.');
    expect(lines[4]).toMatch(/^Its running process learns it at its next heartbeat \(within 5 s\)/);
    clearInterval(live);

    const bad = await runCli(['deployments', 'retire', 'cli:new', '--grace', 'soon'], ops.env);
    expect(bad.code).toBe(2);
    const unknown = await runCli(['deployments', 'retire', 'cli:none'], ops.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/deployment cli:none is not registered/);

    const help = await runCli(['deployments', '--help']);
    expect(help.code).toBe(0);
    for (const s of ['retire', 'grace period', 'DEPLOYMENT_MISMATCH', 'active, no consumer', 'heartbeat', 'Exit codes'])
      expect(help.stdout).toContain(s);
    const retireHelp = await runCli(['deployments', 'retire', '--help']);
    for (const s of ['--force', '--grace <duration>', '--json']) expect(retireHelp.stdout).toContain(s);
  }, 180_000);

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
