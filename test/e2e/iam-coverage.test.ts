/**
 * Proven least privilege: every AWS command the World actually sends during real workflow runs
 * (through the real core, over the wire to the emulators) is recorded by SDK middleware on the
 * World's clients and must have a `runtime` row in the IAM command table (src/aws/iam-actions.ts),
 * the table that both `init --print-iam-policy` and the CDK construct's grants are generated from.
 * A second check scans the source for every SDK command class any module constructs (CLI
 * included), so commands the e2e run cannot reach are still covered by some principal's row.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getHookByToken, resumeHook, start } from 'workflow/api';
import { COMMAND_PERMISSIONS, commandKey, permissionFor } from '../../src/aws/iam-actions.js';
import { type E2e, startE2e } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let e2e: E2e;
const recorded = new Set<string>();

type Stackable = { middlewareStack: { add: (mw: never, opts: object) => void }; constructor: { name: string } };

/** Record `<service>:<Command>` for every command this client sends (the HTTP request is still made). */
function record(client: Stackable): void {
  client.middlewareStack.add(
    ((next: (a: unknown) => unknown, context: { clientName?: string; commandName?: string }) => async (args: unknown) => {
      recorded.add(commandKey(context.clientName ?? client.constructor.name, context.commandName ?? 'unknown'));
      return next(args);
    }) as never,
    { step: 'initialize', name: 'iamCoverageRecorder' },
  );
}

beforeAll(async () => {
  // A low hop maximum so a short sleep goes through the delayed-send path too.
  e2e = await startE2e({ extraEnv: { EVE_WORLD_AWS_MAX_DELAY_HOP_SECONDS: '2', EVE_WORLD_AWS_PAYLOAD_THRESHOLD_BYTES: '1000' } });
  const { clients } = e2e.fixture;
  record(clients.ddb as never);
  record(clients.sqs as never);
  record((await clients.s3()) as never);
});
afterAll(async () => {
  await e2e?.close();
});

const wf = (name: string) => e2e.workflows[name] as never;

describe('IAM command table covers what the World sends', () => {
  it('runs workflows (steps, a stream, a sleep, a hook, an S3-offloaded input) and reads them back', async () => {
    expect(await (await start(wf('addition'), [1, 2])).returnValue).toBe(3);
    expect(await (await start(wf('sequentialWithStream'), [])).returnValue).toEqual(expect.any(String));
    expect(await (await start(wf('sleepThenStep'), ['3s'])).returnValue).toBe(3);
    // An incompressible run input over the 1000-byte threshold: stored in S3, read back by the steps.
    const big = await start(wf('countedSteps'), [randomBytes(3000).toString('hex'), 2]);
    expect(await big.returnValue).toEqual(expect.any(Number));

    const token = `iam-${Date.now()}`;
    const hooked = await start(wf('hookCollector'), [token, 1]);
    for (let i = 0; i < 100; i++) {
      const h = await getHookByToken(token).catch(() => undefined);
      if (h) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // hooks.list() with no run id is the Scan path.
    const hooks = await e2e.world.hooks.list({ pagination: {} });
    expect(hooks.data.some((h) => h.token === token)).toBe(true);
    await resumeHook(token, { value: 'x' });
    expect(await hooked.returnValue).toEqual(['x']);

    // The reads `wf inspect` / `wf web` make.
    await e2e.world.runs.list({ pagination: {} });
    await e2e.world.steps.list({ runId: big.runId, pagination: {} });
    await e2e.world.events.list({ runId: big.runId, pagination: {} });

    console.log(`[iam-coverage] ${recorded.size} commands recorded: ${[...recorded].sort().join(' ')}`);
    // Sanity: the recorder saw the core of the protocol (the test can fail).
    for (const c of ['dynamodb:TransactWriteItems', 'dynamodb:Query', 'sqs:SendMessage', 'sqs:ReceiveMessage', 'sqs:DeleteMessage', 's3:PutObject', 's3:GetObject', 'dynamodb:Scan']) {
      expect(recorded, `expected the run to send ${c}`).toContain(c);
    }
    const missing = [...recorded].filter((c) => !permissionFor(c)?.uses.runtime);
    expect(missing, `commands sent at run time without a runtime row in src/aws/iam-actions.ts`).toEqual([]);
  });
});

describe('IAM command table covers every SDK command in the source', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = path.join(dir, f);
      return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(f) ? [p] : [];
    });
  const SERVICE_OF: Record<string, string> = {
    '@aws-sdk/client-dynamodb': 'dynamodb',
    '@aws-sdk/client-sqs': 'sqs',
    '@aws-sdk/client-s3': 's3',
    '@aws-sdk/client-scheduler': 'scheduler',
  };

  it('each `new XCommand(...)` in src/ has a row (the service comes from the import)', () => {
    const found = new Set<string>();
    for (const file of files(path.join(root, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'(@aws-sdk\/client-[a-z]+)'/g)) {
        const service = SERVICE_OF[m[2]];
        if (!service) continue;
        for (const name of m[1].split(',').map((s) => s.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0])) {
          if (/Command$/.test(name) && new RegExp(`new ${name}\\(`).test(text)) found.add(`${service}:${name.replace(/Command$/, '')}`);
        }
      }
    }
    expect(found.size).toBeGreaterThan(20);
    const known = new Set<string>(COMMAND_PERMISSIONS.map((p) => p.command));
    expect([...found].filter((c) => !known.has(c))).toEqual([]);
  });

  it('no row grants a wildcard action, and the DLQ is never a runtime resource', () => {
    for (const p of COMMAND_PERMISSIONS) {
      for (const a of p.actions) expect(a === '*' || a.endsWith(':*'), `${p.command}: ${a}`).toBe(false);
      expect(p.uses.runtime ?? [], p.command).not.toContain('dlq');
    }
  });
});
