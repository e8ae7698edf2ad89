/**
 * Proven least privilege: every AWS command the World actually sends during real workflow runs
 * (through the real core, over the wire to the emulators) is recorded by SDK middleware on the
 * World's clients and must have a `runtime` row in the IAM command table (src/provision/iam-actions.ts),
 * the table that both `init --print-iam-policy` and the CDK construct's grants are generated from.
 * The run uses a KMS key (the emulator's KMS endpoint), so the per-run data key calls are recorded
 * too, a retention of 1 day, so finished runs' S3 objects are listed and tagged, and a scheduler
 * role with a 2 s hop maximum, so a 3 s sleep is a schedule on the emulator's Scheduler.
 * A second check scans the source for every SDK command class any module constructs (CLI
 * included, static and dynamic imports), so commands the e2e run cannot reach are still covered by
 * some principal's row.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getHookByToken, resumeHook, start } from 'workflow/api';
import { LOCAL_KMS_ALIAS } from '../../emulator/stack.js';
import { COMMAND_PERMISSIONS, commandKey, permissionFor } from '../../src/provision/iam-actions.js';
import { type E2e, startE2e } from '../helpers/e2e.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let e2e: E2e;
const recorded = new Set<string>();

type Stackable = { middlewareStack: { add: (mw: never, opts: object) => void }; constructor: { name: string } };

/** Record `<service>:<Command>` for every command this client sends (the HTTP request is still made). */
function record(client: Stackable): void {
  client.middlewareStack.add(
    ((next: (a: unknown) => unknown, context: { clientName?: string; commandName?: string }) =>
      async (args: unknown) => {
        recorded.add(commandKey(context.clientName ?? client.constructor.name, context.commandName ?? 'unknown'));
        return next(args);
      }) as never,
    { step: 'initialize', name: 'iamCoverageRecorder' },
  );
}

beforeAll(async () => {
  // A low hop maximum so a short sleep goes through the delayed-send path too (here: the Scheduler).
  e2e = await startE2e({
    tuning: { maxDelayHopSeconds: 2, payloadThresholdBytes: 1000 },
    extraEnv: {
      EVE_WORLD_AWS_KMS_KEY_ID: LOCAL_KMS_ALIAS,
      EVE_WORLD_AWS_RETENTION_DAYS: '1',
      EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/eve-world-iam-coverage',
    },
  });
  const { clients } = e2e.fixture;
  record(clients.ddb as never);
  record(clients.sqs as never);
  record((await clients.s3()) as never);
  record((await clients.kms()) as never);
  record((await clients.scheduler()) as never);
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
    // hooks.list() with no run id: the sharded GSI2 listing.
    const hooks = await e2e.world.hooks.list({ pagination: {} });
    expect(hooks.data.some((h) => h.token === token)).toBe(true);
    await resumeHook(token, { value: 'x' });
    expect(await hooked.returnValue).toEqual(['x']);

    // The reads `wf inspect` / `wf web` make.
    await e2e.world.runs.list({ pagination: {} });
    await e2e.world.steps.list({ runId: big.runId, pagination: {} });
    await e2e.world.events.list({ runId: big.runId, pagination: {} });

    // A process that did not create the run's key (`wf web`, another instance) unwraps it: Decrypt.
    e2e.runKeys?.clear();
    expect(await e2e.world.getEncryptionKeyForRun?.(big.runId)).toHaveLength(32);

    console.log(`[iam-coverage] ${recorded.size} commands recorded: ${[...recorded].sort().join(' ')}`);
    // Sanity: the recorder saw the core of the protocol (the test can fail).
    const expected = [
      'dynamodb:TransactWriteItems',
      'dynamodb:Query',
      'sqs:SendMessage',
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      's3:PutObject',
      's3:GetObject',
      's3:ListObjectsV2',
      'kms:GenerateDataKey',
      'kms:Decrypt',
      'scheduler:CreateSchedule',
    ];
    for (const c of expected) {
      expect(recorded, `expected the run to send ${c}`).toContain(c);
    }
    const missing = [...recorded].filter((c) => !permissionFor(c)?.uses.runtime);
    expect(missing, `commands sent at run time without a runtime row in src/provision/iam-actions.ts`).toEqual([]);
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
    '@aws-sdk/client-kms': 'kms',
    '@aws-sdk/client-secrets-manager': 'secretsmanager',
    '@aws-sdk/client-lambda': 'lambda',
  };

  it('each `new XCommand(...)` in src/ has a row (the service is the SDK client module, static or dynamic import, that exports it)', async () => {
    const modules = Object.fromEntries(
      await Promise.all(
        Object.keys(SERVICE_OF).map(async (m) => [m, (await import(m)) as Record<string, unknown>] as const),
      ),
    );
    const found = new Set<string>();
    const unresolved: string[] = [];
    for (const file of files(path.join(root, 'src'))) {
      const text = readFileSync(file, 'utf8');
      // Every AWS SDK client module the file names, in `import ... from '...'` or `import('...')`.
      const named = [...text.matchAll(/['"](@aws-sdk\/client-[a-z0-9-]+)['"]/g)].map((m) => m[1]);
      for (const m of named)
        if (!(m in SERVICE_OF)) unresolved.push(`${path.relative(root, file)}: ${m} has no service in SERVICE_OF`);
      for (const [, name] of text.matchAll(/new (\w+Command)\(/g)) {
        const from = named.find((m) => m in modules && typeof modules[m][name] === 'function');
        if (from) found.add(`${SERVICE_OF[from]}:${name.replace(/Command$/, '')}`);
        else
          unresolved.push(
            `${path.relative(root, file)}: new ${name}( comes from no AWS SDK client module the file imports`,
          );
      }
    }
    expect(unresolved).toEqual([]);
    expect(found.size).toBeGreaterThan(40);
    // The dynamic imports are seen too (payloads, retention, schedules).
    for (const c of [
      's3:PutObject',
      's3:DeleteObjects',
      'scheduler:CreateSchedule',
      'scheduler:CreateScheduleGroup',
      'kms:GenerateDataKey',
    ])
      expect(found).toContain(c);
    const known = new Set<string>(COMMAND_PERMISSIONS.map((p) => p.command));
    expect([...found].filter((c) => !known.has(c))).toEqual([]);
    // And the table has no stale rows: every row's command is still sent somewhere.
    expect([...known].filter((c) => !found.has(c))).toEqual([]);
  });

  it('no row grants a wildcard action; at run time the DLQ is only found and sent to', () => {
    const onDlq: string[] = [];
    for (const p of COMMAND_PERMISSIONS) {
      for (const a of p.actions) expect(a === '*' || a.endsWith(':*'), `${p.command}: ${a}`).toBe(false);
      if ((p.uses.runtime ?? []).includes('dlq')) onDlq.push(...p.actions);
    }
    // The consumer dead-letters a message whose failed dispatches reached the limit
    // (src/consumer/delivery/failures.ts); reading or deleting from the DLQ stays the operator's.
    expect(onDlq.sort()).toEqual(['sqs:GetQueueUrl', 'sqs:SendMessage']);
  });
});
