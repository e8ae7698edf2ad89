/**
 * `eve-world-aws tail <runId>`: follow one run live until it is terminal and its streams are
 * closed. Three presentations of the same records (src/cli/tail-rows.ts, read by the loop of
 * src/cli/tail-follow.ts):
 * - a terminal: the ink view (src/cli/tail-view.tsx), redrawn as records arrive;
 * - a pipe or file: one plain line per record;
 * - `--json`: one NDJSON record per line (`kind: run | event | step | stream | chunk`).
 */
import { Command, Option } from 'commander';
import { fallbackHint, isInstalled, TUI_PEERS } from './peers.js';
import { formatClock, formatDuration, formatTime, parsePositiveInt } from './shared/format.js';
import { CONFIG_ERROR, exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, colorEnabled, EXIT_INTERRUPTED, palette } from './shared/output.js';
import { getRunOrFail, withWorld } from './shared/world.js';
import { followRun } from './tail-follow.js';
import { chunkLines, type RunRow, type TailRow } from './tail-rows.js';

/** Shortest interval between two redraws of the live view. */
const REDRAW_MS = 50;
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

interface TailOptions {
  follow: boolean;
  json?: boolean;
  since?: number;
  stream: string[];
  data?: boolean;
  interval?: number;
}

/** Where records go: written as they arrive, then ended once. */
export interface TailSink {
  write(rec: TailRow): void;
  notice(message: string): void;
  end(): Promise<void>;
}

/** Each record as text on stdout (NDJSON, or plain lines when stdout is not a terminal), notices on stderr. */
function textSink(text: (rec: TailRow) => string): TailSink {
  return {
    write: (rec) => void process.stdout.write(text(rec)),
    notice: (m) => void process.stderr.write(`note: ${m}\n`),
    end: async () => {},
  };
}

/** One human line per record (stdout is not a terminal). */
function plainLine(rec: TailRow, color = false): string[] {
  const p = palette(color);
  switch (rec.kind) {
    case 'run':
      return [
        `${p.bold(`run ${rec.runId}`)} workflow=${rec.workflowName}${rec.deploymentId ? ` deployment=${rec.deploymentId}` : ''} status=${rec.status} started=${formatTime(rec.startedAt ?? rec.createdAt)}` +
          ` duration=${formatDuration(rec.durationMs)}${rec.error ? ` error=${JSON.stringify(rec.error)}` : ''}` +
          (rec.waiting && rec.waiting.length > 0 ? ` waiting for: ${rec.waiting.join('; ')}` : ''),
      ];
    case 'event':
      return [
        `#${rec.slot} ${rec.eventType} ${rec.correlationId ?? '-'} ${rec.stepName ?? '-'} ${formatClock(rec.createdAt)}${rec.messageId ? ` message=${rec.messageId}` : ''}${rec.preview ? ` ${rec.preview}` : ''}`,
      ];
    case 'step':
      return [
        `step ${rec.stepName} ${rec.stepId} ${rec.status} attempt=${rec.attempt} duration=${formatDuration(rec.durationMs)}${rec.error ? ` error=${JSON.stringify(rec.error)}` : ''}`,
      ];
    case 'stream':
      return [`stream ${rec.stream} ${rec.done ? 'closed' : 'opened'}`];
    case 'chunk':
      return chunkLines(rec).map((l) => `[${rec.stream}#${rec.index}] ${l}`);
  }
}

/**
 * The live ink view; `follow: false` renders everything once (no height limit). ink and React are
 * loaded only here, so the other commands (and piped tails) do not pay for them at startup.
 */
async function inkSink(runId: string, follow: boolean, stdout: NodeJS.WriteStream = process.stdout): Promise<TailSink> {
  const [{ render }, { createElement }, view] = await Promise.all([
    import('ink'),
    import('react'),
    import('./tail-view.js'),
  ]);
  let state = view.emptyTailState();
  const color = colorEnabled(stdout);
  const tree = () =>
    createElement(view.TailView, {
      runId,
      state,
      now: Date.now(),
      columns: stdout.columns || 120,
      rows: follow ? stdout.rows || 40 : Number.POSITIVE_INFINITY,
      color,
      follow,
    });
  const instance = render(tree(), { stdout, exitOnCtrlC: false, patchConsole: false });
  // Redraws are coalesced (at most one per REDRAW_MS): a burst of records costs one render, so a
  // run with 100k records is not 100k renders of an ever longer view.
  let pending: NodeJS.Timeout | undefined;
  const redraw = () => {
    pending ??= setTimeout(() => {
      pending = undefined;
      instance.rerender(tree());
    }, REDRAW_MS);
  };
  // Keeps a running run's duration ticking between records.
  const tick = setInterval(() => instance.rerender(tree()), 1000);
  tick.unref();
  return {
    write(rec) {
      state = view.reduceTail(state, rec);
      redraw();
    },
    notice(m) {
      state = { ...state, notice: m };
      redraw();
    },
    async end() {
      clearInterval(tick);
      clearTimeout(pending);
      state = { ...state, finished: true };
      instance.rerender(tree());
      instance.unmount();
      await instance.waitUntilExit();
    },
  };
}

/** Whether ink would take this process for a CI job (its `is-in-ci` rule). */
function inCi(env: NodeJS.ProcessEnv): boolean {
  return ['CI', 'CONTINUOUS_INTEGRATION'].some((k) => k in env && env[k] !== '0' && env[k] !== 'false');
}

async function runTail(runId: string, opts: TailOptions): Promise<void> {
  const missing = TUI_PEERS.filter((n) => !isInstalled(n));
  // Under CI (CI or CONTINUOUS_INTEGRATION set, as ink reads them) ink draws only the last frame,
  // at exit: a live view that shows nothing while it follows. Plain lines there, as on a pipe.
  const terminal = !opts.json && process.stdout.isTTY === true && !inCi(process.env);
  // Said once, on stderr, before any output: a terminal user expects the live view.
  if (terminal && missing.length > 0)
    process.stderr.write(`note: ${fallbackHint('tail', missing, 'The live view', 'prints plain lines')}\n`);
  await withWorld({ resolvePayloads: opts.data === true }, async (w) => {
    await getRunOrFail(w, runId);
    const ac = new AbortController();
    const stop = () => ac.abort();
    for (const s of STOP_SIGNALS) process.once(s, stop);
    // `tail ... | head`: the reader went away; stop quietly instead of crashing on EPIPE. The
    // listener stays for the rest of the process (later writes would fail the same way).
    let pipeClosed = false;
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      pipeClosed = true;
      ac.abort();
    });
    const color = colorEnabled();
    const sink = opts.json
      ? textSink((rec) => `${JSON.stringify(rec)}\n`)
      : terminal && missing.length === 0
        ? await inkSink(runId, opts.follow)
        : textSink((rec) => `${plainLine(rec, color).join('\n')}\n`);
    let last: RunRow | undefined;
    try {
      for await (const rec of followRun(w.world, runId, {
        follow: opts.follow,
        since: opts.since,
        streams: opts.stream.length > 0 ? opts.stream : undefined,
        intervalMs: opts.interval,
        signal: ac.signal,
        onNotice: (m) => sink.notice(m),
      })) {
        if (rec.kind === 'run') last = rec;
        if (!pipeClosed) sink.write(rec);
      }
    } finally {
      for (const s of STOP_SIGNALS) process.off(s, stop);
      await sink.end();
    }
    if (pipeClosed) return;
    if (ac.signal.aborted) throw new CliError('', EXIT_INTERRUPTED);
    if (last && (last.status === 'failed' || last.status === 'cancelled'))
      throw new CliError(`run ${runId} ${last.status}${last.error ? `: ${last.error}` : ''}`);
  });
}

const TAIL_HELP: HelpSpec = {
  notes: ['On a terminal the view redraws in place; piped, it prints one line per record.'],
  examples: [
    ['eve-world-aws tail wrun_01JD...', 'follow until the run finishes'],
    ['eve-world-aws tail wrun_01JD... --no-follow', 'a snapshot'],
    ['eve-world-aws tail wrun_01JD... --json | jq -c \'select(.kind=="chunk")\''],
  ],
  exitCodes: exitCodes(
    'the run completed (a snapshot: it has not failed)',
    'the run failed or was cancelled, or no such run',
    CONFIG_ERROR,
    { 130: 'interrupted (Ctrl-C)' },
  ),
};

export function tailCommand(): Command {
  return withHelp(new Command('tail'), TAIL_HELP)
    .description('Follow a run live: status, event log, steps and stream chunks, until it is terminal')
    .argument('<runId>', 'the run id (wrun_...)')
    .option('--no-follow', 'print a snapshot of the run now and exit')
    .option('--json', 'print NDJSON records (kind: run, event, step, stream, chunk) for jq')
    .option('--since <slot>', 'start the event log at this slot (1 = the first event)', parsePositiveInt)
    .addOption(
      new Option('--stream <name>', 'show only this stream (repeatable)')
        .argParser((value: string, previous: string[]) => [...previous, value])
        .default([] as string[], 'every stream of the run'),
    )
    .option('--data', 'resolve S3 pointers in event data (reads S3); without it large values show as <s3 key>')
    .option(
      '--interval <ms>',
      'fastest poll interval while data flows (idle polling backs off to 1 s)',
      parsePositiveInt,
    )
    .action(runTail);
}
