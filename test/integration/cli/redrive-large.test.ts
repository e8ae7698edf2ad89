/**
 * `redrive` on a DLQ larger than one visibility timeout's worth of work (#12): each message is
 * looked at and moved at most once, the pass ends, and memory stays bounded. Receives are slowed
 * by SDK middleware (the calls themselves are real, against fauxqs) so that a pass outlasts a 1 s
 * visibility; the default visibility is tested too.
 */
import { CreateQueueCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { moveDlqMessages } from '../../../src/cli/redrive/dlq-mover.js';
import { encodePayload, envelopeAttributes } from '../../../src/queue/encoding.js';
import { drainQueue, eveId } from '../../helpers/queue.js';
import { type OpsFixture, opsFixture } from '../../helpers/runs.js';

let f: OpsFixture;
let slow: ReturnType<typeof createClients>;

beforeAll(async () => {
  f = await opsFixture({}, 'redl');
  slow = createClients(f.fixture.config);
  // Every receive takes 400 ms longer: ten receives outlast a 1 s visibility several times over.
  slow.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'ReceiveMessageCommand')
        await new Promise((r) => setTimeout(r, 400));
      return next(args);
    },
    { step: 'initialize', name: 'slowReceive' },
  );
});
afterAll(async () => {
  destroyClients(slow);
  await f?.close();
});

let seq = 0;
/** Fresh queue + DLQ pair per test (so counts are exact), filled with `n` messages per run id. */
async function dlqWith(runs: Record<string, number>) {
  const tag = `l${++seq}${Date.now().toString(36)}`;
  const sqs = f.fixture.clients.sqs;
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${f.fixture.config.queue}-${tag}` })))
    .QueueUrl as string;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${f.fixture.config.deadLetterQueue}-${tag}` })))
    .QueueUrl as string;
  const ids: Record<string, string[]> = {};
  for (const [runId, n] of Object.entries(runs)) {
    ids[runId] = [];
    for (let i = 0; i < n; i += 10) {
      const entries = Array.from({ length: Math.min(10, n - i) }, (_, j) => {
        const messageId = `msg_${runId}_${i + j}`;
        ids[runId].push(messageId);
        return {
          Id: String(j),
          MessageBody: encodePayload({ runId }),
          MessageAttributes: envelopeAttributes({ queueName: '__wkf_workflow_wf', messageId, attemptOffset: 0 }),
        };
      });
      await sqs.send(new SendMessageBatchCommand({ QueueUrl: dlqUrl, Entries: entries }));
    }
  }
  return { queueUrl, dlqUrl, ids };
}

const drain = (sqs: SQSClient, url: string) => drainQueue(sqs, url, 120);

describe.concurrent('redrive on a large DLQ', () => {
  it('a dry-run pass longer than the visibility ends, and lists each message once', async () => {
    const { queueUrl, dlqUrl, ids } = await dlqWith({ wrun_A: 45 });
    const s = await moveDlqMessages({
      sqs: slow.sqs,
      sourceUrl: dlqUrl,
      targetUrl: queueUrl,
      dryRun: true,
      visibilityTimeoutSeconds: 1,
    });
    expect(s.matched).toBe(45);
    expect(s.messages.map((m) => m.messageId).sort()).toEqual([...ids.wrun_A].sort());
    expect(['empty', 'nothing-new']).toContain(s.ended);
    expect((await drain(f.fixture.clients.sqs, dlqUrl)).length).toBe(45);
    expect((await drain(f.fixture.clients.sqs, queueUrl)).length).toBe(0);
  });

  it('--run with a visibility shorter than the pass moves each message of the run exactly once and leaves the rest', async () => {
    const { queueUrl, dlqUrl, ids } = await dlqWith({ wrun_A: 25, wrun_B: 25 });
    const s = await moveDlqMessages({
      sqs: slow.sqs,
      sourceUrl: dlqUrl,
      targetUrl: queueUrl,
      runId: 'wrun_A',
      visibilityTimeoutSeconds: 1,
    });
    expect(s).toMatchObject({ moved: 25, matched: 25, failed: 0 });
    expect(s.skipped).toBe(25);
    const moved = (await drain(f.fixture.clients.sqs, queueUrl)).map(eveId);
    expect(moved.sort()).toEqual([...ids.wrun_A].sort()); // no message twice
    expect((await drain(f.fixture.clients.sqs, dlqUrl)).map(eveId).sort()).toEqual([...ids.wrun_B].sort());
  });

  it('--run with the default visibility moves each message of the run exactly once', async () => {
    const { queueUrl, dlqUrl, ids } = await dlqWith({ wrun_A: 15, wrun_B: 15 });
    const s = await moveDlqMessages({
      sqs: f.fixture.clients.sqs,
      sourceUrl: dlqUrl,
      targetUrl: queueUrl,
      runId: 'wrun_A',
    });
    expect(s).toMatchObject({ moved: 15, matched: 15, skipped: 15, failed: 0, ended: 'empty' });
    expect((await drain(f.fixture.clients.sqs, queueUrl)).map(eveId).sort()).toEqual([...ids.wrun_A].sort());
    expect((await drain(f.fixture.clients.sqs, dlqUrl)).map(eveId).sort()).toEqual([...ids.wrun_B].sort());
  });

  it('memory is bounded: at most maxRecords records and maxMessages messages per pass; the rest is counted or left for the next pass', async () => {
    const { queueUrl, dlqUrl } = await dlqWith({ wrun_A: 30 });
    const seen: string[] = [];
    const s = await moveDlqMessages({
      sqs: f.fixture.clients.sqs,
      sourceUrl: dlqUrl,
      targetUrl: queueUrl,
      dryRun: true,
      maxRecords: 5,
      maxMessages: 12,
      onMessage: (m) => seen.push(m.messageId ?? ''),
    });
    expect(s.messages).toHaveLength(5);
    expect(s.unlisted).toBe(7);
    expect(s.matched).toBe(12);
    expect(new Set(seen).size).toBe(12);
    expect(s.ended).toBe('max-messages');
    // Everything held was released: the whole DLQ is visible again.
    expect((await drain(f.fixture.clients.sqs, dlqUrl)).length).toBe(30);
  });
});
