/**
 * EMF documents (src/telemetry/emf.ts, src/telemetry/metrics.ts) against the Embedded Metric
 * Format specification: the `_aws` directive's shape, dimension keys present as strings, numeric
 * values, and the 100-metric / 100-value limits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { type EmfDocument, emfDocuments, MAX_METRICS_PER_DOCUMENT } from '../../../src/telemetry/emf.js';
import {
  countMetric,
  disableMetrics,
  enableMetrics,
  flushMetrics,
  METRICS,
  observeMetric,
} from '../../../src/telemetry/metrics.js';
import { emfViolations } from '../../helpers/emf.js';

afterEach(() => disableMetrics());

describe('EMF documents', () => {
  it('the validator finds planted violations (it can fail)', () => {
    expect(emfViolations({})).toEqual(['no _aws member']);
    const planted = {
      _aws: {
        Timestamp: 'now',
        CloudWatchMetrics: [{ Namespace: 'N', Dimensions: [['Queue']], Metrics: [{ Name: 'X', Unit: 'Parsecs' }] }],
      },
      Queue: 7,
      X: 'one',
    };
    expect(emfViolations(planted)).toEqual([
      '_aws.Timestamp is not a positive integer (epoch ms)',
      'dimension Queue is not a string member',
      'metric X has unit Parsecs',
      'metric X is not numeric',
    ]);
  });

  it('every metric of the catalogue, counted and observed, gives valid documents', () => {
    const lines: string[] = [];
    enableMetrics({ dimensions: { Queue: 'eve-world-queue' }, write: (l) => lines.push(l) });
    for (const [name, unit] of Object.entries(METRICS)) {
      if (unit === 'Milliseconds') for (let i = 0; i < 250; i++) observeMetric(name as keyof typeof METRICS, i);
      else countMetric(name as keyof typeof METRICS, 3);
    }
    expect(flushMetrics(1_700_000_000_000)).toBe(lines.length);
    const docs = lines.map((l) => JSON.parse(l) as EmfDocument);
    expect(docs.length).toBe(3); // 250 samples: 100 + 100 + 50
    for (const d of docs) expect(emfViolations(d)).toEqual([]);
    expect(docs[0].DeliveriesAcked).toBe(3);
    const latency = docs.flatMap((d) => (d.DeliveryLatency as number[] | undefined) ?? []);
    expect(latency).toHaveLength(250);
    // Flushing takes the counts: a second flush writes nothing.
    expect(flushMetrics()).toBe(0);
  });

  it('splits more than 100 metrics over several documents', () => {
    const series = Array.from({ length: 230 }, (_, i) => ({ name: `M${i}`, unit: 'Count' as const, values: [i] }));
    const docs = emfDocuments('N', { Queue: 'q' }, series, 1);
    expect(docs.map((d) => d._aws.CloudWatchMetrics[0].Metrics.length)).toEqual([100, 100, 30]);
    expect(docs.every((d) => emfViolations(d).length === 0)).toBe(true);
    expect(MAX_METRICS_PER_DOCUMENT).toBe(100);
  });

  it('drops non-finite values and refuses a dimension that is not a string', () => {
    const [doc] = emfDocuments(
      'N',
      { Queue: 'q' },
      [{ name: 'L', unit: 'Milliseconds', values: [1, Number.NaN, 2] }],
      1,
    );
    expect(doc.L).toEqual([1, 2]);
    expect(() => emfDocuments('N', { Queue: '' }, [], 1)).toThrow(/Queue must be a non-empty string/);
  });

  it('off by default: nothing is counted or written', () => {
    const lines: string[] = [];
    countMetric('DeliveriesAcked');
    enableMetrics({ dimensions: { Queue: 'q' }, write: (l) => lines.push(l) });
    expect(flushMetrics()).toBe(0);
    expect(lines).toEqual([]);
  });
});

describe('EVE_WORLD_AWS_METRICS', () => {
  it('on by default in Lambda only; 1/0 override; anything else is a clear config error', () => {
    expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'worker', EVE_WORLD_AWS_METRICS: '0' }).metrics).toBe(false);
    expect(loadConfig({ EVE_WORLD_AWS_METRICS: '1' }).metrics).toBe(true);
    expect(loadConfig({}).metrics).toBe(false);
    expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'worker' }).metrics).toBe(true);
    expect(() => loadConfig({ EVE_WORLD_AWS_METRICS: 'lots' })).toThrow(ConfigError);
    expect(() => loadConfig({ EVE_WORLD_AWS_METRICS: 'lots' })).toThrow(
      'EVE_WORLD_AWS_METRICS must be 1 or 0, got "lots". Example: EVE_WORLD_AWS_METRICS=1',
    );
    expect(() => loadConfig({ EVE_WORLD_AWS_LOG_LEVEL: 'loud' })).toThrow(
      /EVE_WORLD_AWS_LOG_LEVEL must be one of debug/,
    );
  });
});
