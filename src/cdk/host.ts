/**
 * The host: the eve app (`eve build` output) in a container with the Lambda Web Adapter
 * (./dockerfile.ts), behind a Function URL in RESPONSE_STREAM mode on its `live` alias.
 *
 * Every deploy publishes a version (`currentVersion`) and points `live` at it. With
 * `deploymentAffinity` (the default) the versions are retained when replaced, so a run pinned to
 * one (`lambda:<function>:<version>`) is still delivered there by the worker's Invoke
 * (docs/design.md, "Deployment affinity on Lambda"); without it CloudFormation deletes the replaced
 * version.
 *
 * The URL is public: eve's routes are the product. The flow route on it refuses unsigned requests:
 * the World's queue handler verifies the HMAC signature with the secret
 * EVE_WORLD_AWS_SIGNING_SECRET_ARN names, and answers 401 to anything unsigned, forged, stale or
 * replayed (docs/deploy.md, docs/security.md).
 *
 * With `consumer: 'host'` the host is also the queue's consumer ({@link queueSource} on the `live`
 * alias, the version whose id a new run is pinned to; the event source's grants go to the host's
 * role): the SQS event source invokes it, and the Web Adapter passes the batch to the flow route
 * (AWS_LWA_PASS_THROUGH_PATH), which takes it only when the adapter's own `x-amzn-request-context`
 * is `null`, never for a Function URL request (src/consumer/delivery/pass-through.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Annotations, RemovalPolicy } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { FLOW_PATH as FLOW_ROUTE } from '../config/limits.js';
import { HOST_PORT, READINESS_PATH } from './dockerfile.js';
import { addFunctionBase } from './function-role.js';
import type { EveWorldAwsProps, Settings } from './props.js';

/** The flow route path eve serves (and the worker POSTs to), relative to the host URL. */
export const FLOW_PATH = FLOW_ROUTE.slice(1);

export interface Host {
  readonly hostFunction: lambda.DockerImageFunction;
  readonly hostUrl: lambda.FunctionUrl;
  /** The `live` alias: the version this deploy published, which the Function URL serves. */
  readonly liveAlias: lambda.Alias;
  readonly logGroup: logs.LogGroup;
}

/** The host function, its log group, role and URL, in `scope` (ids `Host`, `HostLogs`, `HostRole`). */
export function addHost(
  scope: Construct,
  props: EveWorldAwsProps,
  settings: Settings,
  worldEnv: Record<string, string>,
): Host {
  const code = props.hostCode ?? imageFromApp(scope, props);
  const base = addFunctionBase(scope, 'Host', props.logRetention);
  const hostFunction = new lambda.DockerImageFunction(scope, 'Host', {
    description: 'eve app (Nitro server behind the Lambda Web Adapter)',
    code,
    architecture: lambda.Architecture.X86_64,
    memorySize: props.hostMemorySize ?? 1024,
    timeout: settings.hostTimeout,
    role: base.role,
    logGroup: base.logGroup,
    tracing: props.tracing?.xray ? lambda.Tracing.ACTIVE : undefined,
    currentVersionOptions: {
      removalPolicy: settings.deploymentAffinity ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    },
    environment: {
      ...props.hostEnvironment,
      ...worldEnv,
      // Asks a new table's first write to record affinity; the table decides
      // (src/deployment/membership.ts).
      ...(settings.deploymentAffinity ? { EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' } : {}),
      AWS_LWA_INVOKE_MODE: 'response_stream',
      // The consumer's batches go to the flow route (the adapter's default is /events).
      ...(settings.consumer === 'host' ? { AWS_LWA_PASS_THROUGH_PATH: FLOW_ROUTE } : {}),
      AWS_LWA_READINESS_CHECK_PATH: READINESS_PATH,
      AWS_LWA_PORT: String(HOST_PORT),
      PORT: String(HOST_PORT),
    },
  });
  const liveAlias = new lambda.Alias(scope, 'HostLive', {
    aliasName: 'live',
    version: hostFunction.currentVersion,
    description: 'the version the last deploy published; the Function URL serves it',
  });
  const hostUrl = liveAlias.addFunctionUrl({
    authType: lambda.FunctionUrlAuthType.NONE,
    invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
  });
  return { hostFunction, hostUrl, liveAlias, logGroup: base.logGroup };
}

/** The queue as the event source of its consumer (the host or the worker), reporting partial batch failures. */
export function queueSource(props: EveWorldAwsProps, settings: Settings, queue: sqs.IQueue): SqsEventSource {
  return new SqsEventSource(queue, {
    batchSize: props.batchSize ?? 10,
    maxBatchingWindow: props.maxBatchingWindow,
    maxConcurrency: settings.maxConcurrency,
    reportBatchItemFailures: true,
  });
}

/** The image built from the app directory's Dockerfile; a missing Dockerfile is a synth error that says how to make it. */
function imageFromApp(scope: Construct, props: EveWorldAwsProps): lambda.DockerImageCode {
  const appDir = path.resolve(props.app);
  const dockerfile = props.dockerfile ?? 'Dockerfile';
  if (!existsSync(path.join(appDir, dockerfile))) {
    throw new Error(
      `EveWorldAws: ${path.join(appDir, dockerfile)} is missing. Generate it once with ` +
        `\`node --input-type=module -e "import {hostDockerfile} from '@portfolio/eve-world-aws/cdk'; process.stdout.write(hostDockerfile())" > ${path.join(props.app, dockerfile)}\``,
    );
  }
  if (!existsSync(path.join(appDir, '.output/server/index.mjs'))) {
    Annotations.of(scope).addWarningV2(
      'eve-world-aws:no-eve-build',
      `${appDir}/.output is missing: run \`npx eve build\` in the app before \`cdk deploy\``,
    );
  }
  return lambda.DockerImageCode.fromImageAsset(appDir, {
    file: dockerfile,
    platform: Platform.LINUX_AMD64,
    exclude: ['node_modules', 'cdk.out', '.git', '.eve', '.workflow-data'],
  });
}
