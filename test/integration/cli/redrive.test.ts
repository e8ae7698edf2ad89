/**
 * `eve-world-aws redrive` against the emulators: DLQ -> queue moves (all, --run, --dry-run) with
 * attributes copied unchanged, a fault injected between send and delete (SDK middleware throwing
 * on DeleteMessage: the message is duplicated, never lost), and `--stranded`.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveDlqMessages } from '../../../src/cli/redrive/dlq-mover.js';
import { decodePayload, encodePayload, envelopeAttributes } from '../../../src/queue/encoding.js';
import { SqsTransport } from '../../../src/queue/transport.js';
import { runCli } from '../../helpers/cli.js';
import { drainQueue, eveId } from '../../helpers/queue.js';
import { completeRun, createRun, ev, type OpsFixture, opsFixture, startRun, step } from '../../helpers/runs.js';

let f: OpsFixture;
let queueUrl: string;
let dlqUrl: string;

async function freshFixture(tag: string) {
  const fx = await opsFixture({}, tag);
  const t = new SqsTransport(fx.context);
  return { fx, queueUrl: await t.queueUrl(), dlqUrl: await t.dlqUrl() };
}

beforeAll(async () => {
  ({ fx: f, queueUrl, dlqUrl } = await freshFixture('redr'));
});

afterAll(async () => {
  await f?.close();
});

let seq = 0;
/** A dead-lettered World message for `runId`, as the queue would have sent it. */
async function deadLetter(
  fx: OpsFixture,
  url: string,
  runId: string,
  extra: Record<string, string> = {},
): Promise<string> {
  const messageId = `msg_test${++seq}`;
  await fx.fixture.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: url,
      MessageBody: encodePayload({ runId, requestedAt: '2026-01-01T00:00:00.000Z' }),
      MessageAttributes: {
        ...envelopeAttributes({
          queueName: '__wkf_workflow_wf',
          messageId,
          attemptOffset: 3,
          headers: { 'x-trace': 'abc' },
        }),
        ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { DataType: 'String', StringValue: v }])),
      },
    }),
  );
  return messageId;
}

const drain = (url: string, sqs: SQSClient = f.fixture.clients.sqs) => drainQueue(sqs, url);

describe('redrive: DLQ -> queue', () => {
  it('--dry-run reports, moves nothing; --run moves one run; then the rest; attributes copied unchanged', async () => {
    const a1 = await deadLetter(f, dlqUrl, 'wrun_A');
    const a2 = await deadLetter(f, dlqUrl, 'wrun_A');
    const b1 = await deadLetter(f, dlqUrl, 'wrun_B', { ERROR_CODE: 'from-scheduler' });

    const dry = await runCli(['redrive', '--dry-run', '--json'], f.env);
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout);
    expect(plan).toMatchObject({ mode: 'dlq', dryRun: true, matched: 3, moved: 0 });
    expect(plan.messages.map((m: { messageId: string; result: string }) => [m.messageId, m.result]).sort()).toEqual(
      [a1, a2, b1].map((id) => [id, 'would-move']).sort(),
    );

    const one = await runCli(['redrive', '--run', 'wrun_A', '--json'], f.env);
    expect(one.code).toBe(0);
    const moved = JSON.parse(one.stdout);
    expect(moved).toMatchObject({ moved: 2, matched: 2, skipped: 1, failed: 0, runId: 'wrun_A' });

    const human = await runCli(['redrive'], f.env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/Message\s+│\s+Queue \(logical\)\s+│\s+Run\s+│\s+First sent\s+│\s+Result/);
    expect(human.stdout).toMatch(new RegExp(`${b1}\\s+│\\s+__wkf_workflow_wf\\s+│\\s+wrun_B\\s+│.*│\\s+moved`));
    expect(human.stdout).toMatch(/Moved 1 message from \S+-dlq to \S+-queue\./);

    const onQueue = await drain(queueUrl);
    expect(onQueue.map(eveId).sort()).toEqual([a1, a2, b1].sort());
    for (const m of onQueue) {
      expect(decodePayload(m.Body ?? '')).toMatchObject({
        runId: expect.stringMatching(/^wrun_[AB]$/),
        requestedAt: '2026-01-01T00:00:00.000Z',
      });
      expect(m.MessageAttributes?.['eve.queue']?.StringValue).toBe('__wkf_workflow_wf');
      expect(m.MessageAttributes?.['eve.attemptOffset']?.StringValue).toBe('3');
      expect(m.MessageAttributes?.['eve.headers']?.StringValue).toBe('{"x-trace":"abc"}');
      // Only the World's own attributes travel back.
      expect(Object.keys(m.MessageAttributes ?? {}).sort()).toEqual([
        'eve.attemptOffset',
        'eve.fmt',
        'eve.headers',
        'eve.id',
        'eve.queue',
      ]);
    }
    expect(await drain(dlqUrl)).toEqual([]);
    const empty = await runCli(['redrive'], f.env);
    expect(empty.stdout).toMatch(/The DLQ \S+-dlq is empty; nothing to redrive\./);
  });

  it('a crash between send and delete duplicates the message and never loses it', async () => {
    const { fx, queueUrl: q, dlqUrl: dlq } = await freshFixture('redrf');
    try {
      const id = await deadLetter(fx, dlq, 'wrun_F');
      // The fault: DeleteMessage fails after the copy was sent.
      const faulty = new SQSClient({
        region: 'us-east-1',
        endpoint: fx.fixture.config.endpoints.sqs,
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      const calls: string[] = [];
      faulty.middlewareStack.add(
        (next, context) => async (args) => {
          calls.push(context.commandName ?? '?');
          if (context.commandName === 'DeleteMessageCommand')
            throw Object.assign(new Error('injected: connection reset'), { name: 'InjectedFault' });
          return next(args);
        },
        { step: 'initialize', name: 'faultOnDelete' },
      );
      const first = await moveDlqMessages({
        sqs: faulty,
        sourceUrl: dlq,
        targetUrl: q,
        payloads: fx.context.payloads,
      });
      faulty.destroy();
      expect(first).toMatchObject({ moved: 0, failed: 1 });
      expect(first.messages[0]).toMatchObject({
        messageId: id,
        result: 'delete-failed',
        error: 'InjectedFault: injected: connection reset',
      });
      // Order: receive -> send -> delete.
      expect(calls.filter((c) => c !== 'ChangeMessageVisibilityCommand')).toEqual([
        'ReceiveMessageCommand',
        'SendMessageCommand',
        'DeleteMessageCommand',
      ]);

      // The copy is on the queue and the original is back in the DLQ (released at once).
      // A second redrive moves it again: two deliveries of one logical message, no loss.
      const second = await moveDlqMessages({ sqs: fx.fixture.clients.sqs, sourceUrl: dlq, targetUrl: q });
      expect(second).toMatchObject({ moved: 1, failed: 0 });
      const copies = await drain(q, fx.fixture.clients.sqs);
      expect(copies.map(eveId)).toEqual([id, id]);
      expect(await drain(dlq, fx.fixture.clients.sqs)).toEqual([]);
    } finally {
      await fx.close();
    }
  });

  it('the onSent hook runs between send and delete; a failure there keeps the original too', async () => {
    const { fx, queueUrl: q, dlqUrl: dlq } = await freshFixture('redrh');
    try {
      const id = await deadLetter(fx, dlq, 'wrun_H');
      await deadLetter(fx, dlq, 'wrun_H');
      const r = await moveDlqMessages({
        sqs: fx.fixture.clients.sqs,
        sourceUrl: dlq,
        targetUrl: q,
        onSent: (m) => {
          if (m.messageId === id) throw new Error('crash after send');
        },
      });
      // Stops at the failure: one duplicate, the other message untouched (released), both in the DLQ.
      expect(r.failed).toBe(1);
      expect((await drain(dlq, fx.fixture.clients.sqs)).length).toBe(2 - r.moved);
      expect((await drain(q, fx.fixture.clients.sqs)).map(eveId)).toContain(id);
    } finally {
      await fx.close();
    }
  });

  it('finds the run of an S3-offloaded message; a body that could expire under the copy is re-homed first', async () => {
    const { fx, queueUrl: q, dlqUrl: dlq } = await freshFixture('redrs');
    try {
      const bytes = new TextEncoder().encode(encodePayload({ runId: 'wrun_S', big: 'x'.repeat(10) }));
      // A key of unknown age (the pre-lifetime layout) and one written just now (30 days left).
      const legacy = 'queue/msg_big';
      const fresh = `queue/msg_fresh/${Math.floor(Date.now() / 1000)}`;
      for (const [key, messageId] of [
        [legacy, 'msg_big'],
        [fresh, 'msg_fresh'],
      ]) {
        await fx.context.payloads.putBlob(key, bytes);
        await fx.fixture.clients.sqs.send(
          new SendMessageCommand({
            QueueUrl: dlq,
            MessageBody: JSON.stringify({ __s3: key }),
            MessageAttributes: envelopeAttributes({
              queueName: '__wkf_workflow_wf',
              messageId,
              attemptOffset: 0,
              s3Key: key,
            }),
          }),
        );
      }
      const r = await runCli(['redrive', '--run', 'wrun_S', '--json'], fx.env);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.moved).toBe(2);
      expect(out.messages.map((m: { messageId: string; runId: string }) => [m.messageId, m.runId]).sort()).toEqual([
        ['msg_big', 'wrun_S'],
        ['msg_fresh', 'wrun_S'],
      ]);
      const copies = await drain(q, fx.fixture.clients.sqs);
      const keyOf = (id: string) =>
        copies.find((m) => m.MessageAttributes?.['eve.id']?.StringValue === id)?.MessageAttributes?.['eve.s3']
          ?.StringValue ?? '';
      expect(keyOf('msg_fresh')).toBe(fresh);
      const rehomed = keyOf('msg_big');
      expect(rehomed).toMatch(/^queue\/msg_big\/\d+$/);
      expect(Buffer.compare(await fx.context.payloads.getBytes(rehomed), bytes)).toBe(0);
      const body = copies.find((m) => m.MessageAttributes?.['eve.id']?.StringValue === 'msg_big')?.Body;
      expect(JSON.parse(body ?? '{}')).toEqual({ __s3: rehomed });
    } finally {
      await fx.close();
    }
  });
});

describe('redrive --stranded', () => {
  it('re-enqueues only stranded runs, once, with the right continuation', async () => {
    const { fx, queueUrl: q, dlqUrl: dlq } = await freshFixture('redst');
    try {
      const w = fx.world;
      const pending = await createRun(w, 'wf-s'); // run_created, its first message lost
      const idle = await createRun(w, 'wf-s'); // a step done, the continuation lost
      await startRun(w, idle);
      await step(w, idle, 'step_done', 'add', 1);
      const stepLost = await createRun(w, 'wf-s'); // a step created, its step message lost
      await startRun(w, stepLost);
      await step(w, stepLost, 'step_lost', 'fetch', undefined, false);
      const sleeping = await createRun(w, 'wf-s'); // a wait due tomorrow: not stranded
      await startRun(w, sleeping);
      await ev(w, sleeping, {
        eventType: 'wait_created',
        correlationId: 'wait_1',
        eventData: { resumeAt: new Date(Date.now() + 86_400_000) },
      });
      const hooked = await createRun(w, 'wf-s'); // waiting for a hook resume: not stranded
      await startRun(w, hooked);
      await ev(w, hooked, {
        eventType: 'hook_created',
        correlationId: 'hook_1',
        eventData: { token: `tok-${hooked}` },
      });
      const elapsed = await createRun(w, 'wf-s'); // a wait that is due, its wake-up lost
      await startRun(w, elapsed);
      await ev(w, elapsed, {
        eventType: 'wait_created',
        correlationId: 'wait_2',
        eventData: { resumeAt: new Date(Date.now() - 1000) },
      });
      const dead = await createRun(w, 'wf-s'); // its message is in the DLQ: redrive that instead
      await startRun(w, dead);
      await deadLetter(fx, dlq, dead);
      const finished = await createRun(w, 'wf-s');
      await startRun(w, finished);
      await completeRun(w, finished);

      // Nothing is old enough with the default threshold (1 h).
      const young = await runCli(['redrive', '--stranded', '--json'], fx.env);
      expect(young.code).toBe(0);
      const youngOut = JSON.parse(young.stdout);
      expect(youngOut).toMatchObject({ mode: 'stranded', examined: 7, stranded: 0, enqueued: 0 });
      expect(new Set(youngOut.runs.map((r: { verdict: string }) => r.verdict))).toEqual(new Set(['active', 'in-dlq']));

      const dry = JSON.parse(
        (await runCli(['redrive', '--stranded', '--older-than', '0s', '--dry-run', '--json'], fx.env)).stdout,
      );
      expect(dry).toMatchObject({ dryRun: true, stranded: 4, enqueued: 0 });
      expect(await drain(q, fx.fixture.clients.sqs)).toEqual([]);

      const r1 = await runCli(['redrive', '--stranded', '--older-than', '0s', '--json'], fx.env);
      expect(r1.code).toBe(0);
      const out = JSON.parse(r1.stdout);
      const byRun = Object.fromEntries(out.runs.map((r: { runId: string }) => [r.runId, r]));
      expect(out).toMatchObject({ examined: 7, stranded: 4, enqueued: 4 });
      expect(byRun[pending]).toMatchObject({
        verdict: 'stranded',
        continuations: [{ payload: { runId: pending }, result: 'enqueued' }],
      });
      expect(byRun[idle]).toMatchObject({
        verdict: 'stranded',
        lastSlot: 5,
        continuations: [{ payload: { runId: idle }, idempotencyKey: `eve-world-aws:stranded:${idle}:5` }],
      });
      expect(byRun[stepLost]).toMatchObject({
        verdict: 'stranded',
        continuations: [{ payload: { runId: stepLost, stepId: 'step_lost', stepName: 'fetch' } }],
      });
      expect(byRun[elapsed]).toMatchObject({ verdict: 'stranded', continuations: [{ payload: { runId: elapsed } }] });
      expect(byRun[sleeping]).toMatchObject({ verdict: 'waiting', reason: expect.stringMatching(/^next timer due /) });
      expect(byRun[hooked]).toMatchObject({ verdict: 'waiting', reason: 'waiting for 1 hook to be resumed' });
      expect(byRun[dead]).toMatchObject({ verdict: 'in-dlq' });
      expect(byRun[finished]).toBeUndefined();

      // Running it again sends nothing new: the keys are derived from (run, last slot).
      const again = JSON.parse(
        (await runCli(['redrive', '--stranded', '--older-than', '0s', '--json'], fx.env)).stdout,
      );
      expect(again).toMatchObject({ stranded: 4, enqueued: 0 });
      expect(
        again.runs.flatMap((r: { continuations: { result: string }[] }) => r.continuations.map((c) => c.result)),
      ).toEqual(Array(4).fill('already-enqueued'));

      const human = await runCli(
        ['redrive', '--stranded', '--older-than', '0s', '--dry-run', '--namespace', 'eveabc'],
        fx.env,
      );
      expect(human.stdout).toMatch(
        /Run\s+│\s+Workflow\s+│\s+Status\s+│\s+Last event\s+│\s+Verdict\s+│\s+Reason\s+│\s+Action/,
      );
      expect(human.stdout).toMatch(/step fetch: would enqueue/);
      expect(human.stdout).toMatch(/Dry run: 4 of 7 active runs stranded \(idle > 0ms\); nothing was enqueued\./);

      const sent = await drain(q, fx.fixture.clients.sqs);
      expect(sent).toHaveLength(4);
      for (const m of sent) expect(m.MessageAttributes?.['eve.queue']?.StringValue).toBe('__wkf_workflow_wf-s');
      expect(
        sent.map((m) => decodePayload(m.Body ?? '')).sort((a: any, b: any) => a.runId.localeCompare(b.runId)),
      ).toEqual(
        [
          { runId: pending },
          { runId: idle },
          { runId: stepLost, stepId: 'step_lost', stepName: 'fetch' },
          { runId: elapsed },
        ].sort((a, b) => a.runId.localeCompare(b.runId)),
      );
      // The DLQ peek left the dead-lettered message where it was.
      expect((await drain(dlq, fx.fixture.clients.sqs)).length).toBe(1);
    } finally {
      await fx.close();
    }
  });

  it('usage errors exit 2', async () => {
    expect((await runCli(['redrive', '--stranded', '--older-than', 'soon'], f.env)).code).toBe(2);
    expect((await runCli(['redrive', '--stranded', '--run', 'wrun_x'], f.env)).code).toBe(2);
    expect((await runCli(['redrive', '--stranded', '--namespace', 'Bad_NS'], f.env)).code).toBe(2);
    const help = await runCli(['redrive', '--help']);
    for (const o of ['--run <runId>', '--dry-run', '--stranded', '--older-than <duration>', '--json', 'Exit codes'])
      expect(help.stdout).toContain(o);
  });
});
