/**
 * Per-test-file AWS fixtures against the shared emulator stack: unique resource names (so files
 * running in parallel never share a table, queue or bucket), created the same way `init` does.
 */
import { randomBytes } from 'node:crypto';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { type AwsClients, createClients } from '../../src/aws/clients.js';
import { loadConfig, type WorldConfig, type WorldTuning } from '../../src/config/index.js';
import { reconcile } from '../../src/provision/index.js';

export function stackEnv(): Record<string, string> {
  return inject('stack').env;
}

/**
 * The stack's endpoint in `variable` (e.g. AWS_ENDPOINT_URL_SCHEDULER). Throws when the stack has
 * none, before any client is built: a test must never fall back to the real AWS endpoint.
 */
export function stackEndpoint(variable: string): string {
  const url = stackEnv()[variable];
  if (!url || !/^http:\/\/127\.0\.0\.1:\d+$/.test(url))
    throw new Error(`the emulator stack has no loopback ${variable} (got ${String(url)})`);
  return url;
}

/** A unique lowercase prefix, e.g. `t-3fa9c1`. */
export function uniquePrefix(tag = 't'): string {
  return `${tag}-${randomBytes(4).toString('hex')}`;
}

/** Config for a fresh set of resource names on the emulator stack. */
export function testConfig(
  extraEnv: Record<string, string> = {},
  tag = 't',
  tuning: Partial<WorldTuning> = {},
): WorldConfig {
  return loadConfig({ ...stackEnv(), EVE_WORLD_AWS_PREFIX: uniquePrefix(tag), ...extraEnv }, tuning);
}

export interface Fixture {
  config: WorldConfig;
  clients: AwsClients;
  /** The env a child process needs to use the same resources. */
  env: Record<string, string>;
}

/**
 * Create a table, queues and bucket with unique names and return config + clients. `tuning`
 * (options, not variables) is in `config` only; a child process gets it by other means.
 */
export async function createFixture(
  extraEnv: Record<string, string> = {},
  tag = 't',
  tuning: Partial<WorldTuning> = {},
): Promise<Fixture> {
  const env = { ...stackEnv(), EVE_WORLD_AWS_PREFIX: uniquePrefix(tag), ...extraEnv };
  const config = loadConfig(env, tuning);
  // With a scheduler role the World (and reconcile) call the Scheduler: only ever the stack's.
  if (config.schedulerRoleArn) stackEndpoint('AWS_ENDPOINT_URL_SCHEDULER');
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  return { config, clients, env };
}

/** A table someone else made: the right keys, but no GSIs and no TTL (drift for `init`). */
export async function createTableWithoutIndexes(clients: AwsClients, tableName: string): Promise<void> {
  await clients.ddb.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'PK', KeyType: 'HASH' },
        { AttributeName: 'SK', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'PK', AttributeType: 'S' },
        { AttributeName: 'SK', AttributeType: 'S' },
      ],
    }),
  );
}
