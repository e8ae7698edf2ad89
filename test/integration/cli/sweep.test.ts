/**
 * `eve-world-aws sweep` against the emulators: the real CLI process over runs written through the
 * World, with orphans planted under a finished run's prefix and an active run's; --dry-run,
 * --json, --older-than, --run, the text report, --help and usage errors.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SweepReport } from '../../../src/index.js';
import { stackEnv } from '../../helpers/aws.js';
import { runCli } from '../../helpers/cli.js';
import { startFaultProxy } from '../../helpers/faults-proxy.js';
import { sleep } from '../../helpers/queue.js';
import { createRun, ev, type OpsFixture, opsFixture, startRun } from '../../helpers/runs.js';

let f: OpsFixture;
let done: string;
let active: string;
let orphan: string;
let activeObject: string;
const output = new Uint8Array(randomBytes(5_000));

async function keysUnder(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const page of f.context.payloads.list(prefix)) out.push(...page.map((o) => o.key));
  return out.sort();
}

beforeAll(async () => {
  // A low threshold, so the runs' inputs and outputs below go to S3.
  f = await opsFixture({}, 'sweep', { payloadThresholdBytes: 1000 });
  done = await createRun(f.world, 'wf-sweep', 'x'.repeat(3000));
  await startRun(f.world, done);
  await ev(f.world, done, { eventType: 'run_completed', eventData: { output } });
  active = await createRun(f.world, 'wf-sweep', 'y'.repeat(3000));
  await startRun(f.world, active);
  orphan = `runs/${done}/run/output-${'a'.repeat(32)}`;
  activeObject = `runs/${active}/run/output-${'b'.repeat(32)}`;
  await f.context.payloads.putBlob(orphan, new Uint8Array(randomBytes(2_000)));
  await f.context.payloads.putBlob(activeObject, new Uint8Array(randomBytes(2_000)));
  // S3 times have 1 s resolution: let the objects be strictly older than a zero grace.
  await sleep(1100);
});

afterAll(async () => {
  await f?.close();
});

async function sweepJson(args: string[]): Promise<SweepReport> {
  const r = await runCli(['sweep', '--json', ...args], f.env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as SweepReport;
}

describe('sweep', () => {
  it('keeps everything within the default 1 h grace', async () => {
    const r = await sweepJson([]);
    expect(r.graceMs).toBe(3_600_000);
    expect(r.runs).toMatchObject({ scanned: 2, active: 1, recent: 1 });
    expect(r.objects.orphans).toBe(0);
    expect(await keysUnder(`runs/${done}/`)).toContain(orphan);
  });

  it('--dry-run lists the orphan and deletes nothing', async () => {
    const before = await keysUnder('runs/');
    const r = await sweepJson(['--dry-run', '--older-than', '0s']);
    expect(r.dryRun).toBe(true);
    expect(r.swept.map((o) => o.key)).toEqual([orphan]);
    expect(r.heldBodies).toMatchObject({ scanned: 0, expired: 0 });
    expect(await keysUnder('runs/')).toEqual(before);
  });

  it('deletes only the finished run’s orphan; the active run and committed payloads stay', async () => {
    const r = await sweepJson(['--older-than', '0s', '--run', done]);
    expect(r.runs).toMatchObject({ scanned: 1, terminal: 1 });
    expect(r.objects).toMatchObject({ orphans: 1, referenced: 2 });
    expect(r.heldBodies).toBeUndefined();
    expect(await keysUnder(`runs/${done}/`)).not.toContain(orphan);
    expect(await keysUnder(`runs/${active}/`)).toContain(activeObject);
    const run = await f.world.runs.get(done);
    expect(Buffer.compare(run.output as Uint8Array, output)).toBe(0);

    // The text report, once nothing is left: counts on stdout, nothing on stderr (not a terminal).
    const text = await runCli(['sweep', '--older-than', '0s'], f.env);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe('');
    expect(text.stdout).toMatch(/^Runs: 2 scanned — 0 terminal .* skipped 1 already clean, 1 active/m);
    expect(text.stdout).toMatch(/deleted 0 orphans/);
    expect(text.stdout).not.toMatch(/^deleted runs\//m);
    // --recheck reads the cleaned run again and finds its two committed objects referenced.
    const again = await sweepJson(['--older-than', '0s', '--recheck']);
    expect(again.runs).toMatchObject({ terminal: 1, clean: 0, active: 1 });
    expect(again.objects).toMatchObject({ referenced: 2, orphans: 0 });
  });

  it('--help explains the rules and the schedule; bad input exits 2 with how to fix it', async () => {
    const help = await runCli(['sweep', '--help']);
    expect(help.code).toBe(0);
    for (const p of [
      /--dry-run/,
      /--older-than <duration>/,
      /--run <runId>/,
      /--recheck/,
      /--json/,
      /daily/,
      /Exit codes/,
    ])
      expect(help.stdout).toMatch(p);
    const badDuration = await runCli(['sweep', '--older-than', 'soon'], f.env);
    expect(badDuration.code).toBe(2);
    expect(badDuration.stderr).toMatch(/duration such as 30s/);
    // A bare number is not read as seconds (it would delete what 5 days was meant to keep).
    const bare = await runCli(['sweep', '--older-than', '5'], f.env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(
      /--older-than <duration>.*needs a unit: 5d \(days\), 5h \(hours\), 5m \(minutes\) or 5s/,
    );
    expect(bare.stdout).toBe('');
    expect(help.stdout).toMatch(/--older-than <duration>[\s\S]*units: d, h, m, s/);
    const badRun = await runCli(['sweep', '--run', 'nope'], f.env);
    expect(badRun.code).toBe(2);
    expect(badRun.stderr).toMatch(/wrun_ followed by a ULID/);
  });

  it('exits 1 and names the run when its reads keep failing; its objects stay', async () => {
    const proxy = await startFaultProxy({ target: stackEnv().AWS_ENDPOINT_URL_DYNAMODB, service: 'dynamodb', seed: 1 });
    try {
      proxy.setRules([{ kind: 'error5xx', ops: ['Query'] }]);
      const before = await keysUnder(`runs/${done}/`);
      const r = await runCli(['sweep', '--older-than', '0s', '--recheck', '--run', done], {
        ...f.env,
        AWS_ENDPOINT_URL_DYNAMODB: proxy.url,
      });
      expect(r.code).toBe(1);
      expect(r.stdout).toContain(`could not sweep runs/${done}/`);
      expect(r.stderr).toMatch(/1 objects or runs could not be swept/);
      expect(proxy.injected('error5xx')).toBeGreaterThan(0);
      expect(await keysUnder(`runs/${done}/`)).toEqual(before);
    } finally {
      await proxy.close();
    }
  });
});
