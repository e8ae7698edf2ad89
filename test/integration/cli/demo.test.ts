/**
 * `eve-world-aws demo` (the README's first command, via `npm start`): its own embedded stack, the
 * sample workflow compiled and run through SQS on this World, then everything stopped. Run from
 * inside a user's project, it writes nothing there but its documented data dir (`.emulate/`): the
 * project's own `wf build` output stays as it was. Ctrl-C cancels its run before it stops.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startStack } from '../../../emulator/stack.js';
import { loadConfig } from '../../../src/config/index.js';
import { createWorld } from '../../../src/index.js';
import { CliProcess, ROOT, runCli } from '../../helpers/cli.js';

const dir = mkdtempSync(path.join(tmpdir(), 'eve-world-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every path under `root`, relative, sorted (directories too). */
function tree(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' }).sort();
}

it('run inside a project, runs the sample workflow to completion and writes only .emulate/ there', async () => {
  const project = path.join(dir, 'app');
  const manifest = path.join(project, '.well-known/workflow/v1/manifest.json');
  mkdirSync(path.dirname(manifest), { recursive: true });
  const sentinel = '{"workflows":{"the app itself":{}}}\n';
  writeFileSync(manifest, sentinel);
  writeFileSync(path.join(project, 'package.json'), '{"name":"app","private":true}\n');
  const before = tree(project);
  // A cached bundle would skip the compile, the part that used to write into the cwd.
  rmSync(path.join(ROOT, 'node_modules/.cache/eve-world-aws/demo-build'), { recursive: true, force: true });

  const r = await runCli(['demo', '--json'], {}, 150_000, project);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/Compiled workflows/);
  const out = JSON.parse(r.stdout) as {
    runId: string;
    status: string;
    result: { approvedBy: string; forecasts: unknown[] };
    stream: string;
    events: number;
  };
  expect(out.runId).toMatch(/^wrun_/);
  expect(out.status).toBe('completed');
  expect(out.result.approvedBy).toBe('the demo');
  expect(out.result.forecasts).toHaveLength(3);
  expect(out.stream).toContain('approved=true by the demo');
  // 3 parallel steps, 5 stream steps, a sleep, a hook: every event of the run was seen.
  expect(out.events).toBeGreaterThanOrEqual(30);

  expect(readFileSync(manifest, 'utf8')).toBe(sentinel);
  const added = tree(project).filter((p) => !before.includes(p));
  expect(added.filter((p) => p.split(path.sep)[0] !== '.emulate')).toEqual([]);
  // The default data dir, in the cwd as documented.
  expect(added).toContain(path.join('.emulate', 'dynamodb'));
}, 180_000);

it('Ctrl-C during the run cancels it before the emulator stops (exit 130), so it is never left running', async () => {
  const dataDir = path.join(dir, 'interrupted');
  // The second Ctrl-C path aside, a terminal's Ctrl-C reaches the whole group: demo and its JVM.
  const p = new CliProcess(['demo', '--data-dir', dataDir], { NO_COLOR: '1' }, true);
  try {
    await p.waitFor(/started run (wrun_\w+)/, 150_000);
    const runId = /started run (wrun_\w+)/.exec(p.stdout)?.[1] ?? '';
    p.ctrlC();
    expect(await p.exited).toEqual({ code: 130, signal: null });
    expect(p.stderr).toContain(`cancelled run ${runId}`);
    expect(p.stdout).not.toMatch(/run completed/);

    // What the kept data says, read through the World from a stack on the same data dir.
    const stack = await startStack({ dynamodbPort: 0, awsPort: 0, dataDir });
    try {
      const world = createWorld({ config: loadConfig({ ...stack.env, EVE_WORLD_AWS_PREFIX: 'eve-world-demo' }) });
      try {
        const run = await world.runs.get(runId, { resolveData: 'none' });
        expect(run.status).toBe('cancelled');
      } finally {
        await world.close();
      }
    } finally {
      await stack.stop();
    }
  } finally {
    p.kill();
  }
}, 240_000);
