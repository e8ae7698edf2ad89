/**
 * `eve-world-aws redrive`: put work back on the queue.
 *
 * 1. DLQ -> queue (default): every dead-lettered message, or only those of `--run <id>`, is moved
 *    back by the DLQ mover (./dlq-mover.ts).
 * 2. `--stranded`: runs that nothing will wake get their continuation re-enqueued, as decided by
 *    the stranded-run classifier (./stranded.ts).
 */
import { getQueueTopicPrefix } from '@workflow/world';
import { Command, InvalidArgumentError } from 'commander';
import { createTransport } from '../../queue/transport.js';
import { durationOption, parsePositiveInt } from '../shared/format.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from '../shared/help-text.js';
import { CliError, EXIT_FAILURE, printJson } from '../shared/output.js';
import { withWorld } from '../shared/world.js';
import { moveDlqMessages } from './dlq-mover.js';
import { renderMoveSummary } from './move-summary.js';
import { redriveStranded, renderStranded } from './stranded.js';

interface RedriveOptions {
  run?: string;
  dryRun?: boolean;
  limit?: number;
  json?: boolean;
  stranded?: boolean;
  olderThan: number;
  namespace?: string;
}

/** A queue namespace is valid when @workflow/world can build its queue prefix from it. */
function parseNamespace(v: string): string {
  try {
    getQueueTopicPrefix('workflow', v);
  } catch {
    throw new InvalidArgumentError(
      'must be lowercase letters and digits, starting with a letter (e.g. eve6576652d64656d6f).',
    );
  }
  return v;
}

const REDRIVE_HELP: HelpSpec = {
  notes: [
    'DLQ mode moves each message receive -> send -> delete: a failure between send and delete leaves a duplicate (harmless: the World is idempotent), never a loss. The message attributes (eve.*) are copied unchanged (an S3-offloaded body that could expire under the copy is copied to a fresh key first). Each message is looked at and moved at most once per pass, and one pass handles at most 100,000 messages (run it again for the rest).',
    '--stranded looks at pending/running runs whose last event is older than --older-than, with no wait or retry due in the future, no hook waiting for a resume and no message in the DLQ, and enqueues their continuation with an idempotency key derived from (run, last event), so running it twice sends one message.',
  ],
  examples: [
    ['eve-world-aws redrive --dry-run', 'what would move'],
    ['eve-world-aws redrive --run wrun_01JD...'],
    ['eve-world-aws redrive --stranded --older-than 2h'],
  ],
  exitCodes: exitCodes('done', 'a message could not be moved, or an AWS error', CONFIG_ERROR),
};

export function redriveCommand(): Command {
  return withHelp(new Command('redrive'), REDRIVE_HELP)
    .description('Move dead-lettered messages back to the queue, or re-enqueue stranded runs (--stranded)')
    .option('--run <runId>', 'only messages of this run')
    .option('--dry-run', 'show what would be moved or enqueued and change nothing')
    .option('--limit <n>', 'move at most this many messages', parsePositiveInt)
    .option('--json', 'print the result as JSON')
    .option(
      '--stranded',
      'instead of the DLQ: find active runs that nothing will wake and re-enqueue their continuation',
    )
    .addOption(
      durationOption(
        '--older-than <duration>',
        'with --stranded: only runs idle (no new event) for this long (units: d, h, m, s, e.g. 2h)',
        3_600_000,
      ),
    )
    .option(
      '--namespace <ns>',
      'with --stranded: queue namespace of the app (default: $WORKFLOW_QUEUE_NAMESPACE; eve agents use eve<hex of the agent name>)',
      parseNamespace,
    )
    .action(async (opts: RedriveOptions) => {
      if (opts.stranded && (opts.run || opts.limit))
        throw new CliError('--run and --limit apply to the DLQ mode, not --stranded', 2);
      await withWorld({ deadLetterQueue: true }, async (w) => {
        if (opts.stranded) {
          const s = await redriveStranded(w, {
            olderThanMs: opts.olderThan,
            dryRun: opts.dryRun,
            namespace: opts.namespace,
          });
          if (opts.json) printJson({ mode: 'stranded', ...s });
          else process.stdout.write(renderStranded(s));
          return;
        }
        const transport = createTransport(w.context);
        const [sourceUrl, targetUrl] = await Promise.all([transport.dlqUrl(), transport.queueUrl()]);
        const s = await moveDlqMessages({
          sqs: w.clients.sqs,
          sourceUrl,
          targetUrl,
          runId: opts.run,
          dryRun: opts.dryRun,
          limit: opts.limit,
          payloads: w.context.payloads,
        });
        if (opts.json) printJson({ mode: 'dlq', ...s });
        else process.stdout.write(renderMoveSummary(s));
        if (s.failed > 0) throw new CliError('', EXIT_FAILURE);
      });
    });
}
