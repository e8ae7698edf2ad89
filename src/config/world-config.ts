/**
 * The parsed configuration every World part is built from ({@link WorldConfig}): the variables
 * (variables.ts) and the tuning options (tuning.ts), validated once by load.ts.
 */
import type { LogLevel } from '../telemetry/log.js';
import type { WorldTuning } from './tuning.js';

export interface Endpoints {
  readonly dynamodb?: string;
  readonly sqs?: string;
  readonly s3?: string;
  readonly scheduler?: string;
  readonly kms?: string;
  readonly secretsManager?: string;
  readonly lambda?: string;
}

export interface WorldConfig extends WorldTuning {
  /**
   * `EVE_WORLD_AWS_*` variables set in the environment read that this World does not read (former
   * variables, typos), sorted; {@link variableWarnings} names each one.
   */
  readonly ignoredVariables: readonly string[];
  /** Region for every client; undefined lets the SDK resolve it (profile, IMDS). */
  readonly region?: string;
  readonly endpoints: Endpoints;
  /**
   * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY of the environment read, when both are set: given to
   * clients of loopback endpoints (emulators) only. Real AWS always uses the SDK's provider chain.
   */
  readonly emulatorCredentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Prefix used to derive default resource names. */
  readonly prefix: string;
  readonly tableName: string;
  /** Queue name or full URL; resolved to a URL lazily (GetQueueUrl) when it is a name. */
  readonly queue: string;
  readonly deadLetterQueue: string;
  readonly bucket: string;
  /**
   * Every secret a delivery may be signed with (rotation: sign with the first, verify with any).
   * Empty: only in-process deliveries are accepted (src/consumer/shared/signing.ts).
   */
  readonly signingSecrets: readonly string[];
  /**
   * Secrets Manager secret holding the signing secret(s) (EVE_WORLD_AWS_SIGNING_SECRET_ARN), read
   * at first use instead of {@link signingSecrets} (src/consumer/shared/secret-source.ts).
   */
  readonly signingSecretArn?: string;
  /**
   * EVE_WORLD_AWS_ALLOW_UNSIGNED=1: the explicit opt-out for private networks. Deliveries may go
   * unsigned to a non-loopback flow route, and the flow route accepts unsigned requests.
   */
  readonly allowUnsigned: boolean;
  /**
   * EVE_WORLD_AWS_TRUST_FORWARDED_HOST=1: the flow route also takes the first `x-forwarded-host`
   * as the host a delivery was signed for (behind a proxy that sets it). Off: only `Host` and the
   * request URL's host (src/consumer/shared/signing.ts).
   */
  readonly trustForwardedHost: boolean;
  /** Flow route the consumer POSTs to when no handler is registered in process (explicitly set). */
  readonly flowUrl?: string;
  /** EVE_WORLD_AWS_HOST_FUNCTION: the host function whose versions the worker invokes by id. */
  readonly hostFunction?: string;
  /** EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1: an `http://` flow URL to a non-loopback host is allowed. */
  readonly allowInsecureFlowUrl: boolean;
  /** PORT: the local `eve start` server, the flow route when no flow URL is set. */
  readonly port: number;
  /** Running inside AWS Lambda (AWS_LAMBDA_FUNCTION_NAME set): the event source mapping consumes. */
  readonly inLambda: boolean;
  /** Concurrent deliveries handled by the in-process consumer (and per Lambda batch). */
  readonly consumerConcurrency: number;
  /** Days a terminal run's items and objects are kept (DynamoDB TTL); undefined = kept forever. */
  readonly retentionDays?: number;
  /**
   * The queue's SQS visibility timeout (s), set by `init`: what the Lambda event source mapping's
   * copies are hidden for (keep it >= the function timeout). Also caps the failure backoff.
   */
  readonly visibilityTimeoutSeconds: number;
  /** Receives before SQS moves a message to the DLQ. */
  readonly maxReceiveCount: number;
  /** EventBridge Scheduler role for long waits; undefined -> 900 s SQS hops. */
  readonly schedulerRoleArn?: string;
  /**
   * Schedule group of the long-wait schedules: by default this World's own, named like the table
   * from {@link prefix}; `init` creates it when a scheduler role is set.
   */
  readonly schedulerGroup: string;
  /**
   * Customer-managed KMS key (id, ARN, alias name or alias ARN). Set: run payloads are
   * envelope-encrypted per run (src/encryption/) and `init` puts table, queue and bucket under it.
   * Unset: no encryption by the World (the AWS-owned at-rest encryption still applies).
   */
  readonly kmsKeyId?: string;
  /** Write EMF metrics (src/telemetry/metrics.ts): EVE_WORLD_AWS_METRICS; unset, on in Lambda only. */
  readonly metrics: boolean;
  /** EVE_WORLD_AWS_LOG_LEVEL (src/telemetry/log.ts). Lines are JSON in Lambda, text elsewhere. */
  readonly logLevel: LogLevel;
  /**
   * EVE_WORLD_AWS_DEPLOYMENT_AFFINITY. Whether runs stay on their deployment is the table's
   * (src/deployment/membership.ts): `on` asks the first process on a new table to record it (what
   * the CDK construct sets); otherwise the variable is ignored, with a warning where it disagrees.
   */
  readonly deploymentAffinity: DeploymentAffinityMode;
  /** AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_VERSION, inside Lambda. */
  readonly lambdaFunction?: { readonly name: string; readonly version?: string };
  /** WORKFLOW_QUEUE_NAMESPACE: core's queue namespace of the app, where the backstop sends its wakes. */
  readonly queueNamespace?: string;
}

/** `on`: record affinity on a new table; `auto` (default) and `off`: the table decides alone. */
export type DeploymentAffinityMode = 'auto' | 'on' | 'off';
