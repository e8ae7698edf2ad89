/**
 * `redrive --stranded` against real workflows run by the real core: a message is lost on purpose
 * (acked without being handled), the run stalls, and the continuation redrive enqueues makes it
 * finish. Also renders the finished real run with the tail view.
 *
 * Uses the workflows compiled for test/e2e (test/e2e/build.mjs); skipped when they are not built.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { render } from 'ink-testing-library';
import { createElement } from 'react';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { redriveStranded } from '../../../src/cli/redrive/stranded.js';
import { openWorld } from '../../../src/cli/shared/world.js';
import { followRun } from '../../../src/cli/tail-follow.js';
import { emptyTailState, reduceTail, TailView } from '../../../src/cli/tail-view.js';
import { type AwsWorld, createWorld } from '../../../src/index.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';
import { ROOT } from '../../helpers/cli.js';

const wellKnown = path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1');
const built = existsSync(path.join(wellKnown, 'flow.mjs'));

type FlowPost = (req: Request) => Promise<Response>;

let fixture: Fixture;
let world: AwsWorld;
let workflows: Record<string, { workflowId: string }>;
/** Decides, per delivery, whether to lose it (ack without handling). */
let lose: (body: { runId?: string; stepId?: string }) => boolean = () => false;
const lost: Array<{ runId?: string; stepId?: string }> = [];

beforeAll(async () => {
  if (!built) return;
  // One inline step per invocation, so parallel steps travel as step messages.
  process.env.WORKFLOW_MAX_INLINE_STEPS = '1';
  fixture = await createFixture({ EVE_WORLD_AWS_CONCURRENCY: '8' }, 'strd');
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  workflows = manifest.workflows['workflows/checklist.ts'];
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: FlowPost };
  world = createWorld({ config: fixture.config, clients: fixture.clients });
  world.registerHandler('__wkf_workflow_', async (req) => {
    const body = (await req.clone().json()) as { runId?: string; stepId?: string };
    if (lose(body)) {
      lost.push(body);
      return new Response('{}', { status: 200 }); // acked: SQS deletes it, nothing ran
    }
    return flow.POST(req);
  });
  await world.start();
  setWorld(world);
});

afterAll(async () => {
  setWorld(undefined as never);
  await world?.close();
  delete process.env.WORKFLOW_MAX_INLINE_STEPS;
});

/** Wait until the run has written no event for `quietMs` (it is stuck, or done). */
async function settle(runId: string, quietMs = 1500, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const n = (await world.events.list({ runId, pagination: {}, resolveData: 'none' })).data.length;
    if (n !== last) {
      last = n;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`run ${runId} kept writing events for ${timeoutMs} ms`);
}

async function redrive() {
  const cli = openWorld({ env: fixture.env });
  try {
    return await redriveStranded(cli, { olderThanMs: 1000 });
  } finally {
    await cli.close();
  }
}

describe.skipIf(!built)('redrive --stranded on real workflows', () => {
  it('a lost step message: the run stalls, redrive re-dispatches the step, the run completes', async () => {
    let dropped = false;
    lose = (b) => {
      if (dropped || !b.stepId) return false;
      dropped = true;
      return true;
    };
    const run = await start(workflows.fanOut as never, [4]);
    await settle(run.runId);
    expect(lost).toEqual([expect.objectContaining({ runId: run.runId, stepId: expect.any(String) })]);
    expect((await world.runs.get(run.runId)).status).toBe('running');

    const out = await redrive();
    const mine = out.runs.find((r) => r.runId === run.runId);
    expect(mine).toMatchObject({
      verdict: 'stranded',
      continuations: [{ payload: { runId: run.runId, stepId: lost[0].stepId }, result: 'enqueued' }],
    });
    expect(await run.returnValue).toEqual([0, 2, 4, 6]);

    // The finished real run through the tail view.
    const cli = openWorld({ env: fixture.env, resolvePayloads: false });
    let state = emptyTailState();
    try {
      for await (const rec of followRun(cli.world, run.runId, { follow: false })) state = reduceTail(state, rec);
    } finally {
      await cli.close();
    }
    const view = render(
      createElement(TailView, { runId: run.runId, state: { ...state, finished: true }, now: Date.now(), columns: 140 }),
    );
    const frame = view.lastFrame() ?? '';
    view.unmount();
    expect(frame).toMatch(/status completed/);
    expect(frame).toMatch(/run_completed\s+-\s+-\s+\S+\s+output=\[0,2,4,6\]/);
    expect(frame.match(/^add\s+step_\S+\s+completed/gm)).toHaveLength(4);
  });

  it('a lost start message: the run stays pending, redrive sends {runId}, the run completes', async () => {
    let dropped = false;
    lose = (b) => {
      if (dropped || b.stepId) return false;
      dropped = true;
      return true;
    };
    lost.length = 0;
    const run = await start(workflows.addition as never, [20, 22]);
    await settle(run.runId);
    expect((await world.runs.get(run.runId)).status).toBe('pending');
    const out = await redrive();
    expect(out.runs.find((r) => r.runId === run.runId)).toMatchObject({
      verdict: 'stranded',
      continuations: [{ payload: { runId: run.runId } }],
    });
    expect(await run.returnValue).toBe(42);
    // Idempotent: a second pass finds nothing stranded for this run.
    const again = await redrive();
    expect(again.runs.find((r) => r.runId === run.runId)).toBeUndefined();
  });
});
