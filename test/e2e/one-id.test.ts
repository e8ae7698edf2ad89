/**
 * One message, one id to follow, through real core (src/queue/delivery-id.ts): a run started while
 * the in-process consumer polls is delivered early, under its own id E; the id `queue()` returned
 * to core, M, is what `tail` shows for the step that delivery ran, what the early delivery's span
 * link carries (to the span `queue()` ran in, where the World's send of M is) and what core's own
 * spans and the event log carry inside E.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { start } from 'workflow/api';
import { messageIdOfDelivery } from '../../src/queue/delivery-id.js';
import { runCli } from '../helpers/cli.js';
import { type E2e, startE2e } from '../helpers/e2e.js';
import { type InMemoryTracing, parentOf, registerInMemoryTracing } from '../helpers/otel.js';

let otel: InMemoryTracing;
let e2e: E2e;
/** What `queue()` returned to core, by the run the message is for. */
const returned = new Map<string, string[]>();

beforeAll(async () => {
  otel = registerInMemoryTracing();
  e2e = await startE2e();
  const queue = e2e.world.queue.bind(e2e.world);
  e2e.world.queue = (async (...args: Parameters<typeof queue>) => {
    const out = await queue(...args);
    const runId = (args[1] as { runId?: string }).runId;
    if (runId && out.messageId) returned.set(runId, [...(returned.get(runId) ?? []), out.messageId]);
    return out;
  }) as typeof queue;
});
afterAll(async () => {
  await e2e?.close();
  await otel.shutdown();
});

test('tail, the spans and the event log join the early delivery to the id queue() returned', async () => {
  const run = await start(e2e.workflows.addition as never, [2, 3]);
  expect(await run.returnValue).toBe(5);
  const [M] = returned.get(run.runId) ?? [];
  expect(M).toMatch(/^msg_/);

  // The step ran inside the early delivery of the run's first message: its owner is E, minted from M.
  const events = (await e2e.world.events.list({ runId: run.runId, pagination: { limit: 100 } })).data;
  const started = events.find((e) => e.eventType === 'step_started');
  const owner = (started as { eventData?: { ownerMessageId?: string } }).eventData?.ownerMessageId ?? '';
  expect(owner.startsWith(`${M}.early.`)).toBe(true);
  expect(messageIdOfDelivery(owner)).toBe(M);

  // `tail`: the step's event names the message queue() returned, in --json and in plain lines.
  const json = await runCli(['tail', run.runId, '--no-follow', '--json'], e2e.fixture.env);
  expect(json.code).toBe(0);
  const rows = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { kind: string; eventType?: string; messageId?: string });
  expect(rows.find((r) => r.kind === 'event' && r.eventType === 'step_started')?.messageId).toBe(M);
  const plain = await runCli(['tail', run.runId, '--no-follow'], e2e.fixture.env);
  expect(plain.stdout.split('\n').find((l) => / step_started /.test(l))).toContain(`message=${M}`);

  // Spans: the early delivery links to core's queue.publish, which core labelled with M; core's
  // invocation inside the delivery is labelled E.
  const spans = otel.spans();
  const byId = new Map<string, ReadableSpan>(spans.map((s) => [s.spanContext().spanId, s]));
  const early = spans.find(
    (s) => s.attributes['eve_world_aws.delivery.early'] === true && s.attributes['messaging.message.id'] === owner,
  );
  expect(early, 'the early delivery span').toBeDefined();
  expect(early?.attributes['messaging.message.conversation_id']).toBe(M);
  // The link goes to the span queue() ran in (core's `workflow.start` for a run's first message,
  // `queue.publish` for the others), the parent of the World's send of the SQS copy, labelled M.
  const linkedId = early?.links[0]?.context.spanId ?? '';
  expect(early?.links[0]?.attributes?.['messaging.message.id']).toBe(M);
  expect(byId.get(linkedId)?.name).toMatch(/^(workflow\.start|queue\.publish)/);
  const send = spans.find((s) => s.name.startsWith('send ') && parentOf(s) === linkedId);
  expect(send?.attributes['messaging.message.conversation_id']).toBe(M);
  expect(
    spans.some((s) => s.name.startsWith('workflow.execute') && s.attributes['messaging.message.id'] === owner),
  ).toBe(true);
}, 120_000);
