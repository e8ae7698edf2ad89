/**
 * The CDK construct, synthesized offline (no credentials, no Docker) and checked with
 * aws-cdk-lib/assertions: resource properties against the same constants `init` uses, grants
 * against the IAM command table, outputs, cdk-nag AwsSolutionsChecks, and no wildcard actions or
 * resources on data-plane permissions.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { hostDockerfile } from '../../../src/cdk/dockerfile.js';
import { EveWorldAws } from '../../../src/cdk/eve-world-aws.js';
import {
  MAX_MESSAGE_SIZE,
  MESSAGE_RETENTION_SECONDS,
  PAYLOAD_EXPIRY_DAYS,
  PAYLOAD_PREFIXES,
} from '../../../src/config/limits.js';
import { actionsByResource } from '../../../src/provision/principal-actions.js';
import { TABLE_SCHEMA } from '../../../src/schema/keys.js';
import { ensureWorkerBundle, fakeEveApp, makeStack, repoRoot, tempDir } from '../../helpers/cdk.js';

// Tests that synthesize a whole stack take seconds on a loaded 2-core machine: no wall-time check.
vi.setConfig({ testTimeout: 60_000 });

type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

let template: Template;
let resources: Resources;
let stack: Stack;
let construct: EveWorldAws;

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const logicalId = (c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);

beforeAll(async () => {
  await ensureWorkerBundle();
  ({ stack, construct } = makeStack({ maxConcurrency: 5, batchSize: 4, maxBatchingWindow: Duration.seconds(2) }));
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources as Resources;
  // Synthesis of the whole construct takes seconds on a loaded 2-core machine: not a wall-time check.
}, 120_000);

describe('EveWorldAws: table', () => {
  it('has the key schema, attributes, indexes and TTL of TABLE_SCHEMA (the init source of truth)', () => {
    const [[, table]] = ofType('AWS::DynamoDB::Table');
    const p = table.Properties;
    expect(p.KeySchema).toEqual(TABLE_SCHEMA.keySchema);
    expect(new Set(p.AttributeDefinitions.map((a: object) => JSON.stringify(a)))).toEqual(
      new Set(TABLE_SCHEMA.attributeDefinitions.map((a) => JSON.stringify(a))),
    );
    expect(
      p.GlobalSecondaryIndexes.map((g: any) => ({
        name: g.IndexName,
        pk: g.KeySchema[0].AttributeName,
        sk: g.KeySchema[1].AttributeName,
        projection: g.Projection,
      })),
    ).toEqual(
      TABLE_SCHEMA.gsis.map((g) => ({
        name: g.name,
        pk: g.pk,
        sk: g.sk,
        // The projection `init` creates, attribute for attribute (ALL would triple the index writes).
        projection: {
          ProjectionType: g.projection.ProjectionType,
          NonKeyAttributes: [...g.projection.NonKeyAttributes],
        },
      })),
    );
    expect(p.TimeToLiveSpecification).toEqual({ AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true });
    expect(p.BillingMode).toBe('PAY_PER_REQUEST');
    expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(p.DeletionProtectionEnabled).toBe(true);
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it('deletion protection is a prop', () => {
    const t = Template.fromStack(makeStack({ deletionProtection: false }).stack);
    t.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
  });
});

describe('EveWorldAws: queues', () => {
  it('the queue redrives to the DLQ, is SSE + TLS only, and its visibility is 6x the worker timeout', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: 6 * 900,
      MessageRetentionPeriod: MESSAGE_RETENTION_SECONDS,
      MaximumMessageSize: MAX_MESSAGE_SIZE,
      ReceiveMessageWaitTimeSeconds: 20,
      SqsManagedSseEnabled: true,
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(construct.deadLetterQueue), 'Arn'] },
        maxReceiveCount: 10,
      },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, RedrivePolicy: Match.absent() });
    const denies = ofType('AWS::SQS::QueuePolicy').map(([, r]) => r.Properties.PolicyDocument.Statement[0]);
    expect(denies).toHaveLength(2);
    for (const d of denies)
      expect(d).toMatchObject({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } });
  });

  it('visibility follows the worker timeout and factor, and is never below the timeout', () => {
    const t = Template.fromStack(
      makeStack({ workerTimeout: Duration.minutes(2), hostTimeout: Duration.minutes(2), visibilityTimeoutFactor: 1 })
        .stack,
    );
    t.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 120, RedrivePolicy: Match.anyValue() });
    t.hasResourceProperties('AWS::Lambda::Function', { Handler: 'index.handler', Timeout: 120 });
    expect(() => makeStack({ visibilityTimeoutFactor: 0.5 })).toThrow(/visibilityTimeoutFactor must be >= 1/);
    expect(() => makeStack({ maxConcurrency: 1 })).toThrow(/maxConcurrency must be 2-1000/);
  });
});

describe('EveWorldAws: bucket', () => {
  it('blocks public access, encrypts, is TLS only, and has the lifecycle rules of init', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LifecycleConfiguration: {
        Rules: PAYLOAD_PREFIXES.map((prefix) => ({
          Id: `expire-${prefix.replace('/', '')}`,
          Prefix: prefix,
          ExpirationInDays: PAYLOAD_EXPIRY_DAYS,
          Status: 'Enabled',
        })),
      },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });
});

describe('EveWorldAws: scheduler, secret, functions', () => {
  it('the Scheduler role is trusted by scheduler.amazonaws.com for this stack’s schedule group only and can only send to the queue', () => {
    template.resourceCountIs('AWS::Scheduler::ScheduleGroup', 1);
    const role = resources[logicalId(construct.schedulerRole)];
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: {
          StringEquals: {
            'aws:SourceAccount': '123456789012',
            'aws:SourceArn': { 'Fn::GetAtt': [stack.getLogicalId(construct.scheduleGroup), 'Arn'] },
          },
        },
      },
    ]);
    const policies = ofType('AWS::IAM::Policy').filter(([, p]) =>
      p.Properties.Roles.some((r: any) => r.Ref === logicalId(construct.schedulerRole)),
    );
    expect(policies.map(([, p]) => p.Properties.PolicyDocument.Statement)).toEqual([
      [{ Action: 'sqs:SendMessage', Effect: 'Allow', Resource: { 'Fn::GetAtt': [logicalId(construct.queue), 'Arn'] } }],
    ]);
  });

  it('generates the signing secret; host and worker get its ARN and GetSecretValue on it alone, never its value', () => {
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true },
    });
    const secretId = logicalId(construct.signingSecret as never);
    // Host and worker; the sweeper never gets the secret (asserted with its environment below).
    const fns = ofType('AWS::Lambda::Function').filter(([, f]) => f.Properties.Handler !== 'index.sweepHandler');
    expect(fns).toHaveLength(2);
    for (const [, fn] of fns) {
      expect(fn.Properties.Environment.Variables.EVE_WORLD_AWS_SIGNING_SECRET_ARN).toEqual({ Ref: secretId });
      expect(fn.Properties.Environment.Variables.EVE_WORLD_AWS_SIGNING_SECRET).toBeUndefined();
    }
    for (const fn of [construct.hostFunction, construct.workerFunction!]) {
      const statements = ofType('AWS::IAM::Policy')
        .filter(([, p]) =>
          p.Properties.Roles.some((r: any) => r.Ref === stack.getLogicalId(fn.role!.node.defaultChild as never)),
        )
        .flatMap(
          ([, p]) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>,
        );
      const sm = statements.filter((st) => JSON.stringify(st.Action).includes('secretsmanager:'));
      expect(sm).toEqual([{ Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: { Ref: secretId } }]);
    }
  });

  it('no function environment anywhere holds a secret value or a dynamic reference to one', () => {
    for (const kmsKey of [undefined, 'create' as const]) {
      const t = Template.fromStack(makeStack(kmsKey ? { kmsKey } : {}).stack).toJSON();
      for (const [id, r] of Object.entries(t.Resources as Resources)) {
        if (r.Type !== 'AWS::Lambda::Function') continue;
        const env = JSON.stringify(r.Properties.Environment ?? {});
        expect(env, id).not.toMatch(/resolve:secretsmanager|resolve:ssm-secure|SecretString/i);
        expect(env, id).not.toMatch(/"EVE_WORLD_AWS_SIGNING_SECRET"/);
      }
    }
  });

  it('host: container image with the web adapter settings and a RESPONSE_STREAM Function URL', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      PackageType: 'Image',
      Timeout: 900,
      Environment: {
        Variables: Match.objectLike({
          AWS_LWA_INVOKE_MODE: 'response_stream',
          AWS_LWA_READINESS_CHECK_PATH: '/eve/v1/health',
          AWS_LWA_PORT: '8080',
          EVE_WORLD_AWS_QUEUE: { Ref: logicalId(construct.queue) },
          EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '5400',
        }),
      },
    });
    template.hasResourceProperties('AWS::Lambda::Url', { InvokeMode: 'RESPONSE_STREAM', AuthType: 'NONE' });
    const dockerfile = hostDockerfile();
    expect(dockerfile).toMatch(/COPY --from=adapter \/lambda-adapter \/opt\/extensions\/lambda-adapter/);
    expect(dockerfile).toMatch(/AWS_LWA_INVOKE_MODE=response_stream/);
  });

  it('worker: Node 24 bundle, SQS event source with ReportBatchItemFailures and the batching props, signed delivery to the flow route', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Handler: 'index.handler',
      Environment: {
        Variables: Match.objectLike({
          EVE_WORLD_AWS_FLOW_URL: {
            'Fn::Join': ['', [{ 'Fn::GetAtt': [Match.anyValue(), 'FunctionUrl'] }, '.well-known/workflow/v1/flow']],
          },
          EVE_WORLD_AWS_SIGNING_SECRET_ARN: Match.anyValue(),
        }),
      },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 4,
      MaximumBatchingWindowInSeconds: 2,
      ScalingConfig: { MaximumConcurrency: 5 },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(construct.queue), 'Arn'] },
    });
  });

  it('the worker code is the pre-bundled dist/lambda-worker (the file the Lambda-mode e2e test invokes)', () => {
    const [[, worker]] = ofType('AWS::Lambda::Function').filter(([, f]) => f.Properties.Runtime === 'nodejs24.x');
    // The asset's hash names both the S3 key and the staged directory in the cloud assembly.
    const hash = String(worker.Properties.Code.S3Key).replace(/\.zip$/, '');
    const staged = path.join((stack.node.root as App).outdir, `asset.${hash}`, 'index.mjs');
    expect(readFileSync(staged, 'utf8')).toBe(
      readFileSync(path.join(repoRoot, 'dist/lambda-worker/index.mjs'), 'utf8'),
    );
  });

  it('a missing Dockerfile is a clear synth error that says how to generate it', () => {
    const dir = tempDir('no-dockerfile-');
    expect(() => makeStack({ app: dir })).toThrow(/Dockerfile is missing\. Generate it once with .*hostDockerfile/);
  });
});

describe('EveWorldAws: grants come from the IAM command table', () => {
  const statementsOf = (roleLogicalId: string) =>
    ofType('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: any) => r.Ref === roleLogicalId))
      .flatMap(
        ([, p]) =>
          p.Properties.PolicyDocument.Statement as Array<{
            Action: string | string[];
            Resource: unknown;
            Condition?: unknown;
          }>,
      );
  const actions = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

  it('host and worker hold exactly the runtime rows of the table (plus logs), and on the DLQ only the send of a dead letter', () => {
    // No kmsKey: the key rows have no resource, so no KMS action is granted. Deployment affinity
    // (the default): the worker alone may invoke the host's versions.
    const expected = new Set(
      [...actionsByResource('runtime').values()]
        .flat()
        .filter((a) => !a.startsWith('kms:') && !a.startsWith('lambda:')),
    );
    for (const fn of [construct.hostFunction, construct.workerFunction!]) {
      const statements = statementsOf(stack.getLogicalId(fn.role!.node.defaultChild as never));
      const granted = new Set(statements.flatMap(actions).filter((a) => !a.startsWith('logs:')));
      const invokes = granted.delete('lambda:InvokeFunction');
      expect(invokes).toBe(fn === construct.workerFunction);
      expect(granted).toEqual(expected);
      // The consumer moves a message whose failures reached the limit (src/consumer/delivery/failures.ts).
      const onDlq = statements.filter((st) =>
        JSON.stringify(st.Resource ?? '').includes(logicalId(construct.deadLetterQueue)),
      );
      expect(new Set(onDlq.flatMap(actions))).toEqual(new Set(['sqs:GetQueueUrl', 'sqs:SendMessage']));
      const passRole = statements.find((s) => actions(s).includes('iam:PassRole'));
      expect(passRole).toMatchObject({
        Resource: { 'Fn::GetAtt': [logicalId(construct.schedulerRole), 'Arn'] },
        Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      });
    }
  });

  it('no Allow statement anywhere has Action "*" or a service wildcard, and no data-plane action has Resource "*"', () => {
    const dataPlane = /^(dynamodb|sqs|s3|scheduler|iam|secretsmanager|kms):/;
    let checked = 0;
    for (const [, r] of Object.entries(resources)) {
      const doc = r.Properties?.PolicyDocument ?? r.Properties?.AssumeRolePolicyDocument;
      if (!doc) continue;
      for (const s of doc.Statement as Array<{ Effect: string; Action: string | string[]; Resource?: unknown }>) {
        // Deny statements (TLS-only policies deny sqs:* / s3:* to everyone) only take rights away.
        if (s.Effect !== 'Allow') continue;
        checked++;
        for (const a of actions(s)) expect(a === '*' || a.endsWith(':*'), `Action ${a}`).toBe(false);
        const res = s.Resource === undefined ? [] : Array.isArray(s.Resource) ? s.Resource : [s.Resource];
        if (actions(s).some((a) => dataPlane.test(a))) expect(res).not.toContain('*');
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe('EveWorldAws: deployment affinity', () => {
  const fnsOf = (res: Resources) => Object.entries(res).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
  const policyStatements = (res: Resources, st: Stack, role: { node: { defaultChild?: unknown } }) => {
    const roleId = st.getLogicalId(role.node.defaultChild as never);
    return Object.values(res)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(roleId))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>);
  };
  const acts = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

  it('every deploy publishes a host version and points the `live` alias at it; the Function URL is the alias’s', () => {
    const versions = ofType('AWS::Lambda::Version');
    expect(versions).toHaveLength(1);
    const [[versionId, version]] = versions;
    expect(version.Properties.FunctionName).toEqual({ Ref: logicalId(construct.hostFunction) });
    template.hasResourceProperties('AWS::Lambda::Alias', {
      Name: 'live',
      FunctionName: { Ref: logicalId(construct.hostFunction) },
      FunctionVersion: { 'Fn::GetAtt': [versionId, 'Version'] },
    });
    const [[, url]] = ofType('AWS::Lambda::Url');
    expect(url.Properties.Qualifier).toBe('live');
  });

  it('deploymentAffinity false: a replaced version is deleted, the host asks for nothing, the worker invokes no version', () => {
    const off = makeStack({ deploymentAffinity: false });
    const res = Template.fromStack(off.stack).toJSON().Resources as Resources;
    const [[, version]] = Object.entries(res).filter(([, r]) => r.Type === 'AWS::Lambda::Version');
    expect((version as { UpdateReplacePolicy?: string }).UpdateReplacePolicy).toBe('Delete');
    for (const [, fn] of fnsOf(res)) {
      expect(fn.Properties.Environment?.Variables?.EVE_WORLD_AWS_DEPLOYMENT_AFFINITY).toBeUndefined();
      expect(fn.Properties.Environment?.Variables?.EVE_WORLD_AWS_HOST_FUNCTION).toBeUndefined();
    }
    expect(
      policyStatements(res, off.stack, off.construct.workerFunction!.role!)
        .flatMap(acts)
        .filter((x) => x.startsWith('lambda:')),
    ).toEqual([]);
  });

  it('by default (a new stack gets affinity from the start): versions retained, the host asks the new table for affinity, the worker names the host and may invoke exactly its versions', () => {
    const a = makeStack({});
    const res = Template.fromStack(a.stack).toJSON().Resources as Resources;
    const hostId = a.stack.getLogicalId(a.construct.hostFunction.node.defaultChild as never);
    const [[versionId, version]] = Object.entries(res).filter(([, r]) => r.Type === 'AWS::Lambda::Version');
    expect((version as { UpdateReplacePolicy?: string; DeletionPolicy?: string }).UpdateReplacePolicy).toBe('Retain');
    expect((version as { DeletionPolicy?: string }).DeletionPolicy).toBe('Retain');
    expect(versionId).toBeTruthy();
    const host = res[hostId];
    const workerId = a.stack.getLogicalId(a.construct.workerFunction!.node.defaultChild as never);
    expect(host.Properties.Environment.Variables.EVE_WORLD_AWS_DEPLOYMENT_AFFINITY).toBe('on');
    expect(res[workerId].Properties.Environment.Variables.EVE_WORLD_AWS_HOST_FUNCTION).toEqual({ Ref: hostId });

    const invoke = policyStatements(res, a.stack, a.construct.workerFunction!.role!).filter((s) =>
      acts(s).some((x) => x.startsWith('lambda:')),
    );
    expect(invoke).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [hostId, 'Arn'] }, ':*']] },
      },
    ]);
    // The host and the sweeper never invoke anything.
    for (const role of [a.construct.hostFunction.role!, a.construct.sweeperFunction!.role!])
      expect(
        policyStatements(res, a.stack, role)
          .flatMap(acts)
          .filter((x) => x.startsWith('lambda:')),
      ).toEqual([]);
  });
});

describe("EveWorldAws: consumer 'host' (the host consumes its own queue)", () => {
  const policyStatements = (res: Resources, st: Stack, role: { node: { defaultChild?: unknown } }) => {
    const roleId = st.getLogicalId(role.node.defaultChild as never);
    return Object.values(res)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(roleId))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>);
  };
  const acts = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
  let h: { stack: Stack; construct: EveWorldAws; res: Resources };
  beforeAll(() => {
    const made = makeStack({
      consumer: 'host',
      deploymentAffinity: true,
      batchSize: 3,
      maxConcurrency: 7,
      hostTimeout: Duration.minutes(10),
    });
    h = { ...made, res: Template.fromStack(made.stack).toJSON().Resources as Resources };
  });
  const id = (c: { node: { defaultChild?: unknown } }) => h.stack.getLogicalId(c.node.defaultChild as never);

  it('no worker: the event source maps the queue to the host’s `live` alias with partial batch responses', () => {
    expect(h.construct.workerFunction).toBeUndefined();
    const fns = Object.values(h.res).filter((r) => r.Type === 'AWS::Lambda::Function');
    // The host (a container image) and the sweeper: nothing else.
    expect(fns.map((f) => f.Properties.PackageType ?? f.Properties.Handler).sort()).toEqual([
      'Image',
      'index.sweepHandler',
    ]);
    const mappings = Object.values(h.res).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping');
    expect(mappings).toHaveLength(1);
    // The alias: `<function name>:live`, built from the alias's ARN.
    const target = JSON.stringify(mappings[0].Properties.FunctionName);
    expect(target).toContain(`{"Ref":"${id(h.construct.hostLiveAlias)}"}`);
    expect(target).toContain('":live"');
    expect(mappings[0].Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [id(h.construct.queue), 'Arn'] },
      BatchSize: 3,
      ScalingConfig: { MaximumConcurrency: 7 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('the adapter passes the batch to the flow route; the Function URL stays on the alias, streaming', () => {
    const host = h.res[id(h.construct.hostFunction)];
    const env = host.Properties.Environment.Variables;
    expect(env.AWS_LWA_PASS_THROUGH_PATH).toBe('/.well-known/workflow/v1/flow');
    expect(env.AWS_LWA_INVOKE_MODE).toBe('response_stream');
    expect(env.EVE_WORLD_AWS_FLOW_URL).toBeUndefined();
    const [url] = Object.values(h.res).filter((r) => r.Type === 'AWS::Lambda::Url');
    expect(url.Properties).toMatchObject({ Qualifier: 'live', AuthType: 'NONE', InvokeMode: 'RESPONSE_STREAM' });
  });

  it('visibility is the factor times the host timeout (the consumer’s), never below it', () => {
    const queue = h.res[id(h.construct.queue)];
    expect(queue.Properties.VisibilityTimeout).toBe(6 * 600);
    expect(h.res[id(h.construct.hostFunction)].Properties.Timeout).toBe(600);
  });

  it('the host consumes the queue and, with affinity, may invoke exactly its own published versions', () => {
    const hostId = id(h.construct.hostFunction);
    const statements = policyStatements(h.res, h.stack, h.construct.hostFunction.role!);
    const sqsActions = new Set(statements.flatMap(acts).filter((a) => a.startsWith('sqs:')));
    for (const a of [
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      'sqs:ChangeMessageVisibility',
      'sqs:GetQueueAttributes',
    ])
      expect(sqsActions.has(a), a).toBe(true);
    const invoke = statements.filter((s) => acts(s).some((x) => x.startsWith('lambda:')));
    expect(invoke).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [hostId, 'Arn'] }, ':*']] },
      },
    ]);
    expect(h.res[hostId].Properties.Environment.Variables.EVE_WORLD_AWS_DEPLOYMENT_AFFINITY).toBe('on');
  });

  it('alarms and outputs name the host as the consumer; no worker output', () => {
    const outputs = Template.fromStack(h.stack).toJSON().Outputs as Record<string, { Description: string }>;
    const names = Object.keys(outputs).map((k) => k.replace(/^Eve/, '').replace(/[0-9A-F]{8}$/, ''));
    expect(names.some((n) => n.startsWith('Worker'))).toBe(false);
    const alarms = Object.values(h.res).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const hostErrors = alarms.find((a) => String(a.Properties.AlarmDescription).startsWith('The host function failed'));
    expect(hostErrors?.Properties.Dimensions).toEqual([
      { Name: 'FunctionName', Value: { Ref: id(h.construct.hostFunction) } },
    ]);
  });

  it('AwsSolutionsChecks passes (the invoke grant on the host versions is acknowledged on the host)', () => {
    const { app } = makeStack({ consumer: 'host', deploymentAffinity: true });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  });

  it('the worker’s props are refused with what to change, and so is an unknown consumer', () => {
    expect(() => makeStack({ consumer: 'host', workerTimeout: Duration.minutes(1) })).toThrow(
      /consumer 'host' has no worker function, so workerTimeout cannot apply: remove it, or use consumer 'worker'/,
    );
    expect(() => makeStack({ consumer: 'host', workerMemorySize: 512 })).toThrow(/workerMemorySize/);
    expect(() =>
      makeStack({ consumer: 'host', tracing: { adotLayerArn: 'arn:aws:lambda:eu-west-1:1:layer:x:1' } }),
    ).toThrow(/tracing.adotLayerArn \(put ADOT in the host Dockerfile instead\)/);
    expect(() => makeStack({ consumer: 'lambda' as never })).toThrow(
      /consumer must be 'worker' or 'host', got "lambda"/,
    );
  });
});

describe('EveWorldAws: kmsKey', () => {
  const KEY_ARN = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  type Doc = {
    Statement: Array<{
      Effect: string;
      Action: string | string[];
      Resource: unknown;
      Condition?: unknown;
      Principal?: unknown;
    }>;
  };
  const acts = (st: { Action: string | string[] }) => (Array.isArray(st.Action) ? st.Action : [st.Action]);
  const policiesOf = (res: Resources, s: Stack, role: { node: { defaultChild?: unknown } }) =>
    Object.values(res)
      .filter(
        (r) =>
          r.Type === 'AWS::IAM::Policy' &&
          r.Properties.Roles.some((x: any) => x.Ref === s.getLogicalId(role.node.defaultChild as never)),
      )
      .flatMap((r) => (r.Properties.PolicyDocument as Doc).Statement);

  let k: { stack: Stack; construct: EveWorldAws; res: Resources; keyRef: unknown };
  beforeAll(() => {
    const made = makeStack({ kmsKey: 'create' });
    const keyRef = {
      'Fn::GetAtt': [made.stack.getLogicalId(made.construct.kmsKey!.node.defaultChild as never), 'Arn'],
    };
    k = { ...made, res: Template.fromStack(made.stack).toJSON().Resources as Resources, keyRef };
  });

  it("'create' makes one symmetric key with rotation on, kept per removalPolicy (RETAIN by default)", () => {
    const keys = Object.values(k.res).filter((r) => r.Type === 'AWS::KMS::Key');
    expect(keys).toHaveLength(1);
    expect(keys[0].Properties).toMatchObject({ EnableKeyRotation: true });
    expect((keys[0] as unknown as { DeletionPolicy: string }).DeletionPolicy).toBe('Retain');
    // The key policy is the AWS default: it only delegates to IAM in this account (the grants below decide).
    expect((keys[0].Properties.KeyPolicy as Doc).Statement).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { AWS: expect.objectContaining({ 'Fn::Join': expect.anything() }) },
      }),
    ]);
  });

  it('table, both queues and the bucket are encrypted under the key', () => {
    const t = Template.fromStack(k.stack);
    t.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: k.keyRef },
    });
    const queues = Object.values(k.res).filter((r) => r.Type === 'AWS::SQS::Queue');
    expect(queues).toHaveLength(2);
    for (const q of queues) {
      expect(q.Properties).toMatchObject({ KmsMasterKeyId: k.keyRef, KmsDataKeyReusePeriodSeconds: 300 });
      expect(q.Properties.SqsManagedSseEnabled).toBeUndefined();
    }
    t.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          {
            BucketKeyEnabled: true,
            ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: k.keyRef },
          },
        ],
      },
    });
  });

  it('both functions get EVE_WORLD_AWS_KMS_KEY_ID and exactly the runtime rows, KMS ones on the key only', () => {
    // Host and worker; the sweeper (third) never reads an object's content and gets no key.
    const fns = Object.values(k.res).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler !== 'index.sweepHandler',
    );
    expect(fns).toHaveLength(2);
    for (const fn of fns) expect(fn.Properties.Environment.Variables.EVE_WORLD_AWS_KMS_KEY_ID).toEqual(k.keyRef);
    const expected = new Set([...actionsByResource('runtime').values()].flat().filter((a) => !a.startsWith('lambda:')));
    expect(expected).toContain('kms:GenerateDataKey');
    for (const fn of [k.construct.hostFunction, k.construct.workerFunction!]) {
      const statements = policiesOf(k.res, k.stack, fn.role!);
      // The worker also invokes the host's versions (deployment affinity, the default).
      const granted = new Set(
        statements.flatMap(acts).filter((a) => !a.startsWith('logs:') && !a.startsWith('lambda:')),
      );
      expect(granted).toEqual(expected);
      for (const st of statements.filter((x) => acts(x).some((a) => a.startsWith('kms:')))) {
        expect(st.Resource).toEqual(k.keyRef);
        expect(acts(st).every((a) => ['kms:Decrypt', 'kms:GenerateDataKey'].includes(a))).toBe(true);
      }
    }
  });

  it('the Scheduler role may use the key to send to the SSE-KMS queue, and nothing more', () => {
    expect(policiesOf(k.res, k.stack, k.construct.schedulerRole)).toEqual([
      {
        Action: 'sqs:SendMessage',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [k.stack.getLogicalId(k.construct.queue.node.defaultChild as never), 'Arn'] },
      },
      { Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Effect: 'Allow', Resource: k.keyRef },
    ]);
  });

  it('outputs the key ARN', () => {
    const outputs = Template.fromStack(k.stack).toJSON().Outputs as Record<string, { Value: unknown }>;
    const key = Object.entries(outputs).find(([id]) => id.startsWith('EveKmsKeyArn'));
    expect(key?.[1].Value).toEqual(k.keyRef);
  });

  it('an existing key (by ARN) is used as is: no new key, grants and settings name its ARN', () => {
    const app = new App({ outdir: tempDir('cdk-out-') });
    const s = new Stack(app, 'Imported', { env: { account: '123456789012', region: 'eu-west-1' } });
    const c = new EveWorldAws(s, 'Eve', { app: fakeEveApp(), kmsKey: kms.Key.fromKeyArn(s, 'RunKey', KEY_ARN) });
    const t = Template.fromStack(s);
    t.resourceCountIs('AWS::KMS::Key', 0);
    t.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: KEY_ARN },
    });
    t.hasResourceProperties('AWS::SQS::Queue', { KmsMasterKeyId: KEY_ARN, RedrivePolicy: Match.anyValue() });
    t.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ EVE_WORLD_AWS_KMS_KEY_ID: KEY_ARN }) },
    });
    const res = t.toJSON().Resources as Resources;
    const hostKms = policiesOf(res, s, c.hostFunction.role!).filter((x) => acts(x).some((a) => a.startsWith('kms:')));
    expect(hostKms).toEqual([{ Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Effect: 'Allow', Resource: KEY_ARN }]);
  });

  it('AwsSolutionsChecks passes with a created key, and no Allow statement has a wildcard action or a data-plane Resource "*"', () => {
    const { app, stack: s } = makeStack({ kmsKey: 'create' });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
    const res = Template.fromStack(s).toJSON().Resources as Resources;
    let checked = 0;
    for (const r of Object.values(res)) {
      const doc = (r.Properties?.PolicyDocument ?? r.Properties?.AssumeRolePolicyDocument) as Doc | undefined;
      for (const st of doc?.Statement ?? []) {
        if (st.Effect !== 'Allow') continue;
        checked++;
        for (const a of acts(st)) expect(a === '*' || a.endsWith(':*'), `Action ${a}`).toBe(false);
        const list = Array.isArray(st.Resource) ? st.Resource : [st.Resource];
        expect(list, JSON.stringify(st)).not.toContain('*');
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe('EveWorldAws: alarms and outputs', () => {
  it('alarms on DLQ depth, oldest message age, worker errors and sweeper errors, with an optional SNS topic', () => {
    // 4 on built-in metrics, 3 on the World's own (test/unit/cdk/observability.test.ts).
    template.resourceCountIs('AWS::CloudWatch::Alarm', 7);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Threshold: 1,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateAgeOfOldestMessage',
      Namespace: 'AWS/SQS',
      Threshold: 1800,
    });
    for (const fn of [construct.workerFunction!, construct.sweeperFunction!])
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'Errors',
        Namespace: 'AWS/Lambda',
        Threshold: 1,
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(fn) } }],
      });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmActions: Match.absent() });

    const app = new App({ outdir: tempDir('cdk-out-') });
    const s = new Stack(app, 'WithTopic');
    const topic = new sns.Topic(s, 'Ops');
    const c = new EveWorldAws(s, 'Eve', { app: fakeEveApp(), alarmTopic: topic });
    const t = Template.fromStack(s);
    const alarms = t.findResources('AWS::CloudWatch::Alarm');
    expect(c.alarms).toHaveLength(7);
    expect(Object.values(alarms).map((a: any) => a.Properties.AlarmActions)).toEqual(
      c.alarms.map(() => [{ Ref: s.getLogicalId(topic.node.defaultChild as never) }]),
    );
  });

  it('outputs the URL and every resource name', () => {
    const outputs = Object.keys(template.toJSON().Outputs as object).map((k) =>
      k.replace(/^Eve/, '').replace(/[0-9A-F]{8}$/, ''),
    );
    expect(outputs.sort()).toEqual(
      [
        'Url',
        'FlowUrl',
        'TableName',
        'QueueUrl',
        'QueueName',
        'DeadLetterQueueUrl',
        'DeadLetterQueueName',
        'BucketName',
        'ScheduleGroupName',
        'SchedulerRoleArn',
        'SigningSecretArn',
        'HostFunctionName',
        'WorkerFunctionName',
        'HostLogGroupName',
        'WorkerLogGroupName',
        'SweeperFunctionName',
        'SweeperLogGroupName',
      ].sort(),
    );
  });
});

describe('EveWorldAws: the scheduled orphan sweep', () => {
  const sweepers = (res: Resources) =>
    Object.entries(res).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.sweepHandler',
    );
  const rulesOf = (res: Resources) => Object.entries(res).filter(([, r]) => r.Type === 'AWS::Events::Rule');

  it('a Node 24 function from the worker asset with handler index.sweepHandler, 15 min, no reserved concurrency, no async retry', () => {
    const [[id, fn], ...more] = sweepers(resources);
    expect(more).toEqual([]);
    expect(id).toBe(logicalId(construct.sweeperFunction!));
    expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Timeout: 900 });
    // No reservation: a new account at the default concurrency quota (10) would refuse it.
    expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    // The same asset as the worker (one bundle, both handlers).
    const worker = resources[logicalId(construct.workerFunction!)];
    expect(fn.Properties.Code).toEqual(worker.Properties.Code);
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: id },
      MaximumRetryAttempts: 0,
    });
    // Names only: no signing secret, no flow URL, no Scheduler.
    expect(fn.Properties.Environment.Variables).toEqual({
      EVE_WORLD_AWS_TABLE: { Ref: logicalId(construct.table) },
      EVE_WORLD_AWS_QUEUE: { Ref: logicalId(construct.queue) },
      EVE_WORLD_AWS_DLQ: { Ref: logicalId(construct.deadLetterQueue) },
      EVE_WORLD_AWS_BUCKET: { Ref: logicalId(construct.bucket) },
    });
  });

  it('the bundle the asset holds exports sweepHandler', async () => {
    const mod = (await import(path.join(repoRoot, 'dist/lambda-worker/index.mjs'))) as Record<string, unknown>;
    expect(typeof mod.sweepHandler).toBe('function');
    expect(typeof mod.handler).toBe('function');
  });

  it('an EventBridge rule invokes it once a day by default, and may invoke it; a second, the backstop tick, once a minute', () => {
    const rules = rulesOf(resources);
    expect(rules).toHaveLength(2);
    const rule = resources[logicalId(construct.sweepRule!)];
    expect(rule.Properties.ScheduleExpression).toBe('rate(1 day)');
    expect(rule.Properties.State).toBe('ENABLED');
    expect(rule.Properties.Targets).toEqual([
      expect.objectContaining({ Arn: { 'Fn::GetAtt': [logicalId(construct.sweeperFunction!), 'Arn'] } }),
    ]);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalId(construct.sweeperFunction!), 'Arn'] },
      SourceArn: { 'Fn::GetAtt': [logicalId(construct.sweepRule!), 'Arn'] },
    });
    const [[backstopId, backstop]] = rules.filter(([id]) => id !== logicalId(construct.sweepRule!));
    expect(backstop.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(backstop.Properties.Targets).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [logicalId(construct.sweeperFunction!), 'Arn'] },
        Input: '{"backstop":true}',
      }),
    ]);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [logicalId(construct.sweeperFunction!), 'Arn'] },
      SourceArn: { 'Fn::GetAtt': [backstopId, 'Arn'] },
    });
  });

  it('sweepSchedule sets the schedule; false removes the function, the rule, its alarm and outputs', () => {
    const custom = Template.fromStack(
      makeStack({ sweepSchedule: events.Schedule.cron({ minute: '30', hour: '3' }) }).stack,
    ).toJSON().Resources as Resources;
    expect(rulesOf(custom).map(([, r]) => r.Properties.ScheduleExpression)).toEqual([
      'cron(30 3 * * ? *)',
      'rate(1 minute)',
    ]);

    const { stack: s, construct: c } = makeStack({ sweepSchedule: false });
    const off = Template.fromStack(s).toJSON();
    expect(sweepers(off.Resources)).toEqual([]);
    expect(rulesOf(off.Resources)).toEqual([]);
    expect(c.sweeperFunction).toBeUndefined();
    expect(c.sweepRule).toBeUndefined();
    expect(c.alarms).toHaveLength(6);
    expect(Object.keys(off.Outputs).filter((k) => k.includes('Sweeper'))).toEqual([]);
    expect(JSON.stringify(off)).not.toContain('sweepHandler');
  });

  it('its role holds exactly the sweeper rows of the command table (the commands the sweep sends), plus logs, no wildcard action', () => {
    const fn = construct.sweeperFunction!;
    const roleId = stack.getLogicalId(fn.role!.node.defaultChild as never);
    const statements = ofType('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: any) => r.Ref === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: any }>);
    const acts = (st: { Action: string | string[] }) => (Array.isArray(st.Action) ? st.Action : [st.Action]);
    const byResource = new Map<string, Set<string>>();
    for (const st of statements) {
      for (const r of Array.isArray(st.Resource) ? st.Resource : [st.Resource]) {
        const name = JSON.stringify(r);
        const set = byResource.get(name) ?? new Set<string>();
        for (const a of acts(st)) set.add(a);
        byResource.set(name, set);
      }
    }
    const tableArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(construct.table), 'Arn'] });
    const bucketArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(construct.bucket), 'Arn'] });
    const queueArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(construct.queue), 'Arn'] });
    const granted = Object.fromEntries(
      [...byResource]
        .filter(([, a]) => ![...a].some((x) => x.startsWith('logs:')))
        .map(([r, a]) => [
          r === tableArn ? 'table' : r === bucketArn ? 'bucket' : r === queueArn ? 'queue' : r,
          [...a].sort(),
        ]),
    );
    expect(granted).toEqual({
      table: [
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
      ],
      // The backstop's wake (src/backstop/wake.ts) and the queue's backlog (src/backstop/backlog.ts).
      queue: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
      [JSON.stringify({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(construct.table), 'Arn'] }, '/index/*']] })]: [
        'dynamodb:Query',
      ],
      bucket: ['s3:ListBucket'],
      [JSON.stringify({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(construct.bucket), 'Arn'] }, '/*']] })]: [
        's3:DeleteObject',
      ],
    });
    // Generated from the table: the same set as its `sweeper` rows (the KMS row only with a key).
    expect(new Set(Object.values(granted).flat())).toEqual(
      new Set([...actionsByResource('sweeper').values()].flat().filter((a) => !a.startsWith('kms:'))),
    );
    for (const a of statements.flatMap(acts)) expect(a === '*' || a.endsWith(':*'), a).toBe(false);
    expect(JSON.stringify(statements)).not.toMatch(/"Resource":"\*"|kms:|scheduler:|iam:|secretsmanager:/);
  });

  it('with a KMS key the sweeper gets only GenerateDataKey (the backstop wake, SSE-KMS) and no key id', () => {
    const { stack: s, construct: c } = makeStack({ kmsKey: 'create' });
    const res = Template.fromStack(s).toJSON().Resources as Resources;
    const roleId = s.getLogicalId(c.sweeperFunction!.role!.node.defaultChild as never);
    const docs = Object.values(res).filter(
      (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: any) => x.Ref === roleId),
    );
    expect(docs.length).toBeGreaterThan(0);
    expect(JSON.stringify(docs).match(/kms:[A-Za-z]+/g)).toEqual(['kms:GenerateDataKey']);
    const [[, fn]] = sweepers(res);
    expect(fn.Properties.Environment.Variables.EVE_WORLD_AWS_KMS_KEY_ID).toBeUndefined();
  });
});

describe('EveWorldAws: cdk-nag', () => {
  it('AwsSolutionsChecks passes; every acknowledgement carries a reason', () => {
    const { app, stack: s } = makeStack();
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
    const acks = s.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, string | { reason?: string }>));
    expect(acks.length).toBeGreaterThanOrEqual(5);
    for (const [id, v] of acks) {
      const reason = typeof v === 'string' ? v : v.reason;
      expect(reason, id).toMatch(/\w{3,}.*\w{3,}/);
    }
  });

  it('AwsSolutionsChecks passes without deploymentAffinity too', () => {
    const { app } = makeStack({ deploymentAffinity: false });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  });

  it('the check is live: an unhardened bucket in the same app fails synthesis', () => {
    const { app, stack: s } = makeStack();
    new s3.Bucket(s, 'Loose');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow(/EveStack\/Loose\/Resource[\s\S]*AwsSolutions-S1/);
  });

  it('with an access-logs bucket, no S1 acknowledgement is needed', () => {
    const app = new App({ outdir: tempDir('cdk-out-') });
    const s = new Stack(app, 'Logs');
    const logs = new s3.Bucket(s, 'AccessLogs', {
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    });
    Validations.of(logs).acknowledge({ id: 'AwsSolutions-S1', reason: 'This is the access-log bucket itself.' });
    const c = new EveWorldAws(s, 'Eve', { app: fakeEveApp(), accessLogsBucket: logs });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
    expect(JSON.stringify(c.bucket.node.metadata)).not.toContain('AwsSolutions-S1');
    Template.fromStack(s).hasResourceProperties('AWS::S3::Bucket', {
      LoggingConfiguration: Match.objectLike({ LogFilePrefix: 'eve-world-aws-payloads/' }),
    });
  });
});

describe('examples/lambda', () => {
  it('says what cdk destroy does with its settings: table and bucket are retained', () => {
    // The example's props: deletion protection off, the default removal policy.
    const { stack: example } = makeStack({ deletionProtection: false });
    const t = Template.fromStack(example);
    t.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    t.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    const source = readFileSync(path.join(repoRoot, 'examples/lambda/stack.mjs'), 'utf8');
    expect(source).toMatch(/deletionProtection: false/);
    expect(source).not.toMatch(/removalPolicy:/);
    expect(source).toMatch(/`cdk destroy` still RETAINS the table\s+\/\/ and the payload bucket/);
    const readme = readFileSync(path.join(repoRoot, 'examples/lambda/README.md'), 'utf8');
    expect(readme).toMatch(/removes the stack but \*\*not the data\*\*/);
  });

  it('ships the generated Dockerfile for its agent', () => {
    const file = path.join(repoRoot, 'examples/lambda/agent/Dockerfile');
    expect(existsSync(file)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(hostDockerfile());
  });
});
