/**
 * What storage is built from: the validated config, the DynamoDB client, the S3 payload store and
 * the table name. Storage never reads `process.env` or builds its own clients.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { WorldConfig } from '../../config/index.js';
import type { PayloadStore } from '../../context/payload-store.js';

export interface StorageCtx {
  readonly config: WorldConfig;
  readonly ddb: DynamoDBClient;
  readonly payloads: PayloadStore;
  readonly table: string;
}
