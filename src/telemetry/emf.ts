/**
 * CloudWatch Embedded Metric Format (EMF) documents: one JSON object per log line, which
 * CloudWatch Logs turns into metrics with no agent and no API call (Lambda writes stdout to its
 * log group). Pure: builds documents, writes nothing.
 *
 *   { "_aws": { "Timestamp": <epoch ms>,
 *               "CloudWatchMetrics": [{ "Namespace": ns, "Dimensions": [[keys…]],
 *                                       "Metrics": [{ "Name": n, "Unit": u }, …] }] },
 *     "<dimension key>": "<string value>", …, "<metric name>": <number> | [<number>, …] }
 *
 * Invariants (the EMF specification's limits, enforced here):
 * - at most {@link MAX_METRICS_PER_DOCUMENT} metric definitions per document and at most
 *   {@link MAX_VALUES_PER_METRIC} values per metric: more is split over several documents;
 * - every dimension key is a root member whose value is a string; at most 30 keys per set;
 * - every metric value is a finite number (others are dropped, never written as null).
 */

export const MAX_METRICS_PER_DOCUMENT = 100;
const MAX_VALUES_PER_METRIC = 100;
const MAX_DIMENSIONS_PER_SET = 30;

export type EmfUnit = 'Count' | 'Milliseconds' | 'Bytes' | 'None';

export interface MetricSeries {
  name: string;
  unit: EmfUnit;
  values: readonly number[];
}

export interface EmfDocument {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: EmfUnit }[] }[];
  };
  [key: string]: unknown;
}

/** Documents carrying `series` under `namespace`, with one dimension set made of `dimensions`. */
export function emfDocuments(
  namespace: string,
  dimensions: Readonly<Record<string, string>>,
  series: readonly MetricSeries[],
  timestamp: number,
): EmfDocument[] {
  const keys = Object.keys(dimensions);
  if (keys.length > MAX_DIMENSIONS_PER_SET) {
    throw new Error(`EMF: ${keys.length} dimensions in one set, at most ${MAX_DIMENSIONS_PER_SET} are allowed`);
  }
  for (const k of keys) {
    if (typeof dimensions[k] !== 'string' || dimensions[k] === '') {
      throw new Error(`EMF: dimension ${k} must be a non-empty string`);
    }
  }
  // Each metric becomes one or more slices of <= 100 values; slice i of every metric goes to
  // "round" i, and a round is cut into documents of <= 100 metrics.
  const rounds: { name: string; unit: EmfUnit; values: number[] }[][] = [];
  for (const s of series) {
    const values = s.values.filter((v) => typeof v === 'number' && Number.isFinite(v));
    for (let i = 0, r = 0; i < values.length; i += MAX_VALUES_PER_METRIC, r++) {
      rounds[r] ??= [];
      rounds[r].push({ name: s.name, unit: s.unit, values: values.slice(i, i + MAX_VALUES_PER_METRIC) });
    }
  }
  const docs: EmfDocument[] = [];
  for (const round of rounds) {
    for (let i = 0; i < round.length; i += MAX_METRICS_PER_DOCUMENT) {
      const part = round.slice(i, i + MAX_METRICS_PER_DOCUMENT);
      const doc: EmfDocument = {
        _aws: {
          Timestamp: timestamp,
          CloudWatchMetrics: [
            { Namespace: namespace, Dimensions: [keys], Metrics: part.map((m) => ({ Name: m.name, Unit: m.unit })) },
          ],
        },
        ...dimensions,
      };
      for (const m of part) doc[m.name] = m.values.length === 1 ? m.values[0] : m.values;
      docs.push(doc);
    }
  }
  return docs;
}
