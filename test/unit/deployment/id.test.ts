/**
 * The deployment id and the affinity switch (src/deployment/id.ts), the consumer's decision
 * (src/consumer/affinity.ts), the predicate core calls unbound (src/deployment/unavailable-error.ts), and
 * `eve.dep` on the wire (src/queue/encoding.ts). Pure: files in a temp folder, no emulator.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { decideDeployment } from '../../../src/consumer/affinity.js';
import { buildHash, deploymentIdentity, LEGACY_DEPLOYMENT_ID, lambdaDeploymentId } from '../../../src/deployment/id.js';
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

  it('on a plain Node host with affinity on: the hash of the build, which any one-byte change moves', async () => {
    const files = { 'index.mjs': 'export {}', 'chunks/a.mjs': 'step a', 'node_modules/x/i.js': 'dep' };
    const a = build('a', files);
    const same = build('same', files);
    const oneByte = build('b', { ...files, 'chunks/a.mjs': 'step b' });
    const depOnly = build('dep', { ...files, 'node_modules/x/i.js': 'other dep' });
    expect(await buildHash(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(await buildHash(same)).toBe(await buildHash(a)); // the folder's place is not the build
    expect(await buildHash(oneByte)).not.toBe(await buildHash(a));
    expect(await buildHash(depOnly)).toBe(await buildHash(a)); // node_modules is skipped
    const on = { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' };
    const byEntry = deploymentIdentity(config(on), path.join(a, 'index.mjs'));
    expect(byEntry.shape).toBe('node');
    expect(await byEntry.id()).toBe(`build:${await buildHash(a)}`);
    const byOption = deploymentIdentity(config(on, { buildDir: oneByte }), path.join(a, 'index.mjs'));
    expect(await byOption.id()).toBe(`build:${await buildHash(oneByte)}`);
    await expect(deploymentIdentity(config(on, { buildDir: path.join(scratch, 'none') })).id()).rejects.toThrow(
      ConfigError,
    );
    // A tool's entry script (a CLI in node_modules that loads the app) is not the app's build.
    const tool = path.join(a, 'node_modules', 'x', 'i.js');
    await expect(deploymentIdentity(config(on), tool).id()).rejects.toThrow(
      /is a package's, not this app's build: name the build/,
    );
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
