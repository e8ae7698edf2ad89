/**
 * End-to-end harness: workflows compiled by the Workflow DevKit builder (test/e2e/build.mjs), run
 * by the real `@workflow/core` on eve-world-aws against the embedded emulators. Every delivery
 * goes through SQS: `queue()` sends to the real queue, the World's in-process consumer receives
 * it and hands it to the flow route registered with `registerHandler`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setWorld } from 'workflow/runtime';
import type { WorldTuning } from '../../src/config/index.js';
import { createContext } from '../../src/context/world-context.js';
import { RunKeys } from '../../src/encryption/run-keys.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createFixture, type Fixture } from '../helpers/aws.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, '..', 'e2e', 'app/.well-known/workflow/v1');

type FlowPost = (req: Request) => Promise<Response>;

export interface E2eOptions {
  extraEnv?: Record<string, string>;
  /** Options (not variables), e.g. `{ maxDelayHopSeconds: 2 }`. */
  tuning?: Partial<WorldTuning>;
  /**
   * Duplicate every delivery (SQS at-least-once, worst case):
   * - `'sqs'`: every SendMessage is sent twice (fault-injection middleware on the SQS client), so
   *   the real consumer receives two copies of each message, usually in the same batch;
   * - `'handler'`: every delivery the consumer makes is handed to the flow route twice, in
   *   parallel, bypassing the consumer's own duplicate guard.
   */
  duplicateDelivery?: 'sqs' | 'handler';
  /** Sees a copy of every request the consumer hands to the flow route (before it runs). */
  tap?: (req: Request) => void;
  /** `'none'`: no in-process poller (the test consumes the queue itself, e.g. as Lambda would). */
  consumer?: 'poll' | 'none';
  /** false: no early delivery (every message goes through SQS, so dropping a send loses it). */
  earlyDelivery?: false;
}

/** Fault injection: send every SQS message (and batch) twice. */
function duplicateSends(fixture: Fixture): void {
  fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName;
      if (name !== 'SendMessageCommand' && name !== 'SendMessageBatchCommand') return next(args);
      const first = await next(args);
      await next(args);
      return first;
    },
    { step: 'initialize', name: 'e2eDuplicateSends' },
  );
}

export interface E2e {
  world: AwsWorld;
  /** The World's per-run key source (built here, so its stats can be read), when the config has a KMS key. */
  runKeys?: RunKeys;
  fixture: Fixture;
  /** Workflow metadata by export name, for `start()`. */
  workflows: Record<string, { workflowId: string }>;
  /** Flow-route invocations per run id. */
  invocations: Map<string, number>;
  /** Step-body executions recorded by `countedAdd`. */
  stepTally(): Map<string, number>;
  /** The compiled flow route itself (requests must be signed, see src/consumer/shared/signing.ts). */
  flow: FlowPost;
  close(): Promise<void>;
}

async function runIdOf(req: Request): Promise<string | undefined> {
  try {
    const body = (await req.clone().json()) as { runId?: string };
    return typeof body?.runId === 'string' ? body.runId : undefined;
  } catch {
    return undefined;
  }
}

export async function startE2e(opts: E2eOptions = {}): Promise<E2e> {
  const fixture = await createFixture({ EVE_WORLD_AWS_CONCURRENCY: '16', ...opts.extraEnv }, 'e2e', opts.tuning);
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  const workflows = manifest.workflows['workflows/checklist.ts'] as Record<string, { workflowId: string }>;
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: FlowPost };

  if (opts.duplicateDelivery === 'sqs') duplicateSends(fixture);
  const { kmsKeyId } = fixture.config;
  const runKeys = kmsKeyId ? new RunKeys(createContext(fixture.config, fixture.clients), kmsKeyId) : undefined;
  const world = createWorld({
    config: fixture.config,
    clients: fixture.clients,
    runKeys,
    ...(opts.consumer || opts.earlyDelivery === false
      ? {
          consumer: {
            ...(opts.consumer ? { consumer: opts.consumer } : {}),
            ...(opts.earlyDelivery === false ? { earlyDelivery: false } : {}),
          },
        }
      : {}),
  });
  const invocations = new Map<string, number>();
  const handler: FlowPost = async (req) => {
    const runId = await runIdOf(req);
    if (runId) invocations.set(runId, (invocations.get(runId) ?? 0) + 1);
    opts.tap?.(req.clone());
    if (opts.duplicateDelivery !== 'handler') return flow.POST(req);
    const [a] = await Promise.all([flow.POST(req.clone()), flow.POST(req.clone())]);
    return a;
  };
  world.registerHandler('__wkf_workflow_', handler);
  await world.start();
  setWorld(world);
  return {
    world,
    runKeys,
    fixture,
    workflows,
    invocations,
    flow: flow.POST,
    stepTally: () => ((globalThis as Record<string, unknown>).__e2eStepTally as Map<string, number>) ?? new Map(),
    close: async () => {
      setWorld(undefined as never);
      await world.close();
    },
  };
}
