/**
 * The scheduled sweep as a Lambda handler: `sweepHandler`, re-exported by the package's `/lambda`
 * entry, so the pre-bundled worker (`dist/lambda-worker/index.mjs`) contains it and the CDK
 * construct deploys it from that asset (`index.sweepHandler`), run daily by an EventBridge rule.
 *
 * Per invocation: the context is built from the environment (`loadConfig()`; its clients are
 * destroyed afterwards), {@link sweepOrphans} runs with a signal that aborts `marginMs` before the
 * Lambda deadline (`getRemainingTimeInMillis()`), so the sweep stops starting runs in time and
 * returns normally instead of being killed mid-run; the runs it finished are marked clean, so the
 * next day's sweep continues with the rest. One JSON line summarises the sweep. The invocation
 * fails (throws) when the sweep reported failures (an object S3 refused to delete, a run whose
 * reads failed), so the function's Errors metric, and the construct's alarm on it, see them.
 *
 * The event may carry the CLI's options (`{"graceMs": 0, "dryRun": true, "recheck": true}`, e.g.
 * from `aws lambda invoke`); the scheduled event from EventBridge has none of these fields, so the
 * daily sweep uses the defaults (1 h grace; deployments retire after `deploymentGraceSeconds`,
 * src/sweep/deployments.ts). `{"backstop": true}` (the construct's minute rule) runs one liveness
 * backstop tick instead (src/backstop/); a tick with failed checks fails the invocation.
 */
import { destroyClients } from '../aws/clients.js';
import { runBackstopTick, type TickReport } from '../backstop/index.js';
import { loadConfig, SETTINGS } from '../config/index.js';
import { createContext, type WorldContext } from '../context/world-context.js';
import { consoleLogger, type Logger } from '../telemetry/log.js';
import { type SweepReport, sweepOrphans } from './index.js';

/** The part of the Lambda context this handler reads. */
export interface SweepLambdaContext {
  getRemainingTimeInMillis?: () => number;
}

export interface SweepHandlerOptions {
  /** World context (config, clients). Default: built from `process.env` on each invocation. */
  context?: WorldContext;
  /**
   * Stop starting run prefixes this long before the Lambda deadline (ms): the runs in progress must
   * finish within it. Default: its row, `SETTINGS.sweep.marginMs` (60 s); at most a quarter of the
   * time left at the start.
   */
  marginMs?: number;
  /** Passed to the sweep (default 1 h, as the CLI's `--older-than`); an event's `graceMs` wins. */
  graceMs?: number;
  logger?: Logger;
}

/** Options an invocation's event may carry (other fields, e.g. EventBridge's, are ignored). */
export interface SweepEvent {
  /** The grace (`--older-than`) in ms. */
  graceMs?: number;
  dryRun?: boolean;
  recheck?: boolean;
  /** Run one liveness backstop tick instead of the sweep (the construct's minute rule sends this). */
  backstop?: boolean;
}

/** The options in `event`, type-checked (a wrong type fails the invocation rather than guessing). */
function sweepEventOptions(event: unknown): SweepEvent {
  if (event === null || typeof event !== 'object') return {};
  const e = event as Record<string, unknown>;
  const out: SweepEvent = {};
  if (e.graceMs !== undefined) {
    if (typeof e.graceMs !== 'number') throw new TypeError(`sweep event: graceMs must be a number of ms`);
    out.graceMs = e.graceMs;
  }
  for (const k of ['dryRun', 'recheck', 'backstop'] as const) {
    if (e[k] === undefined) continue;
    if (typeof e[k] !== 'boolean') throw new TypeError(`sweep event: ${k} must be true or false`);
    out[k] = e[k];
  }
  return out;
}

/** What the handler logs (one JSON line) and returns. */
export interface SweepSummary {
  msg: 'eve-world-aws sweep';
  dryRun: boolean;
  /** The signal stopped the sweep before it looked at everything: the next one continues. */
  stopped: boolean;
  durationMs: number;
  runs: SweepReport['runs'];
  objects: SweepReport['objects'];
  heldBodies?: { scanned: number; expired: number; expiredBytes: number };
  /** Deployments retired because they drained (src/sweep/deployments.ts). */
  deployments?: { scanned: number; retired: string[] };
  /** Objects or run prefixes that could not be swept (the invocation then fails). */
  failures: number;
  /** The first few failures, for the log. */
  failed: Array<{ key: string; error: string }>;
}

export function summarize(report: SweepReport, durationMs: number): SweepSummary {
  const failures = [...report.failures, ...(report.heldBodies?.failures ?? [])];
  const h = report.heldBodies;
  return {
    msg: 'eve-world-aws sweep',
    dryRun: report.dryRun,
    stopped: report.stopped,
    durationMs,
    runs: report.runs,
    objects: report.objects,
    ...(h ? { heldBodies: { scanned: h.scanned, expired: h.expired, expiredBytes: h.expiredBytes } } : {}),
    ...(report.deployments
      ? { deployments: { scanned: report.deployments.scanned, retired: report.deployments.retired } }
      : {}),
    failures: failures.length,
    failed: failures.slice(0, 5),
  };
}

/** What a backstop invocation (`{"backstop": true}`) logs (one JSON line) and returns. */
export interface BackstopSummary extends TickReport {
  msg: 'eve-world-aws backstop';
  durationMs: number;
}

/** The handler: a backstop event gets a backstop summary, anything else the sweep's. */
export interface SweepLambdaHandler {
  (event: { backstop: true }, context?: SweepLambdaContext): Promise<BackstopSummary>;
  (event?: unknown, context?: SweepLambdaContext): Promise<SweepSummary>;
}

export function createSweepHandler(opts: SweepHandlerOptions = {}): SweepLambdaHandler {
  const logger = opts.logger ?? consoleLogger;
  return (async (event?: unknown, lambdaContext?: SweepLambdaContext): Promise<SweepSummary | BackstopSummary> => {
    const started = Date.now();
    const fromEvent = sweepEventOptions(event);
    // A bad environment throws here (ConfigError): a failed invocation, like a failed sweep.
    const ctx = opts.context ?? createContext(loadConfig());
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      if (fromEvent.backstop) {
        const report = await runBackstopTick(ctx, { logger });
        const summary: BackstopSummary = { msg: 'eve-world-aws backstop', durationMs: Date.now() - started, ...report };
        logger.info(JSON.stringify(summary));
        if (report.failed > 0)
          throw new Error(`eve-world-aws backstop: ${report.failed} run checks failed; the next tick retries them`);
        return summary;
      }
      const remaining = lambdaContext?.getRemainingTimeInMillis?.();
      const abort = new AbortController();
      if (remaining !== undefined) {
        const margin = Math.min(opts.marginMs ?? SETTINGS.sweep.marginMs.default, remaining / 4);
        const budget = remaining - margin;
        // No time left (or a deadline already passed): the sweep starts nothing.
        if (budget <= 0) abort.abort();
        else timer = setTimeout(() => abort.abort(), budget);
      }
      const report = await sweepOrphans(ctx, {
        graceMs: fromEvent.graceMs ?? opts.graceMs,
        dryRun: fromEvent.dryRun,
        recheck: fromEvent.recheck,
        signal: abort.signal,
      });
      const summary = summarize(report, Date.now() - started);
      logger.info(JSON.stringify(summary));
      if (summary.failures > 0) {
        const first = summary.failed[0];
        throw new Error(
          `eve-world-aws sweep: ${summary.failures} objects or run prefixes could not be swept ` +
            `(first: ${first.key}: ${first.error}); they are kept and the next sweep retries them`,
        );
      }
      return summary;
    } finally {
      if (timer) clearTimeout(timer);
      if (!opts.context) destroyClients(ctx.clients);
    }
  }) as SweepLambdaHandler;
}

/** Ready-made scheduled handler: config from the environment (`index.sweepHandler` in the bundle). */
export const sweepHandler = createSweepHandler();
