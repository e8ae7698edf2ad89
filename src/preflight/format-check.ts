/**
 * The table's format check: may this process touch this table? One GetItem of the format item
 * (`FORMAT#` / `meta`, src/schema/keys.ts) per process and table, cached; run by `start()`, by
 * every CLI command before it reads or writes, by `doctor` and `init` (through
 * src/provision/table-format.ts) and by a process that never calls `start()` (the Lambda worker,
 * the flow route) before its first delivery.
 *
 * Invariants, enforced by {@link tableFormatProblem}:
 * - A table whose `minReader` is above this build's {@link READER_FORMAT} is refused: one error
 *   ({@link TableFormatError}) naming both versions and the upgrade step. Nothing is read or
 *   written.
 * - A build whose writes need a newer reader ({@link MIN_READER_OF_WRITES}) than the table allows
 *   is refused until `init` with that build raised `minReader` (migrations run before the code).
 * - A table without a format item was written before versioning: format 1, `minReader` 1. It is
 *   accepted; `init` records its format.
 *
 * The format item is the one item whose shape never changes (every build must read it): the number
 * attributes `log`, `records`, `messages` (newest format of each family present) and `minReader`,
 * plus `updatedAt` and `writtenBy` for people. It carries no `fv` stamp. Additive since this
 * release: `deploymentAffinity` (BOOL true), the table's decision that runs finish on the
 * deployment that started them (src/deployment/membership.ts); absent means no. An older build
 * ignores it, and none reads such a table: affinity comes with `minReader` 3.
 *
 * A table no `init` recorded and that holds no run yet may be recorded by its first process, with
 * affinity, when that process is asked to (EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on, what the CDK
 * construct sets on a new stack): {@link recordNewTableAffinity}, one conditional put that loses to
 * any format item already there.
 */
import { type AttributeValue, type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { expression, when } from '../aws/expression.js';
import { isConditionalCheckFailed } from '../aws/sdk-errors.js';
import {
  AFFINITY_MIN_READER,
  FORMATS,
  type FormatFamily,
  MIN_READER_OF_WRITES,
  READER_FORMAT,
  UNSTAMPED_FORMAT,
  UPGRADE_DOC,
} from '../schema/formats.js';
import { keys } from '../schema/keys.js';

/** What a table's format item says (or implies, when it has none). */
export interface TableFormat {
  /** false: no format item, a table from before versioning (everything on it is format 1). */
  recorded: boolean;
  /** Newest format of each family present on the table. */
  formats: Record<FormatFamily, number>;
  /** The oldest reader version allowed to touch the table. */
  minReader: number;
  /** Runs finish on the deployment that started them (deployment affinity): the table's decision. */
  affinity: boolean;
  /** When `init` last wrote the item (epoch ms, on the clock of the machine that ran it). */
  updatedAt?: number;
}

/** The format item's attribute that records deployment affinity. */
export const AFFINITY_ATTR = 'deploymentAffinity';

/** A process too old (or too new, before `init`) for the table: names both versions and the step. */
export class TableFormatError extends Error {
  override readonly name = 'TableFormatError';
}

export const FAMILIES: readonly FormatFamily[] = ['log', 'records', 'messages'];

/** A table without a format item: written before versioning, everything on it format 1 (shared, so frozen). */
export const UNRECORDED: TableFormat = Object.freeze({
  recorded: false,
  formats: Object.freeze({ log: UNSTAMPED_FORMAT, records: UNSTAMPED_FORMAT, messages: UNSTAMPED_FORMAT }),
  minReader: UNSTAMPED_FORMAT,
  affinity: false,
});

function numberAttr(item: Record<string, { N?: string } | undefined>, name: string): number {
  const n = Number(item[name]?.N);
  return Number.isInteger(n) && n >= 1 ? n : UNSTAMPED_FORMAT;
}

/** The table's format item, read once (strongly consistent), or the format-1 default. */
export async function readTableFormat(ddb: DynamoDBClient, tableName: string): Promise<TableFormat> {
  const out = await ddb.send(new GetItemCommand({ TableName: tableName, Key: marshallKey(), ConsistentRead: true }));
  const item = out.Item as Record<string, { N?: string; S?: string; BOOL?: boolean }> | undefined;
  if (!item) return UNRECORDED;
  const formats = Object.fromEntries(FAMILIES.map((f) => [f, numberAttr(item, f)])) as Record<FormatFamily, number>;
  const updatedAt = Date.parse(item.updatedAt?.S ?? '');
  return {
    recorded: true,
    formats,
    minReader: numberAttr(item, 'minReader'),
    affinity: item[AFFINITY_ATTR]?.BOOL === true,
    ...(Number.isFinite(updatedAt) ? { updatedAt } : {}),
  };
}

/** The format item recording `tf` (`writtenBy`: who wrote it, for people). */
export function formatItem(tf: TableFormat, writtenBy: string): Record<string, AttributeValue> {
  const n = (v: number) => ({ N: String(v) });
  return {
    ...marshallKey(),
    log: n(tf.formats.log),
    records: n(tf.formats.records),
    messages: n(tf.formats.messages),
    minReader: n(tf.minReader),
    ...(tf.affinity ? { [AFFINITY_ATTR]: { BOOL: true } } : {}),
    updatedAt: { S: new Date().toISOString() },
    writtenBy: { S: writtenBy },
  };
}

/**
 * Records this build's formats with deployment affinity on a table no `init` recorded (see the
 * header): one put conditional on there being no format item, so it never overwrites one and two
 * first processes record it once. The caller has checked that the table holds no run. Returns the
 * table's format afterwards (re-read when another writer got there first) and forgets the cached
 * check, so the next {@link checkTableFormat} reads it.
 */
export async function recordNewTableAffinity(ddb: DynamoDBClient, tableName: string): Promise<TableFormat> {
  const formats = Object.fromEntries(FAMILIES.map((f) => [f, FORMATS[f].current])) as Record<FormatFamily, number>;
  const tf: TableFormat = { recorded: true, formats, minReader: AFFINITY_MIN_READER, affinity: true };
  try {
    const item = formatItem(tf, 'the first process on a new table (EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on)');
    await ddb.send(new PutItemCommand(expression().when(when.absent).toPutItem(tableName, item, { returnOld: false })));
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
  }
  checked.get(ddb)?.delete(tableName);
  return readTableFormat(ddb, tableName);
}

function marshallKey() {
  const k = keys.tableFormat();
  return { PK: { S: k.PK }, SK: { S: k.SK } };
}

/** `log 2, records 2, messages 2`. */
export function describeFormats(formats: Record<FormatFamily, number>): string {
  return FAMILIES.map((f) => `${f} ${formats[f]}`).join(', ');
}

/** Why this build must not touch a table of format `tf`, or undefined when it may. */
export function tableFormatProblem(tableName: string, tf: TableFormat): string | undefined {
  if (tf.minReader > READER_FORMAT) {
    return (
      `table ${tableName} needs reader format ${tf.minReader} or later (formats present: ${describeFormats(tf.formats)}); ` +
      `this build of @portfolio/eve-world-aws reads format ${READER_FORMAT}. Upgrade this process to a build that reads ` +
      `format ${tf.minReader} (${UPGRADE_DOC}).`
    );
  }
  if (MIN_READER_OF_WRITES > tf.minReader) {
    return (
      `this build of @portfolio/eve-world-aws writes formats that need reader format ${MIN_READER_OF_WRITES}, and table ` +
      `${tableName} still allows readers from format ${tf.minReader}. Stop every process older than format ` +
      `${MIN_READER_OF_WRITES}, then run \`eve-world-aws init\` with this build to upgrade the table (${UPGRADE_DOC}).`
    );
  }
  return undefined;
}

/**
 * Why no process may take part in deployment affinity on a table of format `tf`, or undefined: the
 * table records affinity but still allows readers that ignore `eve.dep` ({@link
 * AFFINITY_MIN_READER}), which would run another deployment's messages on their own build (only a
 * hand-edited item or a failed `init` leaves it so: `init --deployment-affinity` raises both in one
 * put).
 */
export function affinityFormatProblem(tableName: string, tf: TableFormat): string | undefined {
  if (!tf.affinity || tf.minReader >= AFFINITY_MIN_READER) return undefined;
  return (
    `table ${tableName} pins runs to their deployment but still allows readers from format ${tf.minReader}, ` +
    `which would run another deployment's messages on their own build. Stop every process older than reader format ` +
    `${AFFINITY_MIN_READER}, then run \`eve-world-aws init --deployment-affinity\` (docs/operations.md, "Deployment affinity").`
  );
}

const checked = new WeakMap<DynamoDBClient, Map<string, Promise<TableFormat>>>();

/**
 * Resolves when this process may read and write `tableName`; rejects with {@link TableFormatError}
 * when it may not. Cached per client and table: one GetItem per process. A failed read (throttling,
 * no such table) is not cached, so the next call asks again; a refusal is.
 */
export function checkTableFormat(ddb: DynamoDBClient, tableName: string): Promise<TableFormat> {
  const byTable = checked.get(ddb) ?? new Map<string, Promise<TableFormat>>();
  checked.set(ddb, byTable);
  let p = byTable.get(tableName);
  if (!p) {
    p = readTableFormat(ddb, tableName).then(
      (tf) => {
        const problem = tableFormatProblem(tableName, tf);
        if (problem) throw new TableFormatError(problem);
        return tf;
      },
      (err) => {
        byTable.delete(tableName);
        throw err;
      },
    );
    byTable.set(tableName, p);
  }
  return p;
}
