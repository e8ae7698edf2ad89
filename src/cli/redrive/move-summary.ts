/**
 * What `eve-world-aws redrive` prints after a pass of the DLQ mover (./dlq-mover.ts): one row per
 * message with its result, the counts, and for each failure what state it left and what to do.
 */
import { queueNameOf } from '../../aws/arn.js';
import { formatTime, plural } from '../shared/format.js';
import { colorEnabled, type Label, paintLabel, palette, renderTable, tableReport } from '../shared/output.js';
import type { MoveResult, MoveSummary } from './dlq-mover.js';

const RESULT_LABEL: Record<MoveResult, Label> = {
  moved: ['moved', 'green'],
  'would-move': ['would move', 'yellow'],
  skipped: ['skipped (other run)', 'dim'],
  'send-failed': ['FAILED to send (left in the DLQ)', 'red'],
  'delete-failed': ['sent, NOT deleted (duplicate)', 'red'],
};

export function renderMoveSummary(s: MoveSummary, color = colorEnabled()): string {
  const p = palette(color);
  const from = queueNameOf(s.source);
  const to = queueNameOf(s.target);
  if (s.messages.length === 0 && s.unlisted === 0) return `The DLQ ${from} is empty; nothing to redrive.\n`;
  const rows = s.messages.map((m) => [
    m.messageId ?? m.sqsMessageId,
    m.queueName ?? '?',
    m.runId ?? '?',
    formatTime(m.sentAt),
    paintLabel(p, RESULT_LABEL[m.result]),
  ]);
  const out = [renderTable(['Message', 'Queue (logical)', 'Run', 'First sent', 'Result'], rows, color)];
  const filter = s.runId ? ` of run ${s.runId}` : '';
  if (s.dryRun)
    out.push(
      `Dry run: would move ${plural(s.matched, 'message')}${filter} from ${from} to ${to}; nothing was changed.`,
    );
  else out.push(`Moved ${plural(s.moved, 'message')}${filter} from ${from} to ${to}.`);
  if (s.unlisted > 0) out.push(`(${plural(s.unlisted, 'more message')} not listed; the counts include them.)`);
  if (s.ended === 'max-messages')
    out.push(
      p.yellow(
        `Stopped after ${s.messages.length + s.unlisted} messages (one pass's memory bound); run redrive again for the rest.`,
      ),
    );
  for (const m of s.messages.filter((x) => x.error)) {
    out.push(
      p.red(`x ${m.messageId ?? m.sqsMessageId}: ${m.error}`) +
        (m.result === 'delete-failed'
          ? '\n  The copy was sent but the original is still in the DLQ; a second redrive delivers it twice (harmless: the World is idempotent).'
          : '\n  Nothing was sent; the message is still in the DLQ. Fix the error and run redrive again.'),
    );
  }
  return tableReport(out);
}
