/**
 * A name resolves before any run exists (issue 43): `start <name>` on a fresh table takes the
 * workflow's id from the app's workflow manifest, a real `wf build` output (the e2e app compiled
 * by the Workflow DevKit builder, test/e2e/build.mjs), named by `--manifest` or found from the
 * current folder; without one it falls back to earlier runs; a typo gets the near names. `runs
 * --workflow` with a name that matches nothing says which names are near. Against the emulator,
 * through the real CLI; nothing consumes the queue (the runs stay pending: what is checked is the
 * id they were created under).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyClients } from '../../../src/aws/clients.js';
import { createWorld } from '../../../src/index.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';
import { runCli } from '../../helpers/cli.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const appDir = path.join(here, '..', '..', 'e2e', 'app');
const manifestPath = path.join(appDir, '.well-known', 'workflow', 'v1', 'manifest.json');

let fx: Fixture;
let addition: string;
let sleepThenStep: string;
/** A project folder with no manifest anywhere up to its package.json. */
let bare: string;

beforeAll(async () => {
  const { buildE2eApp } = (await import(path.join(here, '../../e2e/build.mjs'))) as { buildE2eApp(): Promise<string> };
  await buildE2eApp(); // no-op when the bundle is fresh
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
    workflows: Record<string, Record<string, { workflowId: string }>>;
  };
  addition = manifest.workflows['workflows/checklist.ts'].addition.workflowId;
  sleepThenStep = manifest.workflows['workflows/checklist.ts'].sleepThenStep.workflowId;
  fx = await createFixture({}, 'wfm');
  bare = mkdtempSync(path.join(tmpdir(), 'eve-world-aws-bare-'));
  writeFileSync(path.join(bare, 'package.json'), '{"private":true}');
});
afterAll(() => {
  if (fx) destroyClients(fx.clients);
  if (bare) rmSync(bare, { recursive: true, force: true });
});

const cli = (args: string[], cwd?: string) => runCli(args, fx.env, 60_000, cwd);

/** The id the run was created under, read back from the table. */
async function createdAs(runId: string): Promise<string> {
  const world = createWorld({ config: fx.config, clients: fx.clients, consumer: { consumer: 'none' } });
  try {
    return (await world.runs.get(runId, { resolveData: 'none' })).workflowName;
  } finally {
    await world.close();
  }
}

describe('start <name> before any run exists', () => {
  it('a fresh table: the name resolves from --manifest, and the run is created under the full id', async () => {
    const r = await cli(['start', 'addition', '2', '3', '--manifest', manifestPath, '--json'], bare);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { runId: string; workflowId: string };
    expect(out.workflowId).toBe(addition);
    expect(await createdAs(out.runId)).toBe(addition);
  });

  it("without --manifest: the one `wf build` wrote, found from the app's folder or a folder inside it", async () => {
    for (const cwd of [appDir, path.join(appDir, 'workflows')]) {
      const r = await cli(['start', 'sleepThenStep', '--json'], cwd);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).workflowId).toBe(sleepThenStep);
    }
  });

  it('a typo: exit 1 naming the manifest and the near name, and how to pass a full id', async () => {
    const r = await cli(['start', 'additon', '1'], appDir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no workflow named "additon" in ${manifestPath} nor among the newest`);
    expect(r.stderr).toContain(`did you mean addition (${addition})?`);
    expect(r.stderr).toContain('pass its full id');
  });

  it('no manifest: a name that ran before resolves from the runs; one that never ran says where to point', async () => {
    const ran = await cli(['start', 'addition', '4', '5', '--json'], bare);
    expect(ran.stderr).toBe('');
    expect(JSON.parse(ran.stdout).workflowId).toBe(addition);
    const never = await cli(['start', 'countedSteps'], bare);
    expect(never.code).toBe(1);
    expect(never.stderr).toContain(`no workflow named "countedSteps" in an app manifest (none found from ${bare}`);
    expect(never.stderr).toContain('pass --manifest <path>');
  });

  it('a --manifest that cannot be read is a usage error (exit 2), even with a full id', async () => {
    const r = await cli(['start', addition, '--manifest', 'nowhere/manifest.json'], bare);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `cannot read the workflow manifest ${path.join(bare, 'nowhere/manifest.json')} (ENOENT)`,
    );
  });
});

describe('runs --workflow <name> that matches nothing', () => {
  it('names the near workflows: of the runs read, and of the manifest found from here', async () => {
    // Runs of addition and sleepThenStep exist (above); no manifest here: the runs' names.
    const fromRuns = await cli(['runs', '--workflow', 'addtion'], bare);
    expect(fromRuns.code).toBe(0);
    expect(fromRuns.stdout).toBe('No runs found.\n');
    expect(fromRuns.stderr).toBe(`hint: no workflow is named "addtion"; did you mean addition (${addition})?\n`);
    // countedSteps never ran: only the manifest knows it.
    const fromManifest = await cli(['runs', '--workflow', 'countedStep', '--json'], appDir);
    expect(JSON.parse(fromManifest.stdout).runs).toEqual([]);
    expect(fromManifest.stderr).toMatch(/^hint: no workflow is named "countedStep"; did you mean countedSteps \(/);
    // A workflow the app has that has not run: no runs, and nothing to hint.
    const notYet = await cli(['runs', '--workflow', 'countedSteps'], appDir);
    expect(notYet.stdout).toBe('No runs found.\n');
    expect(notYet.stderr).toBe('');
  });
});
