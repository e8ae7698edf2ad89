/** The Embedded Metric Format specification's rules, as a checker for the documents tests capture. */
const UNITS = new Set(['Seconds', 'Microseconds', 'Milliseconds', 'Bytes', 'Kilobytes', 'Megabytes', 'Count', 'None']);

/** Every violation of the EMF specification in `doc` (empty when it is valid). */
export function emfViolations(doc: unknown): string[] {
  const bad: string[] = [];
  if (typeof doc !== 'object' || doc === null) return ['not an object'];
  const d = doc as Record<string, unknown>;
  const aws = d._aws as Record<string, unknown> | undefined;
  if (typeof aws !== 'object' || aws === null) return ['no _aws member'];
  if (typeof aws.Timestamp !== 'number' || !Number.isInteger(aws.Timestamp) || aws.Timestamp <= 0)
    bad.push('_aws.Timestamp is not a positive integer (epoch ms)');
  const cwm = aws.CloudWatchMetrics;
  if (!Array.isArray(cwm) || cwm.length === 0) return [...bad, '_aws.CloudWatchMetrics is not a non-empty array'];
  for (const [i, dir] of cwm.entries()) {
    const where = `CloudWatchMetrics[${i}]`;
    if (typeof dir.Namespace !== 'string' || dir.Namespace.length === 0 || dir.Namespace.length > 1024)
      bad.push(`${where}.Namespace is not a string of 1..1024`);
    if (!Array.isArray(dir.Dimensions)) bad.push(`${where}.Dimensions is not an array`);
    for (const set of dir.Dimensions ?? []) {
      if (!Array.isArray(set) || set.length > 30) bad.push(`${where}: a dimension set is not an array of <= 30`);
      for (const key of set ?? []) {
        if (typeof d[key] !== 'string') bad.push(`dimension ${key} is not a string member`);
      }
    }
    if (!Array.isArray(dir.Metrics) || dir.Metrics.length === 0 || dir.Metrics.length > 100)
      bad.push(`${where}.Metrics is not an array of 1..100`);
    for (const m of dir.Metrics ?? []) {
      if (typeof m.Name !== 'string' || m.Name.length === 0) bad.push('a metric has no Name');
      if (m.Unit !== undefined && !UNITS.has(m.Unit)) bad.push(`metric ${m.Name} has unit ${m.Unit}`);
      const v = d[m.Name];
      const values = Array.isArray(v) ? v : [v];
      if (values.length === 0 || values.length > 100) bad.push(`metric ${m.Name} has ${values.length} values`);
      if (!values.every((x) => typeof x === 'number' && Number.isFinite(x)))
        bad.push(`metric ${m.Name} is not numeric`);
    }
  }
  return bad;
}
