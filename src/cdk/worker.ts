/**
 * The worker: the package's bundled `/lambda` handler (./worker-asset.ts) on Node 24, fed by an
 * SQS event source with ReportBatchItemFailures, delivering each message signed to the host's
 * flow route. With `tracing.adotLayerArn` it runs under the ADOT layer's exec wrapper.
 */
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { addFunctionBase } from './function-role.js';
import { FLOW_PATH, queueSource } from './host.js';
import type { EveWorldAwsProps, Settings } from './props.js';
import { WORKER_HANDLER } from './worker-asset.js';

export interface Worker {
  readonly workerFunction: lambda.Function;
  readonly logGroup: logs.LogGroup;
}

/** The worker function, its log group, role and event source, in `scope` (ids `Worker`, `WorkerLogs`, `WorkerRole`, `AdotLayer`). */
export function addWorker(
  scope: Construct,
  props: EveWorldAwsProps,
  settings: Settings,
  parts: {
    readonly code: lambda.Code;
    readonly worldEnv: Record<string, string>;
    readonly hostUrl: lambda.FunctionUrl;
    /** With deployment affinity: the host function whose versions the worker invokes. */
    readonly hostFunction?: lambda.IFunction;
    readonly queue: sqs.IQueue;
  },
): Worker {
  const base = addFunctionBase(scope, 'Worker', props.logRetention);
  const adot = props.tracing?.adotLayerArn;
  const workerFunction = new lambda.Function(scope, 'Worker', {
    description: 'eve-world-aws SQS worker: delivers queue messages to the flow route, signed',
    runtime: lambda.Runtime.NODEJS_24_X,
    architecture: lambda.Architecture.ARM_64,
    handler: WORKER_HANDLER,
    code: parts.code,
    memorySize: props.workerMemorySize ?? 256,
    timeout: settings.workerTimeout,
    role: base.role,
    logGroup: base.logGroup,
    tracing: props.tracing?.xray ? lambda.Tracing.ACTIVE : undefined,
    environment: {
      ...parts.worldEnv,
      EVE_WORLD_AWS_FLOW_URL: `${parts.hostUrl.url}${FLOW_PATH}`,
      ...(parts.hostFunction ? { EVE_WORLD_AWS_HOST_FUNCTION: parts.hostFunction.functionName } : {}),
      ...(adot ? { AWS_LAMBDA_EXEC_WRAPPER: props.tracing?.execWrapper ?? '/opt/otel-instrument' } : {}),
    },
  });
  if (adot) workerFunction.addLayers(lambda.LayerVersion.fromLayerVersionArn(scope, 'AdotLayer', adot));
  workerFunction.addEventSource(queueSource(props, settings, parts.queue));
  return { workerFunction, logGroup: base.logGroup };
}
