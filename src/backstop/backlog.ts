/**
 * The backstop never amplifies a backlog (docs/operations.md, "Liveness backstop", Backlog): a run
 * whose message still waits in the queue looks stranded to a check once it waits longer than B + T,
 * and each wake makes core send again (a continuation, and a re-queue of each stranded step). So a
 * run is woken again only when the queue shows no backlog.
 *
 * The gate: a repeat wake (a run woken before whose log has not moved since, `wakes > 0`) is held
 * while SQS shows messages waiting for a consumer (`ApproximateNumberOfMessages` > 0, the visible
 * ones: not those in flight, delayed or hidden for a retry, which a consumer already has or which
 * are not due). A held wake counts in the backoff as a sent one (the DUE item's `wakes`), so a
 * backlog costs no more checks than before. A first wake is never held: the bound for a lost
 * message, 2 (B + T), holds under any load.
 *
 * Bound, by construction: while the queue shows a backlog, a run gets at most one wake, however
 * long the backlog lasts, and that wake makes core send at most one continuation and one re-queue
 * per stranded step (the wake re-opens each stranded step's dispatch key once, ./wake.ts). With N
 * runs owing work behind a backlog: at most N wakes plus N · s step re-queues (s stranded steps a
 * run). Measured in bench/backstop-backlog.mjs.
 *
 * Clocks: none. The count is SQS's own (approximate: it may lag a minute, which only moves when a
 * repeat goes out). If reading it fails, the wake goes out as before (liveness first), warned.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { WorldContext } from '../context/world-context.js';
import { createTransport } from '../queue/transport.js';

/** Messages the queue shows waiting for a consumer; undefined when it cannot be read. */
export type QueueBacklog = () => Promise<number | undefined>;

/** The backlog of `ctx`'s queue (one GetQueueAttributes per call; the queue URL looked up once). */
export function queueBacklog(ctx: WorldContext): QueueBacklog {
  const transport = createTransport(ctx);
  return async () => {
    const out = await ctx.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: await transport.queueUrl(),
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    const n = Number(out.Attributes?.ApproximateNumberOfMessages);
    return Number.isFinite(n) ? n : undefined;
  };
}

/**
 * The gate of one tick: asks `read` at most once, and only when a repeat wake is due. Resolves to
 * the backlog that holds a repeat wake, or undefined when the wake goes out.
 */
export function backlogGate(
  read: QueueBacklog | undefined,
  warn: (message: string) => void,
): (wakesBefore: number) => Promise<number | undefined> {
  let shown: Promise<number | undefined> | undefined;
  return async (wakesBefore) => {
    if (!read || wakesBefore <= 0) return undefined;
    shown ??= read().catch((err) => {
      warn(`[eve-world-aws] backstop: cannot read the queue's backlog, repeat wakes go out: ${String(err)}`);
      return undefined;
    });
    const n = await shown;
    return n !== undefined && n > 0 ? n : undefined;
  };
}
