/**
 * `eve-world-aws emulate` end to end: the real CLI, a real DynamoDB Local JVM and fauxqs on free
 * ports, then the printed env used by `init` in another process, then a signal.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { childPort, freePort } from '../../../emulator/stack.js';
import {
  CliProcess,
  childPids,
  cleanEnv,
  cmdline,
  dynamoLocalOnPort,
  isAlive,
  parseExports,
  ROOT,
  runCli,
  runCommand,
  sleep,
  waitGone,
} from '../../helpers/cli.js';

const READY = /^# eve-world-aws emulate ready/m;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'eve-emulate-'));
const running: CliProcess[] = [];

function emulate(args: string[], env: Record<string, string | undefined> = {}, ownGroup = false): CliProcess {
  const p = new CliProcess(['emulate', ...args], env, ownGroup);
  running.push(p);
  return p;
}

/** A stand-in `java`: answers `-version`, then runs `body` in place of DynamoDB Local. */
function fakeJava(name: string, body: string): string {
  const file = path.join(tmp, name);
  writeFileSync(
    file,
    `#!/bin/sh\nif [ "$1" = "-version" ]; then echo 'openjdk version "17"' >&2; exit 0; fi\n${body}\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

/** Run an ES module snippet with `env` (the CLI tests' clean environment plus it); its stdout. */
async function runNode(code: string, env: Record<string, string>): Promise<string> {
  const r = await runCommand(process.execPath, ['--input-type=module', '-e', code], env);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

afterEach(() => {
  for (const p of running.splice(0)) p.kill();
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('eve-world-aws emulate (embedded)', () => {
  const dataDir = path.join(tmp, 'dynamodb');

  it('starts, prints the env, serves init from another process, and stops cleanly on SIGINT', async () => {
    const [awsPort, dynamodbPort] = [await freePort(), await childPort()];
    const envFile = path.join(tmp, 'sub', 'emulate.env');
    const p = emulate(
      ['--port', String(awsPort), '--dynamodb-port', String(dynamodbPort), '--data-dir', dataDir, '--env-out', envFile],
      { EVE_WORLD_AWS_PREFIX: 'emu-a' },
    );
    await p.waitFor(READY);

    const env = parseExports(p.stdout);
    expect(env).toMatchObject({
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: expect.any(String),
      AWS_SECRET_ACCESS_KEY: expect.any(String),
      AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${dynamodbPort}`,
      AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${awsPort}`,
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${awsPort}`,
      AWS_ENDPOINT_URL_KMS: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      AWS_ENDPOINT_URL_SECRETS_MANAGER: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      AWS_ENDPOINT_URL_SCHEDULER: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      EVE_WORLD_AWS_PREFIX: 'emu-a',
    });
    expect(p.stdout).toMatch(
      new RegExp(
        `^# eve-world-aws emulate ready \\(embedded\\): .*Secrets Manager ${env.AWS_ENDPOINT_URL_SECRETS_MANAGER}, Scheduler ${env.AWS_ENDPOINT_URL_SCHEDULER};`,
        'm',
      ),
    );
    // The printed endpoints answer: the SDKs find them through the printed variable names.
    const scheduler = await runNode(
      "const {SchedulerClient,GetScheduleGroupCommand}=await import('@aws-sdk/client-scheduler');" +
        "const o=await new SchedulerClient({}).send(new GetScheduleGroupCommand({Name:'default'}));console.log(o.State);",
      env,
    );
    expect(scheduler.trim()).toBe('ACTIVE');
    const secrets = await runNode(
      "const {SecretsManagerClient,CreateSecretCommand}=await import('@aws-sdk/client-secrets-manager');" +
        "const o=await new SecretsManagerClient({}).send(new CreateSecretCommand({Name:'emu-a-s',SecretString:'x'}));console.log(o.Name);",
      env,
    );
    expect(secrets.trim()).toBe('emu-a-s');
    expect(p.stdout).toMatch(
      /^# resources: table emu-a \(created\), dlq emu-a-dlq \(created\), queue emu-a-queue \(created\), bucket emu-a-payloads \(created\)$/m,
    );
    // Every stdout line is a shell comment or an export, so the output can be sourced as is.
    expect(
      p.stdout
        .trim()
        .split('\n')
        .every((l) => l.startsWith('# ') || l.startsWith('export ')),
    ).toBe(true);
    expect(parseExports(readFileSync(envFile, 'utf8'))).toEqual(env);

    const javaPids = dynamoLocalOnPort(dynamodbPort);
    expect(javaPids).toHaveLength(1);
    expect(childPids(p.pid)).toContain(javaPids[0]);

    // Another process, with only the printed env, finds everything already there.
    const init = await runCli(['init', '--json'], env);
    expect(init.code).toBe(0);
    expect(JSON.parse(init.stdout).resources.map((r: { state: string }) => r.state)).toEqual([
      'present',
      'present',
      'present',
      'present',
    ]);

    p.child.kill('SIGINT');
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(await waitGone(javaPids[0])).toBe(true);
    expect(dynamoLocalOnPort(dynamodbPort)).toEqual([]);
    // Its ports are gone, so is the env file: sourcing it fails instead of pointing at nothing.
    expect(existsSync(envFile)).toBe(false);
  });

  it('keeps DynamoDB data in --data-dir across restarts (queues and bucket are re-created), --json, SIGTERM', async () => {
    const [awsPort, dynamodbPort] = [await freePort(), await childPort()];
    const envFile = path.join(tmp, 'sigterm.env');
    const p = emulate(
      [
        '--port',
        String(awsPort),
        '--dynamodb-port',
        String(dynamodbPort),
        '--data-dir',
        dataDir,
        '--json',
        '--env-out',
        envFile,
      ],
      {
        EVE_WORLD_AWS_PREFIX: 'emu-a',
        // With a scheduler role the World's own schedule group is created too.
        EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/emu-scheduler',
      },
    );
    await p.waitFor(/\n}\n$/);
    const ready = JSON.parse(p.stdout);
    expect(ready).toMatchObject({
      ready: true,
      mode: 'embedded',
      endpoints: {
        dynamodb: `http://127.0.0.1:${dynamodbPort}`,
        sqs: `http://127.0.0.1:${awsPort}`,
        s3: `http://127.0.0.1:${awsPort}`,
        kms: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        secretsManager: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        scheduler: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      },
      env: { AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${dynamodbPort}`, EVE_WORLD_AWS_PREFIX: 'emu-a' },
    });
    expect(ready.env.AWS_ENDPOINT_URL_SCHEDULER).toBe(ready.endpoints.scheduler);
    expect(ready.env.AWS_ENDPOINT_URL_SECRETS_MANAGER).toBe(ready.endpoints.secretsManager);
    expect(ready.resources.map((r: { kind: string; state: string }) => `${r.kind}:${r.state}`)).toEqual([
      'table:present',
      'dlq:created',
      'queue:created',
      'bucket:created',
      'schedule-group:created',
    ]);
    expect(ready.envFile).toBe(envFile);
    expect(parseExports(readFileSync(envFile, 'utf8'))).toEqual(ready.env);
    p.child.kill('SIGTERM');
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(await waitGone(ready.dynamodbPid)).toBe(true);
    expect(existsSync(envFile)).toBe(false);
  });

  it('--no-init starts the stack without creating anything; init --dry-run plans all four; Ctrl-C stops it', async () => {
    const [awsPort, dynamodbPort] = [await freePort(), await childPort()];
    const envFile = path.join(tmp, 'taken-over.env');
    const p = emulate(
      ['--port', String(awsPort), '--dynamodb-port', String(dynamodbPort), '--no-init', '--env-out', envFile],
      {},
      true,
    );
    await p.waitFor(READY);
    // Another emulate wrote the same file since: this one's stop must leave that file alone.
    writeFileSync(envFile, 'export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1\n');
    expect(p.stdout).toMatch(/not created \(--no-init\)/);
    const env = parseExports(p.stdout);
    const plan = await runCli(['init', '--dry-run'], env);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(/would create 4 resources; nothing was changed/);
    const again = await runCli(['init', '--dry-run', '--json'], env);
    expect(JSON.parse(again.stdout).resources.every((r: { state: string }) => r.state === 'would-create')).toBe(true);
    // Ctrl-C reaches java as well as emulate; that must still be a clean stop, not a "crash".
    p.ctrlC();
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.stderr).not.toMatch(/exited unexpectedly/);
    expect(dynamoLocalOnPort(dynamodbPort)).toEqual([]);
    expect(readFileSync(envFile, 'utf8')).toBe('export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1\n');
  });
});

/** Whether `sh` is dash (Debian, Ubuntu), the shell whose death on Ctrl-C npx reports. */
function shIsDash(): boolean {
  try {
    return path.basename(realpathSync('/bin/sh')) === 'dash';
  } catch {
    return false;
  }
}

describe('eve-world-aws emulate through npx', () => {
  // docs/cli.md: npm runs the bin as `sh -c "eve-world-aws emulate ..."`. A terminal's Ctrl-C also
  // reaches that shell; dash (sh on Debian and Ubuntu) dies of it at once, and npm then re-raises
  // the signal its child died of, so npx reports 130 whatever emulate's own status (0). What a
  // user relies on still holds: the emulator stops everything and removes its env file.
  it('Ctrl-C stops everything; npx reports the signal its sh wrapper died of', async () => {
    const [awsPort, dynamodbPort] = [await freePort(), await childPort()];
    const envFile = path.join(tmp, 'npx.env');
    const child = spawn(
      'npx',
      [
        'eve-world-aws',
        'emulate',
        '--port',
        String(awsPort),
        '--dynamodb-port',
        String(dynamodbPort),
        '--env-out',
        envFile,
      ],
      {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: cleanEnv({ npm_config_offline: 'true', npm_config_update_notifier: 'false' }),
      },
    );
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      for (let i = 0; i < 1200 && !READY.test(stdout); i++) await sleep(100);
      expect(stdout).toMatch(READY);
      const java = dynamoLocalOnPort(dynamodbPort);
      expect(java).toHaveLength(1);
      process.kill(-(child.pid ?? 0), 'SIGINT'); // the terminal's Ctrl-C: the whole group
      const status = await exited;
      if (shIsDash()) expect(status).toEqual({ code: null, signal: 'SIGINT' });
      expect(await waitGone(java[0], 15_000)).toBe(true);
      for (let i = 0; i < 100 && existsSync(envFile); i++) await sleep(100);
      expect(existsSync(envFile)).toBe(false);
    } finally {
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL');
      } catch {
        // the whole group is gone
      }
    }
  }, 180_000);
});

describe('eve-world-aws emulate: failures', () => {
  it('names the port and the flag when the SQS + S3 port is in use, and starts no java', async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen({ port: 0, host: '127.0.0.1' }, () => r()));
    const busy = (srv.address() as net.AddressInfo).port;
    const dynamodbPort = await childPort();
    try {
      const r = await runCli(['emulate', '--port', String(busy), '--dynamodb-port', String(dynamodbPort)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`Port ${busy} .*already in use.*--port <port>`));
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(dynamoLocalOnPort(dynamodbPort)).toEqual([]);

      const r2 = await runCli(['emulate', '--port', String(await freePort()), '--dynamodb-port', String(busy)]);
      expect(r2.code).toBe(1);
      expect(r2.stderr).toMatch(new RegExp(`Port ${busy} \\(DynamoDB Local\\).*--dynamodb-port <port>`));
    } finally {
      srv.close();
    }
  });

  it('says how to install Java when java is missing (EVE_WORLD_AWS_JAVA or PATH)', async () => {
    const r = await runCli(['emulate', '--port', '0', '--dynamodb-port', '0'], {
      EVE_WORLD_AWS_JAVA: path.join(tmp, 'no-java'),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/apt-get install -y openjdk-17-jre-headless/);
    expect(r.stdout).toBe('');

    const emptyPath = mkdtempSync(path.join(tmp, 'path-'));
    const r2 = await runCli(['emulate', '--port', '0', '--dynamodb-port', '0'], { PATH: emptyPath });
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/Cannot run `java`.*Java 17.*apt-get install -y openjdk-17-jre-headless/);
  });

  it('fails cleanly when DynamoDB Local dies during start-up (exit 1, message, child gone)', async () => {
    const java = fakeJava('java-crash', 'echo "fake JVM failure" >&2\nexit 3');
    const r = await runCli(['emulate', '--port', '0', '--dynamodb-port', '0'], { EVE_WORLD_AWS_JAVA: java });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/DynamoDB Local exited with code 3 during start-up/);
    expect(r.stderr).toMatch(/fake JVM failure/);
  });

  it('SIGINT during start-up stops the child and exits 0', async () => {
    // A "JVM" that never opens its port: emulate is stuck waiting for it.
    const java = fakeJava('java-hang', 'exec sleep 120');
    const p = emulate(['--port', '0', '--dynamodb-port', '0'], { EVE_WORLD_AWS_JAVA: java });
    let kids: number[] = [];
    for (let i = 0; i < 100 && kids.length === 0; i++) {
      await sleep(100);
      // Skip the short-lived `java -version` probe; wait for the exec'd `sleep`.
      kids = childPids(p.pid).filter((pid) => cmdline(pid).startsWith('sleep'));
    }
    expect(kids).toHaveLength(1);
    expect(isAlive(kids[0])).toBe(true);
    p.child.kill('SIGINT');
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(await waitGone(kids[0])).toBe(true);
    expect(p.stdout).toBe('');
  });

  it('rejects a bad port as a usage error (exit 2)', async () => {
    const r = await runCli(['emulate', '--port', '70000']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--port <n>.*must be a port number/);
  });

  it('a bad EVE_WORLD_AWS_* value is a config error (exit 2) before anything starts', async () => {
    const r = await runCli(['emulate', '--port', '0', '--dynamodb-port', '0'], {
      EVE_WORLD_AWS_BUCKET: 'Not_A_Bucket',
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(
      /^error: EVE_WORLD_AWS_BUCKET is not a valid S3 bucket name .* Example: EVE_WORLD_AWS_BUCKET=my-agent-payloads$/,
    );
  });
});

describe('eve-world-aws emulate --docker', () => {
  /** Free ports for every service: a developer's own DynamoDB Local on :8000 must not matter. */
  const ports = async () => [
    '--port',
    String(await freePort()),
    '--dynamodb-port',
    String(await freePort()),
    '--s3-port',
    String(await freePort()),
  ];

  it('says no Docker engine answered and points to the embedded mode', async () => {
    // A socket path nobody listens on: fails the same way with or without a local engine.
    const r = await runCli(['emulate', '--docker', ...(await ports())], {
      DOCKER_HOST: `unix://${path.join(tmp, 'no-docker.sock')}`,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/No Docker engine answered/);
    expect(r.stderr).toMatch(/run `eve-world-aws emulate` without --docker for the embedded stack/);
    expect(r.stdout).toBe('');
  });

  it('says the same when the docker command is not installed', async () => {
    const r = await runCli(['emulate', '--docker', ...(await ports())], {
      PATH: mkdtempSync(path.join(tmp, 'nodocker-')),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/No Docker engine answered: the `docker` command is not installed.*without --docker/);
  });

  it('checks for Docker before the ports: a busy port on a machine without Docker is not the news', async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen({ port: 0, host: '127.0.0.1' }, () => r()));
    const busy = (srv.address() as net.AddressInfo).port;
    try {
      const r = await runCli(['emulate', '--docker', ...(await ports()), '--dynamodb-port', String(busy)], {
        PATH: mkdtempSync(path.join(tmp, 'nodocker-')),
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/No Docker engine answered/);
      expect(r.stderr).not.toMatch(/already in use/);
    } finally {
      srv.close();
    }
  });
});
