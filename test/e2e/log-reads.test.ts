/**
 * Real workflows through real core: the flow route's `events.list` calls are answered from the
 * World's memory of the log when the delivery's message says how far its sender had seen it
 * (`eve.tail`), so a fan-out of 8 in one consumer process reads its log from DynamoDB only once
 * (the `run_started` preload). Counts come from SDK middleware on the World's own DynamoDB client
 * and a counter around `events.list`; results are checked in full.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { start } from 'workflow/api';
import { type E2e, startE2e } from '../helpers/e2e.js';

let e2e: E2e;
const ddb: string[] = [];
let lists = 0;

beforeAll(async () => {
  e2e = await startE2e();
  e2e.fixture.clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      ddb.push(((context as { commandName?: string }).commandName ?? '').replace(/Command$/, ''));
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
