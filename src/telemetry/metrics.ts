/**
 * The World's metrics: a fixed catalogue ({@link METRICS}), counted in memory and written as
 * CloudWatch EMF lines (./emf.ts) by {@link flushMetrics}: by the Lambda worker at the end of each
 * invocation and by the host's flow route after each request (on by default in Lambda), by the
 * in-process poller every minute when enabled (EVE_WORLD_AWS_METRICS=1, `config.metrics`).
 *
 * Invariants:
 * - Off (the default until {@link enableMetrics}): every record call returns after one boolean
 *   check.
 * - Dimensions are fixed when metrics are enabled (the World's queue name, bounded by deployment):
 *   never a run id, message id, step name or any other per-run value.
 * - A count is written once: flushing takes what was counted and starts from zero.
 * - The state lives on `globalThis`, so two copies of this module in one process (ESM and CJS, or a
 *   framework bundling it twice) count into the same registry.
 */
import { type EmfDocument, type EmfUnit, emfDocuments } from './emf.js';

/** Every metric the World writes, with its unit. Names are the CloudWatch metric names. */
export const METRICS = {
  /** Deliveries by outcome: handled (acked). */
  DeliveriesAcked: 'Count',
  /** Failed (handler error, 4xx, outage, abort): the copy comes back. */
  DeliveriesRetried: 'Count',
  /** Not handled now on purpose: `{timeoutSeconds}`, a long-wait hop, a re-send. */
  DeliveriesDeferred: 'Count',
  /** Failed on the last receive SQS allows: the copy moves to the DLQ. */
  DeliveriesDeadLettered: 'Count',
  /** A second copy of a message being handled in this process, put back without a request. */
  DeliveriesRefusedCopy: 'Count',
  /**
   * A message for another live deployment (deployment affinity) put back without a dispatch, for
   * that deployment's consumers. No target dimension (dimensions are fixed): the per-deployment
   * view is `eve-world-aws deployments` / `doctor`.
   */
  DeliveriesHeldForDeployment: 'Count',
  /** From when the copy was sent (or became due) to when its delivery settled. */
  DeliveryLatency: 'Milliseconds',
  /** How long the copy waited in the queue before it was received. */
  QueueAge: 'Milliseconds',
  RunsStarted: 'Count',
  RunsCompleted: 'Count',
  RunsFailed: 'Count',
  RunsCancelled: 'Count',
  StepsCompleted: 'Count',
  StepsFailed: 'Count',
  StepsRetried: 'Count',
  /** The flow-route circuit breaker opened. */
  BreakerOpens: 'Count',
  /** An AWS call still throttled after the SDK's own retries. */
  Throttles: 'Count',
  /** An event write lost its log slot to a concurrent writer and took the next one. */
  SlotBumps: 'Count',
  StreamChunks: 'Count',
  StreamBytes: 'Bytes',
  /** A payload or queue body written to S3 instead of inline. */
  S3Offloads: 'Count',
  KmsCalls: 'Count',
} as const satisfies Record<string, EmfUnit>;

export type MetricName = keyof typeof METRICS;

export const DEFAULT_NAMESPACE = 'EveWorldAws';

/** Latency samples kept per metric between flushes (a burst beyond it keeps the first ones). */
const MAX_SAMPLES = 1000;

interface Registry {
  enabled: boolean;
  namespace: string;
  dimensions: Record<string, string>;
  counts: Map<MetricName, number>;
  samples: Map<MetricName, number[]>;
  write: (line: string) => void;
}

const SLOT = Symbol.for('eve-world-aws.metrics');

function registry(): Registry {
  const g = globalThis as unknown as Record<symbol, Registry | undefined>;
  g[SLOT] ??= {
    enabled: false,
    namespace: DEFAULT_NAMESPACE,
    dimensions: {},
    counts: new Map(),
    samples: new Map(),
    write: (line) => process.stdout.write(`${line}\n`),
  };
  return g[SLOT];
}

export interface MetricsOptions {
  /** Fixed dimensions of every document (bounded values only). */
  dimensions: Record<string, string>;
  namespace?: string;
  /** Where a document goes (one JSON line). Default: stdout. */
  write?: (line: string) => void;
}

/** Start counting. Calling it again replaces the dimensions and the writer (tests). */
export function enableMetrics(opts: MetricsOptions): void {
  const r = registry();
  r.enabled = true;
  r.dimensions = { ...opts.dimensions };
  r.namespace = opts.namespace ?? DEFAULT_NAMESPACE;
  if (opts.write) r.write = opts.write;
}

/** Stop counting and drop what was not flushed. */
export function disableMetrics(): void {
  const r = registry();
  r.enabled = false;
  r.counts.clear();
  r.samples.clear();
}

/** Add `n` to a Count (or Bytes) metric. */
export function countMetric(name: MetricName, n = 1): void {
  const r = registry();
  if (!r.enabled || !(n > 0)) return;
  r.counts.set(name, (r.counts.get(name) ?? 0) + n);
}

/** Record one sample of a Milliseconds metric (each sample is kept, for percentiles). */
export function observeMetric(name: MetricName, value: number): void {
  const r = registry();
  if (!r.enabled || !Number.isFinite(value)) return;
  const list = r.samples.get(name) ?? [];
  r.samples.set(name, list);
  if (list.length < MAX_SAMPLES) list.push(Math.max(0, value));
}

/** The documents for what was recorded since the last flush, and reset; none when nothing was. */
export function takeMetricDocuments(now = Date.now()): EmfDocument[] {
  const r = registry();
  if (!r.enabled || (r.counts.size === 0 && r.samples.size === 0)) return [];
  const series = [
    ...[...r.counts].map(([name, n]) => ({ name, unit: METRICS[name], values: [n] })),
    ...[...r.samples].map(([name, values]) => ({ name, unit: METRICS[name], values })),
  ];
  r.counts.clear();
  r.samples.clear();
  return emfDocuments(r.namespace, r.dimensions, series, now);
}

/** Write what was recorded since the last flush (one line per document); returns the count. */
export function flushMetrics(now = Date.now()): number {
  const docs = takeMetricDocuments(now);
  const { write } = registry();
  for (const d of docs) write(JSON.stringify(d));
  return docs.length;
}

/** Flush every `intervalMs` until the returned stop is called (which flushes once more). */
export function flushEvery(intervalMs: number): () => void {
  const timer = setInterval(() => flushMetrics(), intervalMs);
  timer.unref?.();
  return () => {
    clearInterval(timer);
    flushMetrics();
  };
}
