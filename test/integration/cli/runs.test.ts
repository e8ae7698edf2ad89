/**
 * `eve-world-aws runs` against the emulators: newest first, filters, limit, JSON parsed back,
 * the table, and usage errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { completeRun, createRun, failRun, type OpsFixture, opsFixture, startRun, step } from '../../helpers/runs.js';

let f: OpsFixture;
const ids: Record<string, string> = {};

beforeAll(async () => {
  f = await opsFixture({}, 'runs');
  // Oldest first: a completed, a failed, a running and a pending run.
  ids.done = await createRun(f.world, 'wf-a');
  await startRun(f.world, ids.done);
  await step(f.world, ids.done, 'step_1', 'add', 3);
  await completeRun(f.world, ids.done);
  ids.failed = await createRun(f.world, 'wf-b');
  await startRun(f.world, ids.failed);
  await failRun(f.world, ids.failed);
  ids.running = await createRun(f.world, 'wf-a');
  await startRun(f.world, ids.running);
  ids.pending = await createRun(f.world, 'wf-b');
});

afterAll(async () => {
  await f?.close();
});

type RunJson = {
  runId: string;
  workflowName: string;
  status: string;
  createdAt: string;
  startedAt?: string;
  completedAt?: string;
  durationMs?: number;
};

async function runsJson(args: string[] = []): Promise<{ runs: RunJson[]; hasMore: boolean }> {
  const r = await runCli(['runs', '--json', ...args], f.env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

describe('runs', () => {
  it('--json lists runs newest first with status, times and duration', async () => {
    const out = await runsJson();
    expect(out.hasMore).toBe(false);
    expect(out.runs.map((r) => r.runId)).toEqual([ids.pending, ids.running, ids.failed, ids.done]);
    const [pending, running, , done] = out.runs;
    expect(pending).toMatchObject({ workflowName: 'wf-b', status: 'pending' });
    expect(pending.startedAt).toBeUndefined();
    expect(running.status).toBe('running');
    expect(running.durationMs).toBeGreaterThanOrEqual(0);
    expect(done).toMatchObject({ workflowName: 'wf-a', status: 'completed' });
    expect(Date.parse(done.completedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(done.startedAt ?? ''));
    expect(done.durationMs).toBe(Date.parse(done.completedAt ?? '') - Date.parse(done.startedAt ?? ''));
  });

  it('filters by --status (comma-separated), --workflow, and pages with --limit', async () => {
    expect((await runsJson(['--status', 'failed'])).runs.map((r) => r.runId)).toEqual([ids.failed]);
    expect((await runsJson(['--status', 'pending,running'])).runs.map((r) => r.runId)).toEqual([
      ids.pending,
      ids.running,
    ]);
    expect((await runsJson(['--workflow', 'wf-a'])).runs.map((r) => r.runId)).toEqual([ids.running, ids.done]);
    expect((await runsJson(['--workflow', 'wf-b', '--status', 'failed'])).runs.map((r) => r.runId)).toEqual([
      ids.failed,
    ]);
    const limited = await runsJson(['--limit', '2']);
    expect(limited.runs.map((r) => r.runId)).toEqual([ids.pending, ids.running]);
    expect(limited.hasMore).toBe(true);
  });

  it('a --workflow name that matches nothing: no runs, and a hint on stderr (the near names, else that names match exactly)', async () => {
    const nope = await runCli(['runs', '--json', '--workflow', 'nope'], f.env);
    expect(JSON.parse(nope.stdout).runs).toEqual([]);
    expect(nope.stderr).toMatch(
      /^hint: no workflow is named "nope" among the \d+ newest runs( or in \S+)?; names match exactly/,
    );
    const near = await runCli(['runs', '--json', '--workflow', 'wf-c'], f.env);
    expect(near.stderr).toBe('hint: no workflow is named "wf-c"; did you mean wf-a, wf-b?\n');
  });

  it('prints a table without colours when stdout is not a terminal', async () => {
    const r = await runCli(['runs'], f.env);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/\u001b\[/);
    const header = r.stdout.split('\n').find((l) => l.includes('Run'));
    expect(header).toMatch(/Run\s+│\s+Workflow\s+│\s+Status\s+│\s+Started\s+│\s+Duration/);
    const row = r.stdout.split('\n').find((l) => l.includes(ids.done));
    expect(row).toMatch(/wf-a\s+│\s+completed\s+│\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+│\s+\d+(ms|\.\ds)/);
    const empty = await runCli(['runs', '--workflow', 'nope'], f.env);
    expect(empty.stdout).toBe('No runs found.\n');
  });

  it('rejects a bad --status or --limit as a usage error (exit 2)', async () => {
    const bad = await runCli(['runs', '--status', 'done'], f.env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/must be one of pending, running, completed, failed, cancelled/);
    expect((await runCli(['runs', '--limit', '0'], f.env)).code).toBe(2);
    const help = await runCli(['runs', '--help']);
    expect(help.code).toBe(0);
    for (const o of ['--status <status>', '--workflow <name>', '--limit <n>', '--json'])
      expect(help.stdout).toContain(o);
  });
});
