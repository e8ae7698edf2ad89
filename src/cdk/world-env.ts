/**
 * What the host and the worker both run the World with: the signing secret and the environment that
 * names the stack's resources (the variables of docs/configuration.md).
 *
 * The secret is generated in Secrets Manager; the functions get its ARN and
 * `secretsmanager:GetSecretValue` on it (./grants.ts), never the value: each reads it at its first
 * delivery (src/consumer/shared/secret-source.ts), so no function configuration holds it
 * (docs/security.md). The worker signs with it, the host's flow route verifies.
 */
import { Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { Data } from './data.js';
import type { Settings } from './props.js';
import type { Queues } from './queue.js';

/** The signing secret, in `scope` (id `SigningSecret`). */
export function addSigningSecret(scope: Construct): secretsmanager.Secret {
  const secret = new secretsmanager.Secret(scope, 'SigningSecret', {
    description: 'HMAC secret: the worker signs deliveries, the host verifies them (EVE_WORLD_AWS_SIGNING_SECRET_ARN)',
    generateSecretString: { passwordLength: 64, excludePunctuation: true },
  });
  Validations.of(secret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason:
      'No rotation Lambda: rotate by putting a new value (aws secretsmanager put-secret-value); both functions pick it up ' +
      'without a redeploy (the new AWSCURRENT signs, AWSCURRENT and AWSPREVIOUS verify; docs/security.md).',
  });
  return secret;
}

/** The World's environment for the host and the worker. */
export function worldEnvironment(
  data: Data,
  queues: Queues,
  signingSecret: secretsmanager.ISecret,
  settings: Settings,
): Record<string, string> {
  return {
    EVE_WORLD_AWS_TABLE: data.table.tableName,
    EVE_WORLD_AWS_QUEUE: queues.queue.queueUrl,
    EVE_WORLD_AWS_DLQ: queues.deadLetterQueue.queueUrl,
    EVE_WORLD_AWS_BUCKET: data.bucket.bucketName,
    EVE_WORLD_AWS_SCHEDULER_ROLE_ARN: queues.schedulerRole.roleArn,
    EVE_WORLD_AWS_SCHEDULER_GROUP: queues.scheduleGroup.ref,
    EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: String(settings.visibilitySeconds),
    EVE_WORLD_AWS_MAX_RECEIVE_COUNT: String(settings.maxReceiveCount),
    EVE_WORLD_AWS_SIGNING_SECRET_ARN: signingSecret.secretArn,
    ...(data.kmsKey ? { EVE_WORLD_AWS_KMS_KEY_ID: data.kmsKey.keyArn } : {}),
  };
}
