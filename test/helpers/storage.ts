/**
 * Storage test fixture: a fresh table/bucket on the emulator stack and a Storage on it, plus
 * small builders for the events the runtime sends. Real calls only; no AWS mocks.
 */

import type { Storage } from '@workflow/world';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { afterAll, beforeAll } from 'vitest';
import { destroyClients } from '../../src/aws/clients.js';
import type { WorldTuning } from '../../src/config/index.js';
import { createContext, type WorldContext } from '../../src/context/world-context.js';
import { createStorage } from '../../src/storage/index.js';
import { createFixture, type Fixture } from '../helpers/aws.js';

export interface StorageFixture extends Fixture {
  ctx: WorldContext;
  storage: Storage;
  /** A second Storage on the same table (another "process": no shared in-memory hints). */
  other(): Storage;
  close(): void;
}

export async function storageFixture(
  extraEnv: Record<string, string> = {},
  tuning: Partial<WorldTuning> = {},
): Promise<StorageFixture> {
  const f = await createFixture(extraEnv, 'st', tuning);
  const ctx = createContext(f.config, f.clients);
  return {
    ...f,
    ctx,
    storage: createStorage(ctx),
    other: () => createStorage(ctx),
    close: () => destroyClients(f.clients),
  };
}

/**
 * Registers beforeAll/afterAll for a file-wide StorageFixture and returns it; its fields are
 * filled in by beforeAll, so read them inside tests and hooks only.
 */
export function fileStorageFixture(extraEnv: Record<string, string> = {}): StorageFixture {
  const f = {} as StorageFixture;
  beforeAll(async () => {
    Object.assign(f, await storageFixture(extraEnv));
  });
  afterAll(() => f.close?.());
  return f;
}

export const bytes = (s: string) => new Uint8Array(Buffer.from(s));
export const sv = SPEC_VERSION_CURRENT;

export function runCreatedReq(over: Record<string, unknown> = {}) {
  return {
    eventType: 'run_created' as const,
    specVersion: sv,
    eventData: { deploymentId: 'dpl_test', workflowName: 'wf//./src/w//main', input: bytes('input\0bytes'), ...over },
  };
}

/** A run that exists and is running; returns its id. */
export async function startedRun(storage: Storage, over: Record<string, unknown> = {}): Promise<string> {
  const { run } = await storage.events.create(null, runCreatedReq(over));
  await storage.events.create(run.runId, { eventType: 'run_started', specVersion: sv });
  return run.runId;
}

/** `hook_1` created with `metadata` (token `t-<runId>`), then resumed once with `payload`. */
export async function hookCreatedAndReceived(storage: Storage, runId: string, metadata: unknown, payload: unknown) {
  await storage.events.create(runId, {
    eventType: 'hook_created',
    specVersion: sv,
    correlationId: 'hook_1',
    eventData: { token: `t-${runId}`, metadata },
  });
  await storage.events.create(runId, {
    eventType: 'hook_received',
    specVersion: sv,
    correlationId: 'hook_1',
    eventData: { token: `t-${runId}`, payload },
  });
}

export async function createdStep(storage: Storage, runId: string, stepId: string, input = bytes('step-in')) {
  return storage.events.create(runId, {
    eventType: 'step_created',
    specVersion: sv,
    correlationId: stepId,
    eventData: { stepName: 'step//a', input },
  });
}

export async function eventTypes(storage: Storage, runId: string): Promise<string[]> {
  const page = await storage.events.list({ runId });
  return page.data.map((e) => e.eventType);
}

/** Expect `p` to reject with an error whose `name` is `name` (the runtime checks names via `.is`). */
export async function rejectsWith(p: Promise<unknown>, name: string): Promise<Error> {
  try {
    await p;
  } catch (e) {
    if ((e as Error).name !== name)
      throw new Error(`expected ${name}, got ${(e as Error).name}: ${(e as Error).message}`);
    return e as Error;
  }
  throw new Error(`expected ${name}, but it resolved`);
}
