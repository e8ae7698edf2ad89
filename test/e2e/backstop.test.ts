/**
 * The liveness backstop (src/backstop/) with the real core: a run's wake is removed by hand (an SQS
 * middleware swallows the SendMessage and answers as SQS would, so the World believes it sent and
 * its idempotency claim says `sent`), and the run still completes, woken by the in-process
 * backstop (B = 2 s, a tick every second). Early delivery is off, so every message goes through SQS.
 *
 * Cases: the pending step's message (which leaves its dispatch key used: exactly one re-send goes
 * out), the elapsed wait's continuation, the `hook_received` wake. Then: a run idling on a hook is
 * never woken; two checkers racing on one due run send one wake.
 */
import { randomUUID } from 'node:crypto';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resumeHook, start } from 'workflow/api';
import { checkRun } from '../../src/backstop/check.js';
import { runBackstopTick } from '../../src/backstop/index.js';
import { createContext } from '../../src/context/world-context.js';
import { keys } from '../../src/schema/keys.js';
import { storageContext } from '../../src/storage/index.js';
import { dueIndexAttrs } from '../../src/storage/records/due.js';
import { type E2e, startE2e } from '../helpers/e2e.js';

interface Sent {
  body: string;
  delay: number;
}

let e2e: E2e;
const sent: Sent[] = [];
/** Predicates of sends to swallow, each once. */
const drops: Array<(s: Sent) => boolean> = [];
const dropped: Sent[] = [];

beforeAll(async () => {
  e2e = await startE2e({ tuning: { backstopSeconds: 2, backstopTickSeconds: 1 }, earlyDelivery: false });
  e2e.fixture.clients.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName !== 'SendMessageCommand') return next(args);
      const input = args.input as { MessageBody?: string; DelaySeconds?: number };
      const s: Sent = { body: input.MessageBody ?? '', delay: input.DelaySeconds ?? 0 };
      sent.push(s);
      const i = drops.findIndex((p) => p(s));
      if (i >= 0) {
        drops.splice(i, 1);
        dropped.push(s);
        // What SQS answers to an accepted message: the World marks its claim `sent`.
        return { output: { MessageId: randomUUID(), $metadata: { httpStatusCode: 200 } }, response: {} } as never;
      }
      return next(args);
    },
    { step: 'initialize', name: 'backstopDropSend' },
  );
});
afterEach(() => {
  drops.length = 0;
});
afterAll(async () => {
  await e2e?.close();
});

const ofRun = (runId: string) => (s: Sent) => s.body.includes(runId);

describe('a wake removed by hand: the backstop wakes the run and it completes', () => {
  it("a pending step's message (its key stays used): one re-send of the step, the run completes", async () => {
    // The first step message sent from now on: this run's (the tests run one at a time).
    drops.push((s) => s.body.includes('"stepId"'));
    // A step that fails once with a retry: core sends its retry as a step message (steps that
    // succeed run inline, in the workflow's own delivery).
    const run = await start(e2e.workflows.retriableAndFatal as never, []);
    const runId = run.runId;
    expect(await run.returnValue).toEqual({ attempts: 2, fatal: 'fatal on purpose' });
    const lost = dropped.find(ofRun(runId));
    expect(
      lost,
      `the step message was swallowed; sent: ${JSON.stringify(sent.filter(ofRun(runId)).map((s) => s.body.slice(0, 120)))}`,
    ).toBeDefined();
    const stepId = (JSON.parse(lost!.body) as { stepId: string }).stepId;
    const stepSends = sent.filter((s) => s.body.includes(`"stepId":"${stepId}"`));
    // The swallowed one and exactly one re-send (the backstop re-opened the used key once).
    expect(stepSends).toHaveLength(2);
  }, 60_000);

  it("an elapsed wait's continuation: the run completes", async () => {
    drops.push((s) => s.delay > 0);
    const run = await start(e2e.workflows.sleepThenStep as never, ['1s']);
    const runId = run.runId;
    expect(await run.returnValue).toBe(3);
    expect(dropped.some((s) => ofRun(runId)(s) && s.delay > 0)).toBe(true);
  }, 60_000);

  it('the hook_received wake: the run completes', async () => {
    const token = `bs-${randomUUID()}`;
    const run = await start(e2e.workflows.hookCollector as never, [token, 1]);
    // Wait for the hook to exist, then swallow the continuation resumeHook sends.
    await waitForHook(token);
    drops.push((s) => ofRun(run.runId)(s) && !s.body.includes('"stepId"'));
    await resumeHook(token, { value: 'v' });
    expect(await run.returnValue).toEqual(['v']);
    expect(dropped.some(ofRun(run.runId))).toBe(true);
  }, 60_000);
});

describe('what the backstop leaves alone, and its fence', () => {
  it('a run idling on a hook is checked, with backoff, and never woken', async () => {
    const token = `bs-idle-${randomUUID()}`;
    const run = await start(e2e.workflows.hookCollector as never, [token, 1]);
    await waitForHook(token);
    const before = sent.filter(ofRun(run.runId)).length;
    // Let the in-process backstop check it several times (B = 2 s, T = 1 s): each check sees an
    // unchanged, acknowledged log, so the item moves out (6 h) and no wake goes out.
    const due = await waitFor(async () => {
      const d = await readDue(run.runId);
      return d && d.dueAt > Date.now() + 3600_000 ? d : undefined;
    });
    expect(due.wakes).toBe(0);
    expect(sent.filter(ofRun(run.runId)).length).toBe(before);
    await resumeHook(token, { value: 'done' });
    expect(await run.returnValue).toEqual(['done']);
  }, 60_000);

  it('two checkers racing on one due run: one passes the fence, one wake', async () => {
    // A run whose first message is swallowed: it owes its start.
    drops.push(() => true);
    const run = await start(e2e.workflows.addition as never, [1, 1]);
    const runId = run.runId;
    expect(dropped.some(ofRun(runId))).toBe(true);
    // Its check set by hand to an hour from now, quiet since slot 1 (run_created): out of the
    // in-process ticker's reach, and due for two checkers whose clock says an hour and a second.
    const at = Date.now() + 3600_000;
    await setDue(runId, at, 1);
    const ctx = createContext(e2e.fixture.config, e2e.fixture.clients);
    const wakes: string[] = [];
    const sender = {
      queue: async (_q: string, p: unknown) => {
        wakes.push((p as { runId: string }).runId);
        return { messageId: null };
      },
    };
    const passed: string[] = [];
    let release!: () => void;
    const stalled = new Promise<void>((r) => {
      release = r;
    });
    let entered!: () => void;
    const inside = new Promise<void>((r) => {
      entered = r;
    });
    // Checker A passes the fence and stalls before its reads; checker B comes meanwhile.
    const a = runBackstopTick(ctx, {
      sender: sender as never,
      now: () => at + 1000,
      afterFence: async (id) => {
        if (id !== runId) return;
        passed.push('a');
        entered();
        await stalled;
      },
    });
    await inside;
    // B read the index before A's fence moved the item (a stale index, or simply earlier): its
    // fence on the value it saw fails, and it does nothing.
    const b = await checkRun(storageContext(ctx), runId, at, at + 1000, {
      wake: async () => {
        wakes.push(`b:${runId}`);
      },
      afterFence: async () => {
        passed.push('b');
      },
    });
    expect(b).toBe('fenced');
    release();
    await a;
    expect(passed).toEqual(['a']);
    expect(wakes.filter((id) => id === runId)).toEqual([runId]);
    // The winner moved the check on by the backoff (from its clock), with one wake counted.
    expect(await readDue(runId)).toEqual({ dueAt: at + 1000 + 2000, wakes: 1 });
  }, 60_000);
});

async function setDue(runId: string, dueAt: number, seenSlot: number): Promise<void> {
  const idx = dueIndexAttrs(runId, dueAt);
  await e2e.fixture.clients.ddb.send(
    new UpdateItemCommand({
      TableName: e2e.fixture.config.tableName,
      Key: { PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } },
      UpdateExpression: 'SET dueAt = :d, GSI1SK = :sk, seenSlot = :s, wakes = :z',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: {
        ':d': { N: String(dueAt) },
        ':sk': idx.GSI1SK,
        ':s': { N: String(seenSlot) },
        ':z': { N: '0' },
      },
    }),
  );
}

async function readDue(runId: string): Promise<{ dueAt: number; wakes: number } | undefined> {
  const out = await e2e.fixture.clients.ddb.send(
    new GetItemCommand({
      TableName: e2e.fixture.config.tableName,
      Key: { PK: { S: keys.due(runId).PK }, SK: { S: keys.due(runId).SK } },
      ConsistentRead: true,
    }),
  );
  if (!out.Item) return undefined;
  return { dueAt: Number(out.Item.dueAt.N), wakes: Number(out.Item.wakes?.N ?? 0) };
}

async function waitForHook(token: string): Promise<void> {
  await waitFor(async () => {
    try {
      return await e2e.world.hooks.getByToken(token);
    } catch {
      return undefined;
    }
  });
}

async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}
