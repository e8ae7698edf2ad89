/**
 * `init`/`doctor` with EVE_WORLD_AWS_KMS_KEY_ID (src/provision/at-rest.ts) against the emulators:
 * the key is checked by use, the queues are put under it and drift is reported and fixed; what an
 * emulator does not implement is `skipped` with the reason, never reported as applied.
 */
import { CreateKeyCommand, DescribeKeyCommand, DisableKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_KMS_ALIAS } from '../../../emulator/stack.js';
import { loadConfig } from '../../../src/config/index.js';
import { iamPolicy, type ResourceReport, reconcile } from '../../../src/provision/index.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';

let f: Fixture;
let kms: KMSClient;
let localArn: string;

beforeAll(async () => {
  f = await createFixture({}, 'sse'); // resources created without a KMS key
  kms = await f.clients.kms();
  localArn = (await kms.send(new DescribeKeyCommand({ KeyId: LOCAL_KMS_ALIAS }))).KeyMetadata!.Arn!;
});
afterAll(() => {
  kms?.destroy();
});

const withKey = (keyId: string) => loadConfig({ ...f.env, EVE_WORLD_AWS_KMS_KEY_ID: keyId });
const encryption = (reports: ResourceReport[]) => reports.find((r) => r.kind === 'encryption')!;

async function queueKey(name: string): Promise<string | undefined> {
  const url = (await f.clients.sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl!;
  return (
    await f.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['KmsMasterKeyId'] }))
  ).Attributes?.KmsMasterKeyId;
}

describe('init / doctor with EVE_WORLD_AWS_KMS_KEY_ID', () => {
  it('without the variable there is no encryption report', async () => {
    const reports = await reconcile(f.clients, f.config, 'verify');
    expect(reports.map((r) => r.kind)).toEqual(['table', 'dlq', 'queue', 'bucket']);
  });

  it('dry-run plans, apply puts both queues under the key, verify then finds it all in place', async () => {
    const config = withKey(LOCAL_KMS_ALIAS);
    const plan = encryption(await reconcile(f.clients, config, 'dry-run'));
    expect(plan.details).toEqual([
      `key ${localArn}: enabled, symmetric, GenerateDataKey + Decrypt work for this caller`,
      `table ${config.tableName}: SSE-KMS skipped (DynamoDB Local does not implement table encryption settings)`,
      `queue ${config.deadLetterQueue}: would switch from no SSE-KMS to SSE-KMS under the key`,
      `queue ${config.queue}: would switch from no SSE-KMS to SSE-KMS under the key`,
      expect.stringMatching(new RegExp(`^bucket ${config.bucket}: would set default SSE-KMS under the key`)),
    ]);
    expect(await queueKey(config.queue)).toBeUndefined(); // a dry run changes nothing

    const applied = encryption(await reconcile(f.clients, config, 'apply'));
    expect(applied.state).toBe('present');
    expect(applied.details).toContain(`queue ${config.queue}: switched from no SSE-KMS to SSE-KMS under the key`);
    expect(applied.details).toContain(
      `bucket ${config.bucket}: SSE-KMS skipped (the endpoint accepted PutBucketEncryption but does not report bucket encryption back)`,
    );
    expect(await queueKey(config.queue)).toBe(localArn);
    expect(await queueKey(config.deadLetterQueue)).toBe(localArn);

    const verified = encryption(await reconcile(f.clients, config, 'verify'));
    expect(verified).toMatchObject({ state: 'present', name: LOCAL_KMS_ALIAS });
    expect(verified.details).toContain(`queue ${config.queue}: SSE-KMS under the key`);
    expect(verified.details).toContain(
      `bucket ${config.bucket}: SSE-KMS skipped (this endpoint does not report bucket encryption)`,
    );
  });

  it('reports a queue under another key as drift with the command, and apply fixes it', async () => {
    const config = withKey(LOCAL_KMS_ALIAS);
    await reconcile(f.clients, config, 'apply');
    const other = (await kms.send(new CreateKeyCommand({ Description: 'other' }))).KeyMetadata!.Arn!;
    const url = (await f.clients.sqs.send(new GetQueueUrlCommand({ QueueName: config.queue }))).QueueUrl!;
    await f.clients.sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { KmsMasterKeyId: other } }));

    const drift = encryption(await reconcile(f.clients, config, 'verify'));
    expect(drift.state).toBe('drift');
    expect(drift.details).toContain(
      `queue ${config.queue}: SSE-KMS under ${other}, expected SSE-KMS under ${localArn}`,
    );
    expect(drift.fix).toBe(`aws sqs set-queue-attributes --queue-url ${url} --attributes KmsMasterKeyId=${localArn}`);

    expect(encryption(await reconcile(f.clients, config, 'apply')).state).toBe('present');
    expect(await queueKey(config.queue)).toBe(localArn);
    expect(encryption(await reconcile(f.clients, config, 'verify')).state).toBe('present');
  });

  it('a key that does not exist is missing, with the commands to create one', async () => {
    const r = encryption(await reconcile(f.clients, withKey('alias/no-such-key'), 'verify'));
    expect(r.state).toBe('missing');
    expect(r.details).toEqual([expect.stringMatching(/^key alias\/no-such-key: NotFoundException/)]);
    expect(r.fix).toMatch(/does not exist .*aws kms create-key .*fix EVE_WORLD_AWS_KMS_KEY_ID/);
  });

  it('a disabled key is drift, and init does not touch the resources under it', async () => {
    const keyId = (await kms.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    await kms.send(new DisableKeyCommand({ KeyId: keyId }));
    const r = encryption(await reconcile(f.clients, withKey(keyId), 'apply'));
    expect(r.state).toBe('drift');
    expect(r.fix).toMatch(/key state is Disabled, expected Enabled/);
    expect(r.details).toHaveLength(1);
  });

  it('the printed IAM policy grants GenerateDataKey + Decrypt on the key (an alias through kms:ResourceAliases)', () => {
    const byArn = iamPolicy(withKey(localArn), '000000000000', 'us-east-1') as unknown as {
      Statement: Array<Record<string, unknown>>;
    };
    expect(byArn.Statement.find((s) => s.Sid === 'WorldRunKeys')).toEqual({
      Sid: 'WorldRunKeys',
      Effect: 'Allow',
      Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
      Resource: [localArn],
    });
    const byAlias = iamPolicy(withKey('alias/eve-world'), '123456789012', 'eu-west-1') as unknown as {
      Statement: Array<Record<string, unknown>>;
    };
    expect(byAlias.Statement.find((s) => s.Sid === 'WorldRunKeys')).toMatchObject({
      Resource: ['arn:aws:kms:eu-west-1:123456789012:key/*'],
      Condition: { 'ForAnyValue:StringEquals': { 'kms:ResourceAliases': 'alias/eve-world' } },
    });
    expect(
      (iamPolicy(f.config) as unknown as { Statement: Array<{ Sid: string }> }).Statement.map((s) => s.Sid),
    ).not.toContain('WorldRunKeys');
  });
});
