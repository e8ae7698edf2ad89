/**
 * The deployment id and the affinity switch (src/deployment/id.ts), the consumer's decision
 * (src/consumer/delivery/affinity.ts), the predicate core calls unbound (src/deployment/unavailable-error.ts), and
 * `eve.dep` on the wire (src/queue/encoding.ts). Pure: files in a temp folder, no emulator.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { decideDeployment } from '../../../src/consumer/delivery/affinity.js';
import { fingerprintBuild } from '../../../src/deployment/fingerprint.js';
import { deploymentIdentity, LEGACY_DEPLOYMENT_ID, lambdaDeploymentId } from '../../../src/deployment/id.js';
import { DeploymentUnavailableError, isDeploymentUnavailableError } from '../../../src/deployment/unavailable-error.js';
import * as entry from '../../../src/index.js';
import {
  decodeEnvelope,
  encodeEnvelope,
  envelopeAttributes,
  envelopeFromMessage,
  MSG_ATTR,
} from '../../../src/queue/encoding.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'eve-dep-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function build(name: string, files: Record<string, string>): string {
  const dir = path.join(scratch, name);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

const config = (env: Record<string, string>, tuning = {}) => loadConfig({ AWS_REGION: 'us-east-1', ...env }, tuning);

describe('the deployment id', () => {
  it('off (and auto, today): the id of before affinity, or the one set; no affinity', async () => {
    for (const mode of ['off', 'auto']) {
      const id = deploymentIdentity(config({ EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: mode }));
      expect(id.affinity).toBe(false);
      expect(await id.id()).toBe(LEGACY_DEPLOYMENT_ID);
    }
    const set = deploymentIdentity(config({ EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-7' }));
    expect(await set.id()).toBe('release-7');
    // The option wins over the variable.
    const tuned = deploymentIdentity(config({ EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-7' }, { deploymentId: 'dpl_t' }));
    expect(await tuned.id()).toBe('dpl_t');
  });

  it('in Lambda: on for a published version, whose id is lambda:<function>:<version>; refused on $LATEST or under a set id', async () => {
    const on = { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on', AWS_LAMBDA_FUNCTION_NAME: 'host' };
    const v7 = deploymentIdentity(config({ ...on, AWS_LAMBDA_FUNCTION_VERSION: '7' }));
    expect(v7.affinity).toBe(true);
    expect(v7.shape).toBe('lambda');
    expect(await v7.id()).toBe('lambda:host:7');
    expect(() => deploymentIdentity(config({ ...on, AWS_LAMBDA_FUNCTION_VERSION: '$LATEST' }))).toThrow(
      /AWS_LAMBDA_FUNCTION_VERSION is \$LATEST, but host runs on a table with deployment affinity/,
    );
    expect(() =>
      deploymentIdentity(config({ ...on, AWS_LAMBDA_FUNCTION_VERSION: '7', EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-7' })),
    ).toThrow(
      /EVE_WORLD_AWS_DEPLOYMENT_ID is set, but this process runs in Lambda \(host\) on a table with deployment affinity/,
    );
    const auto = deploymentIdentity(config({ AWS_LAMBDA_FUNCTION_NAME: 'host', AWS_LAMBDA_FUNCTION_VERSION: '7' }));
    expect(auto.affinity).toBe(false);
    expect(auto.shape).toBe('lambda');
    expect(lambdaDeploymentId({ name: 'host', version: '7' })).toBe('lambda:host:7');
    expect(lambdaDeploymentId({ name: 'host', version: '$LATEST' })).toBeUndefined();
    expect(lambdaDeploymentId(undefined)).toBeUndefined();
  });

  it('on a plain Node host with affinity on: build:<fingerprint> of the workflow bundle, found from the entry script', async () => {
    const bundle = {
      '.well-known/workflow/v1/flow.mjs': 'export const POST = 1',
      '.well-known/workflow/v1/manifest.json': '{}',
    };
    const a = build('a', { ...bundle, 'server/main.mjs': 'main' });
    const on = { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' };
    const fp = await fingerprintBuild({ kind: 'workflow-bundle', dir: path.join(a, '.well-known/workflow/v1') });
    const byEntry = deploymentIdentity(config(on), path.join(a, 'server', 'main.mjs'));
    expect(byEntry.shape).toBe('node');
    expect(await byEntry.id()).toBe(`build:${fp}`);
    expect(await byEntry.fingerprint()).toEqual({ value: fp });
    // The option names the build instead (an app root, the bundle folder itself).
    const b = build('b', { ...bundle, '.well-known/workflow/v1/flow.mjs': 'export const POST = 2' });
    const byOption = deploymentIdentity(config(on, { buildDir: b }), path.join(a, 'server', 'main.mjs'));
    expect(await byOption.id()).not.toBe(`build:${fp}`);
    await expect(deploymentIdentity(config(on, { buildDir: path.join(scratch, 'none') })).id()).rejects.toThrow(
      /tuning.buildDir names no build: the build folder .* does not exist/,
    );
    // Set by hand: the id as set, the fingerprint of the build beside it.
    const named = deploymentIdentity(
      config({ ...on, EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-7' }),
      path.join(a, 'x.mjs'),
    );
    expect(await named.id()).toBe('release-7');
    expect(await named.fingerprint()).toEqual({ value: fp });
    // Affinity off or Lambda: no fingerprint (nothing registered; a published version is immutable).
    expect(await deploymentIdentity(config({}), path.join(a, 'x.mjs')).fingerprint()).toEqual({});
  });

  it('no build found: refused with the fix, or (an id set by hand) a note instead of a fingerprint', async () => {
    const bare = build('bare', { 'server/main.mjs': 'main', 'app.log': 'a log' });
    const on = { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' };
    const entry = path.join(bare, 'server', 'main.mjs');
    const cwd = process.cwd();
    process.chdir(bare);
    try {
      await expect(deploymentIdentity(config(on), entry).id()).rejects.toThrow(
        /EVE_WORLD_AWS_DEPLOYMENT_ID is unset and no workflow build was found to derive it from \(no \.well-known\/workflow\/v1\/manifest\.json .*\): run the app from the folder `wf build` ran in, point the buildDir option at it, or name the build/,
      );
      const named = deploymentIdentity(config({ ...on, EVE_WORLD_AWS_DEPLOYMENT_ID: 'release-7' }), entry);
      expect(await named.id()).toBe('release-7');
      expect((await named.fingerprint()).note).toMatch(/^no \.well-known\/workflow\/v1\/manifest\.json/);
    } finally {
      process.chdir(cwd);
    }
  });

  it('declares deploymentAffinity only once the table says so (never from the variable), and the predicate unbound', () => {
    const on = entry.createWorld({
      config: config({ EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on', EVE_WORLD_AWS_DEPLOYMENT_ID: 'r1' }),
      consumer: { consumer: 'none' },
    });
    // Before the table is read: no guard (and nothing is written or sent before it is read).
    expect(on.capabilities?.deploymentAffinity).toBeUndefined();
    expect(JSON.parse(JSON.stringify(on.capabilities))).toEqual({
      hookResumeDedup: true,
      hookRetention: { active: true },
    });
    expect(typeof on.resolveLatestDeploymentId).toBe('function');
    // Called unbound, as core does.
    const predicate = on.isDeploymentUnavailableError;
    expect(predicate?.(new DeploymentUnavailableError('d', 'retired'))).toBe(true);
    expect(predicate?.(Object.assign(new Error('x'), { name: 'DeploymentUnavailableError' }))).toBe(true);
    expect(predicate?.(new Error('ThrottlingException'))).toBe(false);
    expect(predicate?.(undefined)).toBe(false);
    expect(isDeploymentUnavailableError).toBe(predicate);
    return on.close();
  });
});

describe("the consumer's decision", () => {
  it('dispatches its own, unstamped, retired and unknown messages; holds an active other deployment', () => {
    expect(decideDeployment(undefined, 'b', undefined)).toEqual({ kind: 'here', why: 'unstamped' });
    expect(decideDeployment('b', 'b', { status: 'active' })).toEqual({ kind: 'here', why: 'own' });
    expect(decideDeployment('a', 'b', { status: 'retired' })).toEqual({ kind: 'here', why: 'retired' });
    expect(decideDeployment('a', 'b', undefined)).toEqual({ kind: 'here', why: 'unknown' });
    expect(decideDeployment('a', 'b', { status: 'active' })).toEqual({ kind: 'elsewhere', target: 'a' });
  });
});

describe('eve.dep on the wire', () => {
  const envelope = { queueName: '__wkf_workflow_w', messageId: 'msg_1', attemptOffset: 0, body: '{}' };

  it('travels in the attributes and in the Scheduler envelope, and is absent when unset', () => {
    const attrs = envelopeAttributes({ ...envelope, deploymentId: 'build:0123456789abcdef' });
    expect(Object.keys(attrs).length).toBeLessThanOrEqual(10);
    expect(attrs[MSG_ATTR.deployment]?.StringValue).toBe('build:0123456789abcdef');
    const flat = Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, v.StringValue]));
    expect(envelopeFromMessage('{}', flat)).toMatchObject({ deploymentId: 'build:0123456789abcdef' });
    expect(decodeEnvelope(encodeEnvelope({ ...envelope, deploymentId: 'lambda:h:7' }))?.deploymentId).toBe(
      'lambda:h:7',
    );
    expect(envelopeAttributes(envelope)[MSG_ATTR.deployment]).toBeUndefined();
    expect(decodeEnvelope(encodeEnvelope(envelope))?.deploymentId).toBeUndefined();
  });
});
