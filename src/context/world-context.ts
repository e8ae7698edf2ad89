/**
 * What every World component is built from: validated config, AWS clients and the S3 payload
 * store. One context per World instance; components never read `process.env` themselves.
 */
import { type AwsClients, createClients } from '../aws/clients.js';
import { SETTINGS, type WorldConfig } from '../config/index.js';
import { PayloadStore } from './payload-store.js';

export interface WorldContext {
  readonly config: WorldConfig;
  readonly clients: AwsClients;
  readonly payloads: PayloadStore;
}

export interface ContextOptions {
  /**
   * Meaning and default: its row, `SETTINGS.world.resolvePayloads` (src/config/world-options.ts).
   * `false` works because storage follows a pointer only through {@link PayloadStore.resolve}.
   */
  resolvePayloads?: boolean;
}

export function createContext(
  config: WorldConfig,
  clients: AwsClients = createClients(config),
  options: ContextOptions = {},
): WorldContext {
  // Stored payloads use the lower of the two thresholds (queue bodies and chunks: the first).
  const payloads = new PayloadStore(
    clients.s3,
    config.bucket,
    Math.min(config.payloadThresholdBytes, config.storageInlineBytes),
  );
  if (!(options.resolvePayloads ?? SETTINGS.world.resolvePayloads.default))
    payloads.resolve = async <T>(value: unknown) => value as T;
  return { config, clients, payloads };
}
