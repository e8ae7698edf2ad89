/**
 * The suite's failure reporter (test/setup/failure-reporter.ts) in a real Vitest run of a probe
 * file: a failure is printed, with its reason, while the file is still running (the probe's next
 * test waits for a marker this test writes only once it has read the report), and a green run
 * prints nothing of it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = path.join(root, '.tmp', `reporter-probe-${process.pid}`);
const marker = path.join(dir, 'reported');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs Vitest on `probe` (the test file's text); `onStderr` sees stderr as it arrives. */
function runProbe(probe: string, onStderr: (all: string) => void = () => {}) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'probe.test.ts'), probe);
  writeFileSync(
    path.join(dir, 'vitest.config.mjs'),
    `export default { test: { include: ['probe.test.ts'], reporters: ['default', ${JSON.stringify(path.join(root, 'test/setup/failure-reporter.ts'))}] } };\n`,
  );
  const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const p = spawn(process.execPath, [vitest, 'run', '--config', 'vitest.config.mjs'], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined, CI: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      onStderr(stderr);
    });
    p.once('error', reject);
    p.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('failure reporter', () => {
  it('prints a failure and its reason while the file is still running', async () => {
    const probe = `import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
it('fails first', () => { expect({ answer: 41 }).toEqual({ answer: 42 }); });
it('waits for the report', async () => {
  for (let i = 0; i < 300 && !existsSync(${JSON.stringify(marker)}); i++) await new Promise((r) => setTimeout(r, 100));
  expect(existsSync(${JSON.stringify(marker)})).toBe(true);
}, 60_000);
`;
    const r = await runProbe(probe, (stderr) => {
      if (/FAIL probe\.test\.ts > fails first \(after [\d.]+ s, load average [\d.]+ on \d+ cores\)/.test(stderr))
        writeFileSync(marker, '');
    });
    expect(existsSync(marker), r.stderr).toBe(true);
    expect(r.code).toBe(1);
    // The reason came with it, and the waiting test passed: the report was read mid-file.
    expect(r.stderr).toMatch(
      /FAIL probe\.test\.ts > fails first[^\n]*\nAssertionError: expected \{ answer: 41 \} to deeply equal \{ answer: 42 \}/,
    );
    expect(r.stdout).toMatch(/Tests\s+1 failed \| 1 passed/);
  }, 120_000);

  it('adds nothing to a green run', async () => {
    const r = await runProbe(`import { expect, it } from 'vitest';\nit('passes', () => expect(1).toBe(1));\n`);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/FAIL/);
  }, 120_000);
});
