/**
 * What every World component is built from: validated config, AWS clients and the S3 payload
 * store. One context per World instance; components never read `process.env` themselves.
 */
import { type AwsClients, createClients } from './aws/clients.js';
import type { WorldConfig } from './config.js';
import { PayloadStore } from './payloads.js';

export interface WorldContext {
  readonly config: WorldConfig;
  readonly clients: AwsClients;
  readonly payloads: PayloadStore;
}

export function createContext(config: WorldConfig, clients: AwsClients = createClients(config)): WorldContext {
  return {
    config,
    clients,
    // Stored payloads use the lower of the two thresholds (queue bodies and chunks: the first).
    payloads: new PayloadStore(
      clients.s3,
      config.bucket,
      Math.min(config.payloadThresholdBytes, config.storageInlineBytes ?? config.payloadThresholdBytes),
    ),
  };
}
