/**
 * `eve-world-aws demo` (the README's first command, via `npm start`): its own embedded stack, the
 * sample workflow compiled and run through SQS on this World, then everything stopped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

const dir = mkdtempSync(path.join(tmpdir(), 'eve-world-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('runs the sample workflow to completion and reports it as JSON', async () => {
  const r = await runCli(['demo', '--json', '--data-dir', path.join(dir, 'dynamodb')], {}, 150_000);
  expect(r.code, r.stderr).toBe(0);
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
}, 180_000);
