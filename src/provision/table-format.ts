/**
 * The table's format item, part of the table's report (`format: ...` lines): `init` records and
 * upgrades it, `init --dry-run` says what it would change, `doctor` checks it (the table check);
 * src/preflight/format-check.ts reads it for the runtime.
 *
 * Invariants:
 * - **Additive, never rewriting.** An upgrade step may add items or attributes; it never rewrites
 *   the log of a run (old formats stay readable for as long as the docs promise), so `init` is safe
 *   while runs are running. Every step applied twice is a no-op.
 * - **Never downgrades.** The put is conditional on the recorded formats and `minReader` being at
 *   most this build's: a table a newer build upgraded is reported (drift, with the upgrade step),
 *   never lowered; a concurrent `init` of a newer build wins.
 * - A table without a format item is format 1 (before versioning); the first `init` records it.
 * - **Affinity is recorded once and kept.** `init --deployment-affinity` records it (with
 *   `minReader` raised to what honours `eve.dep`); no `init` removes it (an item recorded with it
 *   keeps it through every later put, which is conditional on the recorded values).
 */
import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expression, when } from '../aws/expression.js';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import {
  AFFINITY_ATTR,
  describeFormats,
  FAMILIES,
  formatItem,
  readTableFormat,
  type TableFormat,
  tableFormatProblem,
  UNRECORDED,
} from '../preflight/format-check.js';
import { FORMATS, type FormatFamily, MIN_READER_OF_WRITES, READER_FORMAT, UPGRADE_DOC } from '../schema/formats.js';
import type { ReconcileMode, ResourceReport } from './settings.js';

/** What each format step changes on a table; `apply` runs the additive migration, if any. */
interface FormatStep {
  /** The format this step reaches (every family at most this). */
  to: number;
  what: string;
  apply?: (ddb: DynamoDBClient, tableName: string) => Promise<void>;
}

/** The upgrade steps, oldest first. A step applies when the table's newest family is below `to`. */
const FORMAT_STEPS: readonly FormatStep[] = [
  {
    to: 2,
    what: 'new items and messages carry their format (`fv`, `eve.fmt`); nothing is rewritten (format-1 items and messages stay readable)',
  },
];

/**
 * The formats the table records after this build's `init`: never lower than what is there.
 * `minReader`: the oldest reader to allow at most (`init --deployment-affinity`:
 * AFFINITY_MIN_READER); `affinity`: record deployment affinity (`init --deployment-affinity`; one
 * recorded stays).
 */
function targetFormat(current: TableFormat, minReader = MIN_READER_OF_WRITES, affinity = false): TableFormat {
  const formats = Object.fromEntries(
    FAMILIES.map((f) => [f, Math.max(current.formats[f], FORMATS[f].current)]),
  ) as Record<FormatFamily, number>;
  return {
    recorded: true,
    formats,
    minReader: Math.max(current.minReader, MIN_READER_OF_WRITES, minReader),
    affinity: current.affinity || affinity,
  };
}

function sameFormat(a: TableFormat, b: TableFormat): boolean {
  return (
    a.recorded === b.recorded &&
    a.minReader === b.minReader &&
    a.affinity === b.affinity &&
    FAMILIES.every((f) => a.formats[f] === b.formats[f])
  );
}

/** `log 2, records 2, messages 2; oldest reader 1` (`; deployment affinity` when recorded). */
function describe(tf: TableFormat): string {
  return `${describeFormats(tf.formats)}; oldest reader ${tf.minReader}${tf.affinity ? '; deployment affinity' : ''}`;
}

async function writeFormat(ddb: DynamoDBClient, tableName: string, next: TableFormat): Promise<void> {
  // Never lower what a newer build recorded, never drop a recorded affinity (applied twice: the
  // same values pass again).
  const notLower = when.all(
    when.atMost('minReader', next.minReader),
    ...FAMILIES.map((f) => when.atMost(f, next.formats[f])),
    ...(next.affinity ? [] : [when.lacks(AFFINITY_ATTR)]),
  );
  const put = expression().when(when.any(when.absent, notLower));
  await ddb.send(
    new PutItemCommand(put.toPutItem(tableName, formatItem(next, 'eve-world-aws init'), { returnOld: false })),
  );
}

/** What became of the format item: a state as a resource's, the lines to report, the fix of a drift. */
export interface FormatReport {
  state: ResourceReport['state'];
  details: string[];
  fix?: string;
}

/**
 * The table's report with its format's folded in: `format:` detail lines; a format drift makes the
 * table drift (with the fix), a recorded or planned format change an `updated` / `would-update` of
 * a table that was present.
 */
export function withFormat(table: ResourceReport, format: FormatReport): ResourceReport {
  const out: ResourceReport = { ...table, details: [...table.details, ...format.details.map((d) => `format: ${d}`)] };
  if (format.state === 'drift' || format.state === 'missing') {
    out.state = table.state === 'missing' ? 'missing' : 'drift';
    if (format.fix) out.fix = table.fix ? `${table.fix}; ${format.fix}` : format.fix;
  } else if (table.state === 'present' && (format.state === 'created' || format.state === 'updated')) {
    out.state = 'updated';
  } else if (table.state === 'present' && (format.state === 'would-create' || format.state === 'would-update')) {
    out.state = 'would-update';
  }
  return out;
}

/**
 * Record (apply), plan (dry-run) or check (verify) the table's format. `tableExists` false: the
 * table is being created or planned, so its format is what this build records on it.
 */
export async function reconcileTableFormat(
  ddb: DynamoDBClient,
  tableName: string,
  mode: ReconcileMode,
  tableExists: boolean,
  /** The oldest reader the table allows after `init` at most (default: what this build's writes need). */
  minReader?: number,
  /** Record deployment affinity (`init --deployment-affinity`). */
  affinity = false,
): Promise<FormatReport> {
  const report = (state: ResourceReport['state'], details: string[], fix?: string): FormatReport => ({
    state,
    details,
    ...(fix ? { fix } : {}),
  });
  if (!tableExists && mode !== 'apply') {
    const next = targetFormat(UNRECORDED, minReader, affinity);
    return mode === 'dry-run'
      ? report('would-create', [`would record ${describe(next)} on the new table`])
      : report('present', []); // the table's own report says it is missing
  }
  const current = await readTableFormat(ddb, tableName);
  const problem = tableFormatProblem(tableName, current);
  if (current.minReader > READER_FORMAT || FAMILIES.some((f) => current.formats[f] > FORMATS[f].current)) {
    // A newer build upgraded the table: this build reads it only if minReader allows, and never
    // lowers it.
    return report(
      problem ? 'drift' : 'present',
      [`${describe(current)}; this build writes ${describeFormats(targetFormat(UNRECORDED).formats)}`],
      problem ? `upgrade eve-world-aws to a build that reads format ${current.minReader} (${UPGRADE_DOC})` : undefined,
    );
  }
  const next = targetFormat(current, minReader, affinity);
  if (current.recorded && sameFormat(current, next)) return report('present', [describe(current)]);
  const from = Math.max(...FAMILIES.map((f) => current.formats[f]));
  const steps = FORMAT_STEPS.filter((s) => s.to > from && s.to <= Math.max(...FAMILIES.map((f) => next.formats[f])));
  const plan = [
    `${current.recorded ? describe(current) : 'no format item: format 1 (written before versioning)'} -> ${describe(next)}`,
    ...steps.map((s) => `upgrade to format ${s.to}: ${s.what}`),
    ...(next.affinity && !current.affinity
      ? [
          'deployment affinity: every process of this build on the table takes part from its next heartbeat (runs finish on the deployment that started them)',
        ]
      : []),
  ];
  if (mode === 'verify') {
    // Only `init` records the upgrade (doctor changes nothing); until then this build refuses the
    // table when its writes need a newer reader than the table allows.
    return problem
      ? report('drift', [problem], 'stop every older process, then run `eve-world-aws init` with this build')
      : report(
          'present',
          plan.map((l) => `init would: ${l}`),
        );
  }
  if (mode === 'dry-run') return report(current.recorded ? 'would-update' : 'would-create', plan);
  for (const s of steps) await s.apply?.(ddb, tableName);
  try {
    await writeFormat(ddb, tableName, next);
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
    // A newer build's init got there first: report what is there now.
    return reconcileTableFormat(ddb, tableName, 'verify', true);
  }
  return report(current.recorded ? 'updated' : 'created', plan);
}
