/** The program shell: help, version, usage errors and exit codes. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../../helpers/cli.js';

describe('eve-world-aws (program)', () => {
  it('--help lists the commands and exit codes', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage: eve-world-aws/);
    expect(r.stdout).toMatch(/^\s+init /m);
    expect(r.stdout).toMatch(/^\s+emulate /m);
    expect(r.stdout).toMatch(/\nExit codes:\n {2}0 {2}ok\n {2}1 {2}failure .*\n {2}2 {2}bad usage or configuration\n/);
  });

  it.each([
    ['init', [/--dry-run/, /--json/, /--print-iam-policy/]],
    [
      'emulate',
      [
        /--port <n>/,
        /--dynamodb-port <n>/,
        /--data-dir <dir>/,
        /--no-init/,
        /--env-out <path>/,
        /--docker/,
        /--json/,
        /in memory/,
      ],
    ],
  ])('%s --help documents its flags', async (cmd, patterns) => {
    const r = await runCli([cmd as string, '--help']);
    expect(r.code).toBe(0);
    for (const p of patterns as RegExp[]) expect(r.stdout).toMatch(p);
  });

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('unknown commands and options are usage errors (exit 2)', async () => {
    const a = await runCli(['frobnicate']);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/unknown command 'frobnicate'/);
    const b = await runCli(['init', '--frob']);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/unknown option '--frob'/);
  });
});
