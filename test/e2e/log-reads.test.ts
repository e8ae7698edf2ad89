/**
 * Real workflows through real core: the flow route's `events.list` calls are answered from the
 * World's memory of the log when the delivery's message says how far its sender had seen it
 * (`eve.tail`), so a fan-out of 8 in one consumer process reads its log from DynamoDB only once
 * (the `run_started` preload). Counts come from SDK middleware on the World's own DynamoDB client
 * and a counter around `events.list`; results are checked in full.
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { resumeHook, start } from 'workflow/api';
import { type E2e, startE2e } from '../helpers/e2e.js';

let e2e: E2e;
const ddb: string[] = [];
/** The sort keys of the items each GetItem read. */
const gets: string[] = [];
let lists = 0;

beforeAll(async () => {
  e2e = await startE2e();
  e2e.fixture.clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const name = ((context as { commandName?: string }).commandName ?? '').replace(/Command$/, '');
      ddb.push(name);
      if (name === 'GetItem') gets.push(String((args.input as { Key?: { SK?: { S?: string } } }).Key?.SK?.S));
      return next(args);
    },
    { step: 'initialize', name: 'countLogReads' },
  );
  const list = e2e.world.events.list;
  e2e.world.events.list = (params) => {
    lists++;
    return list(params);
  };
});
afterAll(async () => {
  await e2e?.close();
});

it('a fan-out of 8 completes, and its flow invocations list the log from memory', async () => {
  const wf = e2e.workflows.fanOut as never;
  // Warm-up (first delivery paths, connections), then counted runs.
  expect(await (await start(wf, [2])).returnValue).toEqual([0, 2]);
  for (let i = 0; i < 3; i++) {
    ddb.length = 0;
    lists = 0;
    const run = await start(wf, [8]);
    expect(await run.returnValue).toEqual([0, 2, 4, 6, 8, 10, 12, 14]);
    const events = (await e2e.world.events.list({ runId: run.runId })).data;
    expect(events.filter((e) => e.eventType === 'step_completed')).toHaveLength(8);
    expect(events.filter((e) => e.eventType === 'run_completed')).toHaveLength(1);
    // The check's own list above was one Query, outside any delivery.
    const queries = ddb.filter((c) => c === 'Query').length - 1;
    // Core lists the log on most of the run's deliveries (7 on average in the bench); without the
    // tail each was a Query. With it, the only log read is run_started's preload.
    expect(lists - 1).toBeGreaterThanOrEqual(4);
    expect(queries).toBeLessThanOrEqual(1);
  }
});

it("a hook resume reads the hook and not its run: the hook carries the run's resume context", async () => {
  const token = `resume-${Date.now()}`;
  const run = await start(e2e.workflows.hookCollector as never, [token, 2]);
  await vi.waitFor(async () => expect(await e2e.world.hooks.getByToken(token)).toBeTruthy(), {
    timeout: 20_000,
    interval: 100,
  });
  const stored = await e2e.world.runs.get(run.runId);
  const hook = await e2e.world.hooks.getByToken(token);
  // Exactly what core derives from the run when a hook has none (resume-hook.js, the fallback).
  expect(hook.resumeContext).toEqual({
    deploymentId: stored.deploymentId,
    workflowName: stored.workflowName,
    runSpecVersion: stored.specVersion,
    workflowCoreVersion: stored.executionContext?.workflowCoreVersion,
    ...(stored.executionContext?.traceCarrier ? { traceCarrier: stored.executionContext.traceCarrier } : {}),
    ...(stored.encryptionPublicKey ? { encryptionPublicKey: stored.encryptionPublicKey } : {}),
    ...(stored.executionContext?.hookResumeInputVersion !== undefined
      ? { hookResumeInputVersion: stored.executionContext.hookResumeInputVersion }
      : {}),
  });
  expect(hook.resumeContext?.workflowCoreVersion).toEqual(expect.any(String));
  gets.length = 0;
  await resumeHook(token, { value: 1 });
  // resumeHook: hooks.getByToken (GetItem HOOK#meta), then hook_received; no runs.get (RUN#meta).
  expect(gets).toEqual(['HOOK#meta']);
  await resumeHook(token, { value: 2 });
  expect(await run.returnValue).toEqual([1, 2]);
});
