/**
 * The Workflow DevKit's own CLI reads our data: `wf inspect ... --backend <dist/src/index.js>` loads
 * the built World through its no-argument `createWorld()` (config from the environment), exactly
 * as the README documents.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCommand } from '../../helpers/cli.js';
import { finishedRun, type OpsFixture, opsFixture } from '../../helpers/runs.js';

const WF = path.join(ROOT, 'node_modules', '.bin', 'wf');
const BACKEND = path.join(ROOT, 'dist', 'src', 'index.js');

function wf(args: string[], env: Record<string, string>) {
  return runCommand(WF, [...args, '--backend', BACKEND], env, 40_000);
}

/** wf prints a JSON array (steps, events) or `{data: [...]}` (runs) after any banner lines. */
function jsonData<T>(stdout: string): T[] {
  const start = stdout.search(/^[[{]/m);
  const parsed = JSON.parse(stdout.slice(start)) as T[] | { data: T[] };
  return Array.isArray(parsed) ? parsed : parsed.data;
}

let f: OpsFixture;
let runId: string;

beforeAll(async () => {
  f = await opsFixture({}, 'wfi');
  runId = await finishedRun(f.world, 'workflow//./workflows/demo//demo');
});

afterAll(async () => {
  await f?.close();
});

describe('wf inspect --backend (the Workflow DevKit CLI on our data)', () => {
  it('wf inspect runs --json lists our runs', async () => {
    const r = await wf(['inspect', 'runs', '--json'], f.env);
    expect(r.code, r.stderr).toBe(0);
    const runs = jsonData<{ runId: string; status: string; workflowName: string }>(r.stdout);
    expect(runs).toEqual([
      expect.objectContaining({ runId, status: 'completed', workflowName: 'workflow//./workflows/demo//demo' }),
    ]);
  });

  it('wf inspect steps --runId --json lists the steps', async () => {
    const r = await wf(['inspect', 'steps', '--runId', runId, '--json'], f.env);
    expect(r.code, r.stderr).toBe(0);
    const steps = jsonData<{ stepId: string; stepName: string; status: string }>(r.stdout);
    expect(steps).toEqual([expect.objectContaining({ stepId: 'step_01', stepName: 'add', status: 'completed' })]);
  });

  // `wf inspect events` passes `pagination.cursor: ''` when no --cursor is given: '' must read
  // from the start, as in world-local.
  it('wf inspect events --runId --json lists the events', async () => {
    const r = await wf(['inspect', 'events', '--runId', runId, '--json'], f.env);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(jsonData<{ eventType: string }>(r.stdout).map((e) => e.eventType)).toContain('run_completed');
  });
});
