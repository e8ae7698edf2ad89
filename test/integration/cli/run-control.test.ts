/**
 * Run control from the CLI against real workflows: this process is the app (the compiled e2e
 * workflows, run by the real core through the World's SQS consumer); the spawned CLI is a second
 * process on the same resources. `cancel` stops a waiting run, `resume` resumes its hook and the
 * run completes, `start` starts a run the app then runs, `runs --workflow` finds runs by short
 * name, and `tail` says what a running run waits for.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRun, start } from 'workflow/api';
import { sleep } from '../../../src/aws/sleep.js';
import { runCli } from '../../helpers/cli.js';
import { type E2e, startE2e } from '../../helpers/e2e.js';

const here = path.dirname(fileURLToPath(import.meta.url));
let e2e: E2e;

beforeAll(async () => {
  const { buildE2eApp } = (await import(path.join(here, '../../e2e/build.mjs'))) as { buildE2eApp(): Promise<string> };
  await buildE2eApp(); // no-op when the bundle is fresh
  e2e = await startE2e();
});

afterAll(async () => {
  await e2e?.close();
});

const wf = (name: string) => {
  const meta = e2e.workflows[name];
  if (!meta) throw new Error(`workflow ${name} is not in the manifest`);
  return meta as { workflowId: string };
};

const cli = (args: string[]) => runCli(args, e2e.fixture.env);

/** Start `streamThenHook` and wait until its hook exists (the run then waits for it). */
async function waitingRun(token: string): Promise<string> {
  const run = await start(wf('streamThenHook') as never, [token, 'hi']);
  for (;;) {
    const hook = await e2e.world.hooks.getByToken(token).catch(() => undefined);
    if (hook) return run.runId;
    await sleep(100);
  }
}

describe('run control', () => {
  it('tail says what a running run waits for; resume resumes the hook and the run completes', async () => {
    const token = `cli-resume-${Date.now()}`;
    const runId = await waitingRun(token);

    const tail = await cli(['tail', runId, '--no-follow', '--json']);
    expect(tail.code).toBe(0);
    const runRec = tail.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((r) => r.kind === 'run');
    expect(runRec).toMatchObject({ status: 'running', waiting: [`hook ${token}`] });
    const plain = await cli(['tail', runId, '--no-follow']);
    expect(plain.stdout).toContain(`waiting for: hook ${token}`);

    const bad = await cli(['resume', token, '{not json']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not valid JSON');

    const r = await cli(['resume', token, '{"value":"approved"}', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ token, runId });
    expect(await getRun(runId).returnValue).toBe('approved');

    // The run has ended: nothing waits on that token any more.
    const again = await cli(['resume', token, '{"value":"twice"}']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no hook with token "${token}"`);
  });

  it('cancel stops a waiting run; twice is a no-op; a completed run is refused', async () => {
    const runId = await waitingRun(`cli-cancel-${Date.now()}`);
    const r = await cli(['cancel', runId, '--reason', 'test', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ runId, status: 'cancelled', cancelled: true });
    expect((await e2e.world.runs.get(runId)).status).toBe('cancelled');
    const cancelled = (await e2e.world.events.list({ runId, pagination: {} })).data.filter(
      (e) => e.eventType === 'run_cancelled',
    );
    expect(cancelled).toHaveLength(1);

    const twice = await cli(['cancel', runId, '--json']);
    expect(twice.code).toBe(0);
    expect(JSON.parse(twice.stdout)).toMatchObject({ cancelled: false, status: 'cancelled' });

    const done = await start(wf('addition') as never, [1, 2]);
    expect(await done.returnValue).toBe(3);
    const refused = await cli(['cancel', done.runId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already completed');

    const unknown = await cli(['cancel', 'wrun_01JDZZZZZZZZZZZZZZZZZZZZZZ']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('not found');
  });

  it('start runs a workflow by full id, then by its name; the app runs it', async () => {
    const full = wf('addition').workflowId;
    const byId = await cli(['start', full, '2', '3', '--json']);
    expect(byId.stderr).toBe('');
    expect(byId.code).toBe(0);
    const first = JSON.parse(byId.stdout) as { runId: string; workflowId: string };
    expect(first.workflowId).toBe(full);
    expect(await getRun(first.runId).returnValue).toBe(5);

    const byName = await cli(['start', 'addition', '20', '22', '--json']);
    expect(byName.code).toBe(0);
    const second = JSON.parse(byName.stdout) as { runId: string; workflowId: string };
    expect(second.workflowId).toBe(full);
    expect(await getRun(second.runId).returnValue).toBe(42);

    const never = await cli(['start', 'noSuchWorkflow']);
    expect(never.code).toBe(1);
    expect(never.stderr).toContain('pass its full id');
    const badArg = await cli(['start', 'addition', 'one']);
    expect(badArg.code).toBe(2);
  });

  it('runs --workflow matches the short name and the full id, not other workflows', async () => {
    const run = await start(wf('streamLeftOpen') as never, ['x']);
    await run.returnValue;
    const full = wf('streamLeftOpen').workflowId;
    expect(full).not.toBe('streamLeftOpen');
    for (const name of ['streamLeftOpen', full]) {
      const r = await cli(['runs', '--workflow', name, '--json']);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as { runs: { runId: string; workflowName: string }[] };
      expect(out.runs.map((x) => x.runId)).toContain(run.runId);
      expect(new Set(out.runs.map((x) => x.workflowName))).toEqual(new Set([full]));
    }
    const none = await cli(['runs', '--workflow', 'streamLeft', '--json']);
    expect(JSON.parse(none.stdout).runs).toEqual([]);
  });
});
