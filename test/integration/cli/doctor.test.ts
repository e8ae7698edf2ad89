/**
 * `eve-world-aws doctor` against the emulators: a healthy set-up, missing resources, drift in the
 * redrive policy, an unreachable endpoint, a bad configuration, and clock skew (a fake DynamoDB
 * endpoint whose Date header is 10 minutes off).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DeleteScheduleGroupCommand } from '@aws-sdk/client-scheduler';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../emulator/stack.js';
import { destroyClients } from '../../../src/aws/clients.js';
import { runDoctor } from '../../../src/cli/doctor.js';
import type { Check } from '../../../src/cli/doctor-checks.js';
import { assessSkew } from '../../../src/cli/doctor-clock.js';
import type { DoctorTarget } from '../../../src/cli/doctor-target.js';
import { registerDeployment } from '../../../src/deployment/registry.js';
import { REGION_FIX } from '../../../src/preflight/aws-environment.js';
import { createFixture, stackEnv, uniquePrefix } from '../../helpers/aws.js';
import { runCli } from '../../helpers/cli.js';
import { devl, opsFixture, sv } from '../../helpers/runs.js';

type Out = { ok: boolean; target?: DoctorTarget; checks: Check[] };

async function doctorJson(env: Record<string, string>): Promise<{ code: number | null; out: Out; stderr: string }> {
  const r = await runCli(['doctor', '--json'], env);
  return { code: r.code, out: JSON.parse(r.stdout), stderr: r.stderr };
}

const byName = (out: Out) => Object.fromEntries(out.checks.map((c) => [c.check, c]));

describe('doctor', () => {
  it('passes every check on a complete set-up (exit 0), as JSON and as a table', async () => {
    const fx = await createFixture({}, 'doc');
    destroyClients(fx.clients);
    const { code, out } = await doctorJson(fx.env);
    expect(code).toBe(0);
    expect(out.ok).toBe(true);
    expect(out.checks.map((c) => [c.check, c.status])).toEqual([
      ['configuration', 'pass'],
      ['variables', 'pass'],
      ['endpoints', 'pass'],
      ['credentials', 'pass'],
      ['table schema', 'pass'],
      ['dead-letter queue', 'pass'],
      ['queue + redrive policy', 'pass'],
      ['bucket', 'pass'],
      ['clock skew', 'pass'],
      ['older builds', 'pass'],
    ]);
    expect(byName(out)['older builds'].details).toBe(
      'no older build wrote the 0 runs read (the newest and the active)',
    );
    expect(byName(out)['clock skew'].details).toMatch(
      /^in sync with the server \(to within \d+\.\d s, the Date header's resolution\)$/,
    );

    // What it checked: the region, the account (from the queue URL), the endpoints and every name with its variable.
    const p = fx.config.prefix;
    expect(out.target).toEqual({
      region: 'us-east-1',
      account: expect.stringMatching(/^\d{12}$/),
      endpoints: expect.objectContaining({
        dynamodb: fx.env.AWS_ENDPOINT_URL_DYNAMODB,
        sqs: fx.env.AWS_ENDPOINT_URL_SQS,
        s3: fx.env.AWS_ENDPOINT_URL_S3,
      }),
      resources: {
        table: { name: p, chosenBy: `EVE_WORLD_AWS_PREFIX=${p}` },
        queue: { name: `${p}-queue`, chosenBy: `EVE_WORLD_AWS_PREFIX=${p}` },
        dlq: { name: `${p}-dlq`, chosenBy: `EVE_WORLD_AWS_PREFIX=${p}` },
        bucket: { name: `${p}-payloads`, chosenBy: `EVE_WORLD_AWS_PREFIX=${p}` },
      },
    });

    const human = await runCli(['doctor'], fx.env);
    expect(human.code).toBe(0);
    expect(human.stdout).not.toMatch(/\u001b\[/);
    expect(human.stdout).toMatch(
      new RegExp(
        `^Region us-east-1, account \\d{12}; endpoints dynamodb ${fx.env.AWS_ENDPOINT_URL_DYNAMODB}, sqs .*\nResources: table ${p}, queue ${p}-queue, dlq ${p}-dlq, bucket ${p}-payloads \\(named by EVE_WORLD_AWS_PREFIX=${p}\\)\n`,
      ),
    );
    expect(human.stdout).toMatch(/Check\s+│\s+Result\s+│\s+Details/);
    expect(human.stdout).toMatch(/queue \+ redrive policy\s+│\s+pass/);
    expect(human.stdout).toMatch(/All 10 checks passed\./);
  });

  it('with deployments registered, lists those with active runs and warns (exit 0) on runs no live consumer serves', async () => {
    const ops = await opsFixture({}, 'docd');
    let beating: NodeJS.Timeout | undefined;
    try {
      const now = Date.now();
      await registerDeployment(ops.context, 'build:gone', 'node', now - 10 * 60_000);
      await registerDeployment(ops.context, 'build:here', 'node', now);
      // build:here's process counts its heartbeats (doctor watches the counter, not the timestamps).
      beating = setInterval(() => void registerDeployment(ops.context, 'build:here', 'node').catch(() => {}), 1000);
      for (const dep of ['build:gone', 'build:gone', 'build:here'])
        await ops.world.events.create(null, {
          eventType: 'run_created',
          specVersion: sv,
          eventData: { deploymentId: dep, workflowName: 'workflow//./w//w', input: devl(1) },
        } as never);

      const { code, out } = await doctorJson(ops.env);
      expect(code).toBe(0);
      expect(out.ok).toBe(true);
      const dep = byName(out).deployments;
      expect(dep).toMatchObject({ status: 'warn' });
      expect(dep.details).toBe(
        '2 registered; live: build:here\nbuild:gone: 2 active runs, no live consumer\nbuild:here: 1 active run, live',
      );
      expect(dep.fix).toMatch(
        /^runs of build:gone wait: no process of that build counted a heartbeat in 12 s\. Start one, or/,
      );

      const human = await runCli(['doctor'], ops.env);
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/deployments\s+│\s+warn/);
      expect(human.stdout).toMatch(/! deployments: runs of build:gone wait/);
      expect(human.stdout).toMatch(/All 10 checks passed \(1 warning above\)\./);
    } finally {
      clearInterval(beating);
      await ops.close();
    }
  });

  it('when NO resource exists, names the region and the prefix as the likelier cause before init (exit 1)', async () => {
    const prefix = uniquePrefix('docm');
    const env = { ...stackEnv(), EVE_WORLD_AWS_PREFIX: prefix };
    const { code, out } = await doctorJson(env);
    expect(code).toBe(1);
    expect(out.ok).toBe(false);
    const c = byName(out);
    expect(c.credentials.status).toBe('pass');
    for (const name of ['table schema', 'dead-letter queue', 'queue + redrive policy', 'bucket']) {
      expect(c[name].status).toBe('fail');
      expect(c[name].details).toMatch(/missing/);
      expect(c[name].fix).toMatch(
        new RegExp(
          `^none of the resources exist here: first check AWS_REGION \\(us-east-1, endpoints http://127\\.0\\.0\\.1:\\d+.*\\) and EVE_WORLD_AWS_PREFIX \\(${prefix}\\): the resources are likelier elsewhere than never created\\. Run \`eve-world-aws init\` only to create a new set here$`,
        ),
      );
    }
    const human = await runCli(['doctor'], env);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(
      /x table schema: .*missing.*\n {2}fix: none of the resources exist here: first check AWS_REGION/,
    );
    expect(human.stdout).toMatch(/4 checks failed \(see the fix above\)\./);
  });

  it('when SOME resources exist, init (which creates the rest) is the fix', async () => {
    const fx = await createFixture({}, 'docp');
    destroyClients(fx.clients);
    const { code, out } = await doctorJson({ ...fx.env, EVE_WORLD_AWS_BUCKET: `${fx.config.prefix}-other` });
    expect(code).toBe(1);
    expect(out.checks.filter((c) => c.status === 'fail')).toEqual([
      expect.objectContaining({ check: 'bucket', fix: 'run `eve-world-aws init`' }),
    ]);
  });

  it('names a misspelt variable as a failed check with the closest name, and as the likelier cause', async () => {
    // Built, not spelled out: the docs test scans this file for unknown names.
    const typo = ['EVE', 'WORLD', 'AWS', 'PREFX'].join('_');
    const env = { ...stackEnv(), EVE_WORLD_AWS_PREFIX: uniquePrefix('doct'), [typo]: 'shop' };
    const { code, out } = await doctorJson(env);
    expect(code).toBe(1);
    expect(byName(out).variables).toEqual({
      check: 'variables',
      status: 'fail',
      details: `${typo} is not a variable of this World (did you mean EVE_WORLD_AWS_PREFIX?)\nignored: the names the World reads are in docs/configuration.md`,
      fix: `rename ${typo} to EVE_WORLD_AWS_PREFIX, or unset it`,
    });
    expect(byName(out)['table schema'].fix).toMatch(
      new RegExp(
        `^none of the resources exist here: first check ${typo} \\(did you mean EVE_WORLD_AWS_PREFIX\\?\\), AWS_REGION`,
      ),
    );
  });

  it("with a scheduler role, checks the World's own schedule group: passes when init made it, fails with the fix when it is gone", async () => {
    const fx = await createFixture(
      { EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/doc-sched' },
      'docs',
    );
    try {
      const ok = await doctorJson(fx.env);
      expect(ok.code).toBe(0);
      expect(byName(ok.out)['schedule group']).toMatchObject({ status: 'pass' });
      expect(byName(ok.out)['schedule group'].details).toMatch(new RegExp(`^${fx.config.prefix}: exists \\(ACTIVE\\)`));
      expect(byName(ok.out).endpoints.details).toMatch(/scheduler http:\/\/127\.0\.0\.1:\d+/);

      await (await fx.clients.scheduler()).send(new DeleteScheduleGroupCommand({ Name: fx.config.schedulerGroup }));
      const { code, out } = await doctorJson(fx.env);
      expect(code).toBe(1);
      expect(byName(out)['schedule group']).toMatchObject({ status: 'fail', fix: 'run `eve-world-aws init`' });
      expect(byName(out)['schedule group'].details).toMatch(/missing/);
      // Everything else is still fine.
      expect(out.checks.filter((c) => c.status === 'fail').map((c) => c.check)).toEqual(['schedule group']);
    } finally {
      destroyClients(fx.clients);
    }
  });

  it('reports a queue without a redrive policy as drift, with the command that fixes it', async () => {
    const fx = await createFixture({}, 'docd');
    const plain = `${fx.config.prefix}-plain`;
    try {
      await fx.clients.sqs.send(
        new CreateQueueCommand({ QueueName: plain, Attributes: { MaximumMessageSize: '1048576' } }),
      );
    } finally {
      destroyClients(fx.clients);
    }
    const { code, out } = await doctorJson({ ...fx.env, EVE_WORLD_AWS_QUEUE: plain });
    expect(code).toBe(1);
    const q = byName(out)['queue + redrive policy'];
    expect(q.status).toBe('fail');
    expect(q.details).toMatch(/has no redrive policy/);
    expect(q.fix).toMatch(/aws sqs set-queue-attributes .*RedrivePolicy/);
    expect(out.checks.filter((c) => c.status === 'fail')).toHaveLength(1);
  });

  it('an unreachable endpoint fails fast, names it, and skips the rest (exit 1)', async () => {
    const port = await freePort();
    const env = {
      ...stackEnv(),
      EVE_WORLD_AWS_PREFIX: uniquePrefix('docu'),
      AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${port}`,
    };
    const { code, out } = await doctorJson(env);
    expect(code).toBe(1);
    const c = byName(out);
    expect(c.endpoints).toMatchObject({ status: 'fail', details: `cannot connect to sqs http://127.0.0.1:${port}` });
    expect(c.endpoints.fix).toMatch(/eve-world-aws emulate/);
    expect(c.credentials.status).toBe('skip');
    expect(c['table schema'].status).toBe('skip');
  });

  it("no region: the credentials check fails with the World's own words and fix (exit 1)", async () => {
    // No profile files, no instance metadata: the SDK fails before it opens a connection.
    const home = mkdtempSync(path.join(tmpdir(), 'eve-world-aws-doctor-'));
    try {
      const { code, out } = await doctorJson({
        HOME: home,
        AWS_CONFIG_FILE: path.join(home, 'none'),
        AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'none'),
        AWS_EC2_METADATA_DISABLED: 'true',
        EVE_WORLD_AWS_PREFIX: uniquePrefix('docr'),
      });
      expect(code).toBe(1);
      expect(byName(out).credentials).toMatchObject({
        status: 'fail',
        details: 'no AWS region configured',
        fix: REGION_FIX,
      });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('a bad configuration is a failed check (exit 1), not a crash', async () => {
    const { code, out } = await doctorJson({ ...stackEnv(), EVE_WORLD_AWS_PREFIX: 'Bad_Prefix' });
    expect(code).toBe(1);
    expect(byName(out).configuration).toMatchObject({
      status: 'fail',
      details: expect.stringMatching(/^EVE_WORLD_AWS_PREFIX must be/),
    });
    expect(out.checks.filter((c) => c.status === 'skip')).toHaveLength(8);
  });

  describe('clock skew', () => {
    let server: Server;
    let url: string;
    beforeAll(async () => {
      // A DynamoDB endpoint 10 minutes ahead: it answers every call "table not found".
      server = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(400, {
            'content-type': 'application/x-amz-json-1.0',
            date: new Date(Date.now() + 600_000).toUTCString(),
          });
          res.end(
            JSON.stringify({
              __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException',
              message: 'Requested resource not found',
            }),
          );
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise((r) => server.close(r));
    });

    it('fails when the server clock is 10 minutes off, with the fix', async () => {
      const checks = await runDoctor({
        env: { ...stackEnv(), EVE_WORLD_AWS_PREFIX: uniquePrefix('docc'), AWS_ENDPOINT_URL_DYNAMODB: url },
      });
      const skew = checks.find((c) => c.check === 'clock skew');
      expect(skew).toMatchObject({
        status: 'fail',
        details: expect.stringMatching(/^local clock behind by at least (599|600)\.\d s; limit 5 s$/),
      });
      expect(skew?.fix).toMatch(/NTP/);
    });

    it('assessSkew counts only the skew that is certain at the 1 s resolution of the Date header', () => {
      const at = Date.parse('2026-01-01T00:00:00Z');
      // Server said 00:00:00 while we were between +100 and +300 ms: consistent with no skew.
      expect(
        assessSkew({ serverDate: new Date(at).toUTCString(), sentAt: at + 100, receivedAt: at + 300 }, 5000),
      ).toMatchObject({ skewMs: 0, ok: true });
      expect(
        assessSkew({ serverDate: new Date(at + 7000).toUTCString(), sentAt: at, receivedAt: at + 10 }, 5000),
      ).toMatchObject({ skewMs: 6990, ok: false });
      expect(
        assessSkew({ serverDate: new Date(at - 7000).toUTCString(), sentAt: at, receivedAt: at + 10 }, 5000),
      ).toMatchObject({ skewMs: -6000, ok: false });
      expect(
        assessSkew({ serverDate: new Date(at + 4000).toUTCString(), sentAt: at, receivedAt: at + 10 }, 5000).ok,
      ).toBe(true);
    });
  });

  it('--help', async () => {
    const r = await runCli(['doctor', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--json');
    expect(r.stdout).toContain('--max-skew <seconds>');
  });
});
