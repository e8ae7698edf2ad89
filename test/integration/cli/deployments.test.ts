/**
 * `eve-world-aws deployments` (src/cli/deployments.ts) against the real registry and real runs:
 * the list counts each deployment's active runs; `retire` refuses an unregistered deployment and
 * one with active runs (unless forced), and retiring twice changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentRows, renderDeployments, retireDeployment } from '../../../src/cli/deployments.js';
import { registerDeployment } from '../../../src/deployment/registry.js';
import { devl, ev, type OpsFixture, opsFixture, sv } from '../../helpers/runs.js';

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

describe('eve-world-aws deployments', () => {
  it('lists each deployment with its active runs; retire refuses active runs unless forced', async () => {
    await registerDeployment(ops.context, 'build:aaaa', 'node', 1_000);
    await registerDeployment(ops.context, 'build:bbbb', 'node', 2_000);
    const a1 = await runOn('build:aaaa');
    await runOn('build:aaaa');
    const done = await runOn('build:bbbb');
    await ev(ops.world, done, { eventType: 'run_started' });
    await ev(ops.world, done, { eventType: 'run_completed', eventData: { output: devl(2) } });

    const rows = await deploymentRows(ops.context, ops.world.runs as never);
    expect(rows.map((r) => [r.id, r.status, r.activeRuns])).toEqual([
      ['build:aaaa', 'active', 2],
      ['build:bbbb', 'active', 0],
    ]);
    expect(renderDeployments(rows, false)).toMatch(/build:aaaa\s+│?\s*node/);

    await expect(retireDeployment(ops.context, ops.world.runs as never, 'build:none')).rejects.toThrow(
      /deployment build:none is not registered on table/,
    );
    await expect(retireDeployment(ops.context, ops.world.runs as never, 'build:aaaa')).rejects.toThrow(
      /deployment build:aaaa has 2 active runs: wait until they finish .* or pass --force/,
    );
    expect(await retireDeployment(ops.context, ops.world.runs as never, 'build:bbbb')).toMatchObject({
      status: 'retired',
      reason: 'retired by operator',
    });
    // Twice: unchanged.
    const again = await retireDeployment(ops.context, ops.world.runs as never, 'build:bbbb');
    expect(again.reason).toBe('retired by operator');
    expect(await retireDeployment(ops.context, ops.world.runs as never, 'build:aaaa', { force: true })).toMatchObject({
      status: 'retired',
      reason: 'forced with 2 active runs',
    });
    expect((await ops.world.runs.get(a1)).deploymentId).toBe('build:aaaa');
  });
});
