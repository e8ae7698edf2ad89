/**
 * The parsed configuration every World part is built from ({@link WorldConfig}): the variables
 * (variables.ts) and the tuning options (tuning.ts), validated once by load.ts. A field read from a
 * variable means what its row there says; the notes below say only how the code uses it.
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
  /** Read at first use instead of {@link signingSecrets} (src/consumer/shared/secret-source.ts). */
  readonly signingSecretArn?: string;
  /** The explicit opt-out for private networks (safety.ts `assertDeliveriesSafe`, src/consumer/shared/signing.ts). */
  readonly allowUnsigned: boolean;
  /** Read by the flow route's signature check (src/consumer/shared/signing.ts). */
  readonly trustForwardedHost: boolean;
  /** Flow route the consumer POSTs to when no handler is registered in process (explicitly set). */
  readonly flowUrl?: string;
  readonly hostFunction?: string;
  readonly allowInsecureFlowUrl: boolean;
  readonly port: number;
  /** Running inside AWS Lambda (AWS_LAMBDA_FUNCTION_NAME set): the event source mapping consumes. */
  readonly inLambda: boolean;
  readonly consumerConcurrency: number;
  readonly retentionDays?: number;
  /** Also caps the failure backoff. */
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount: number;
  /** EventBridge Scheduler role for long waits; undefined -> 900 s SQS hops. */
  readonly schedulerRoleArn?: string;
  readonly schedulerGroup: string;
  /** Set: run payloads are envelope-encrypted per run (src/encryption/). */
  readonly kmsKeyId?: string;
  /** Write EMF metrics (src/telemetry/metrics.ts): EVE_WORLD_AWS_METRICS; unset, on in Lambda only. */
  readonly metrics: boolean;
  /** EVE_WORLD_AWS_LOG_LEVEL (src/telemetry/log.ts). Lines are JSON in Lambda, text elsewhere. */
  readonly logLevel: LogLevel;
  /** Whether runs stay on their deployment is the table's (src/deployment/membership.ts): see the row. */
  readonly deploymentAffinity: DeploymentAffinityMode;
  /** AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_VERSION, inside Lambda. */
  readonly lambdaFunction?: { readonly name: string; readonly version?: string };
  /** WORKFLOW_QUEUE_NAMESPACE: core's queue namespace of the app, where the backstop sends its wakes. */
  readonly queueNamespace?: string;
}

/** `on`: record affinity on a new table; `auto` (default) and `off`: the table decides alone. */
export type DeploymentAffinityMode = 'auto' | 'on' | 'off';
