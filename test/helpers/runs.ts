/**
 * Real runs for the operator-command tests, written through the World's own storage API (the
 * same calls the runtime makes), so tail/runs/redrive read exactly what a workflow leaves behind.
 */
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { stringify } from 'devalue';
import type { WorldTuning } from '../../src/config/index.js';
import { createContext, type WorldContext } from '../../src/context/world-context.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createFixture, type Fixture } from './aws.js';

export const sv = SPEC_VERSION_CURRENT;
export const bytes = (s: string) => new TextEncoder().encode(s);
/** What the runtime stores: devalue text behind the 4-byte `devl` format prefix. */
export const devl = (value: unknown) => bytes(`devl${stringify(value)}`);

export interface OpsFixture {
  fixture: Fixture;
  world: AwsWorld;
  /** The fixture's own context (clients, payload store) for what a test does beside the World. */
  context: WorldContext;
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function opsFixture(
  extraEnv: Record<string, string> = {},
  tag = 'ops',
  tuning: Partial<WorldTuning> = {},
): Promise<OpsFixture> {
  const fixture = await createFixture(extraEnv, tag, tuning);
  const world = createWorld({ config: fixture.config, clients: fixture.clients });
  return {
    fixture,
    world,
    context: createContext(fixture.config, fixture.clients),
    env: fixture.env,
    close: async () => {
      await world.close();
    },
  };
}

export async function createRun(
  world: AwsWorld,
  workflowName: string,
  input: unknown = 1,
  deploymentId = 'test',
): Promise<string> {
  const r = await world.events.create(null, {
    eventType: 'run_created',
    specVersion: sv,
    eventData: { deploymentId, workflowName, input: devl(input) },
  } as never);
  return (r as { run: { runId: string } }).run.runId;
}

export async function ev(world: AwsWorld, runId: string, event: Record<string, unknown>): Promise<void> {
  await world.events.create(runId, { specVersion: sv, ...event } as never);
}

export async function startRun(world: AwsWorld, runId: string): Promise<void> {
  await ev(world, runId, { eventType: 'run_started' });
}

/** step_created + step_started (+ step_completed with `result` unless `complete: false`). */
export async function step(
  world: AwsWorld,
  runId: string,
  stepId: string,
  stepName: string,
  result?: unknown,
  complete = true,
): Promise<void> {
  await ev(world, runId, {
    eventType: 'step_created',
    correlationId: stepId,
    eventData: { stepName, input: devl([1, 2]) },
  });
  await ev(world, runId, { eventType: 'step_started', correlationId: stepId, eventData: { stepName } });
  if (complete) {
    await ev(world, runId, {
      eventType: 'step_completed',
      correlationId: stepId,
      eventData: { stepName, result: result instanceof Uint8Array ? result : devl(result) },
    });
  }
}

export async function completeRun(world: AwsWorld, runId: string, output: unknown = 'done'): Promise<void> {
  await ev(world, runId, { eventType: 'run_completed', eventData: { output: devl(output) } });
}

export async function failRun(world: AwsWorld, runId: string, message = 'boom'): Promise<void> {
  await ev(world, runId, {
    eventType: 'run_failed',
    eventData: { error: { message, stack: `Error: ${message}` }, errorCode: 'USER_ERROR' },
  });
}

/** A finished run with one step, a text + binary stream, and a run output. */
export async function finishedRun(world: AwsWorld, workflowName = 'wf-demo'): Promise<string> {
  const runId = await createRun(world, workflowName, 5);
  await startRun(world, runId);
  await step(world, runId, 'step_01', 'add', 6);
  await world.streams.write(runId, 'default', 'hello\n');
  await world.streams.write(runId, 'default', new Uint8Array([0, 1, 2, 255]));
  await world.streams.close(runId, 'default');
  await completeRun(world, runId, 6);
  return runId;
}
