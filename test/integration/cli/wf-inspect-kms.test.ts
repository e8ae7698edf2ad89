/**
 * An operator reads an encrypted run with the Workflow DevKit's own CLI: `wf inspect --decrypt
 * --backend dist/src/index.js` loads our World from the environment and decrypts through
 * `getEncryptionKeyForRun`, i.e. with the operator's KMS permission. Without `--decrypt`, or
 * without EVE_WORLD_AWS_KMS_KEY_ID, the same command shows only ciphertext placeholders.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { LOCAL_KMS_ALIAS } from '../../../emulator/stack.js';
import { ROOT, runCommand } from '../../helpers/cli.js';
import { type E2e, startE2e } from '../../helpers/e2e.js';

const WF = path.join(ROOT, 'node_modules', '.bin', 'wf');
const BACKEND = path.join(ROOT, 'dist', 'src', 'index.js');
const MARKER = `OPS-SECRET-${Math.random().toString(36).slice(2, 10)}`;

let e2e: E2e;
let runId: string;

beforeAll(async () => {
  // A no-op when the global setup (or an earlier run) built the bundle.
  const { buildE2eApp } = (await import(path.join(ROOT, 'test', 'e2e', 'build.mjs'))) as {
    buildE2eApp: () => Promise<string>;
  };
  await buildE2eApp();
  e2e = await startE2e({ extraEnv: { EVE_WORLD_AWS_KMS_KEY_ID: LOCAL_KMS_ALIAS } });
  const run = await start(e2e.workflows.countedSteps as never, [MARKER, 1]);
  expect(await run.returnValue).toBe(7);
  runId = run.runId;
});
afterAll(async () => {
  await e2e?.close();
});

function wf(args: string[], env: Record<string, string>) {
  return runCommand(WF, [...args, '--backend', BACKEND], env, 60_000);
}

describe('wf inspect on an encrypted run', () => {
  it('--decrypt shows the step inputs in clear text, with the KMS key from the environment', async () => {
    const r = await wf(['inspect', 'steps', '--runId', runId, '--withData', '--decrypt', '--json'], e2e.fixture.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${MARKER}:seq:0`);
  });

  it('without --decrypt, or without EVE_WORLD_AWS_KMS_KEY_ID, the inputs stay encrypted', async () => {
    const plain = await wf(['inspect', 'steps', '--runId', runId, '--withData', '--json'], e2e.fixture.env);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(/"stepName":/);
    expect(plain.stdout).not.toContain(MARKER);
    expect(plain.stdout).toContain('Encrypted');

    const { EVE_WORLD_AWS_KMS_KEY_ID: _unset, ...noKey } = e2e.fixture.env;
    const keyless = await wf(['inspect', 'steps', '--runId', runId, '--withData', '--decrypt', '--json'], noKey);
    expect(keyless.code, keyless.stderr).toBe(0);
    expect(keyless.stdout).toMatch(/"stepName":/);
    expect(keyless.stdout).not.toContain(MARKER);
    expect(keyless.stdout).toContain('Encrypted');
  });
});
