/**
 * Format versions: the one home of every durable format's version (docs/operations.md, "Upgrading
 * and versions"). Three families, each versioned on its own:
 *
 * - `log`      the event log items `RUN#<runId> / EVT#<slot>` (storage/records/event.ts);
 * - `records`  the World's own items: run, step, wait and hook views, claims (queue idempotency,
 *              hook resumes, attribute writes), the step lease on the step view, delivery
 *              nonces, run keys;
 * - `messages` queue messages, in both forms (SQS attributes, the Scheduler's JSON envelope).
 *
 * Every item of the first two families carries its format in the attribute {@link FORMAT_ATTR};
 * every message in `eve.fmt` (or `f` in the envelope). An unstamped item or message is format 1:
 * everything written before versioning (0.1.0 and the builds before it) is format 1.
 *
 * The table records what is present in its format item (`FORMAT#` / `meta`, src/schema/keys.ts `keys.tableFormat`):
 * the newest format of each family any writer on it was allowed to write, and `minReader`, the
 * oldest reader allowed to touch the table. A build's reader version is {@link READER_FORMAT}.
 *
 * Invariants (the rules a release must keep; docs/operations.md states them for operators):
 * - **Readers first.** A build reads every format from `oldest` to `current` of each family. A
 *   build that writes a new format ships one release after the build that first reads it.
 * - **Writes stay readable by the table's oldest allowed reader.** {@link MIN_READER_OF_WRITES} is
 *   the oldest reader that can read what this build writes; a build whose writes need a newer
 *   reader than the table's `minReader` refuses to start until `init` raised it (src/preflight/format-check.ts).
 * - **Never misread.** A reader that meets a format newer than its `current` refuses the item
 *   ({@link assertItemFormat}: a clear error) or parks the message (src/consumer/delivery/replace.ts),
 *   never guesses. Old items are never rewritten: `init`'s upgrades are additive.
 *
 * The numeric constants below are one per line (`export const X = n;`), so a test can build a
 * "bumped" copy of dist/ by editing them (test/integration/formats.test.ts).
 */

/** Current format of the log items this build writes. */
export const LOG_FORMAT = 2;
/** Current format of the World's own records this build writes. */
export const RECORD_FORMAT = 2;
/**
 * Current format of the queue messages this build writes. Optional attributes every reader looks
 * up by name and may ignore are added without a bump: `eve.failures` (src/consumer/delivery/failures.ts;
 * an older consumer delivers the message as any other and only does not carry the count on).
 */
export const MESSAGE_FORMAT = 2;
/**
 * This build's reader version, compared with a table's `minReader`. 3: honours `eve.dep` (a
 * consumer with deployment affinity on never dispatches another deployment's message).
 */
export const READER_FORMAT = 3;
/** The oldest reader version that can read what this build writes (format 2 adds stamps only). */
export const MIN_READER_OF_WRITES = 1;
/**
 * The oldest reader a table must allow before any process on it turns deployment affinity on
 * (`init --deployment-affinity` raises `minReader` to it): an older consumer ignores `eve.dep` and
 * would run another deployment's message on its own build.
 */
export const AFFINITY_MIN_READER = 3;
/** The oldest format of each family this build still reads (kept for as long as the docs promise). */
const OLDEST_READ_FORMAT = 1;

export type FormatFamily = 'log' | 'records' | 'messages';

/** Per family: what this build writes (and so the newest it reads) and the oldest it reads. */
export const FORMATS: Readonly<Record<FormatFamily, { current: number; oldest: number }>> = {
  log: { current: LOG_FORMAT, oldest: OLDEST_READ_FORMAT },
  records: { current: RECORD_FORMAT, oldest: OLDEST_READ_FORMAT },
  messages: { current: MESSAGE_FORMAT, oldest: OLDEST_READ_FORMAT },
};

/** The attribute that holds an item's format (absent: format 1). */
export const FORMAT_ATTR = 'fv';

/** The SQS message attribute that holds a message's format (absent: format 1). */
export const MESSAGE_FORMAT_ATTR = 'eve.fmt';

/** The format before versioning: what an unstamped item, message or table is. */
export const UNSTAMPED_FORMAT = 1;

/** Where operators read how to upgrade (named in every refusal). */
export const UPGRADE_DOC = 'docs/operations.md, "Upgrading and versions"';

/**
 * An item of a format this build cannot read; the message names the item, its format and this
 * build's. Deliberately no HTTP `status`: core must not mistake it for a conflict (409, its
 * idempotency signal) or a missing entity; to the runtime it is an unexpected error.
 */
export class FormatError extends Error {
  override readonly name = 'FormatError';
  constructor(
    message: string,
    readonly found: number,
    readonly supported: { oldest: number; current: number },
  ) {
    super(message);
  }
}

/** The format of a stamped value: a positive integer, else undefined (unreadable). */
export function parseFormat(raw: unknown): number | undefined {
  const n = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : raw;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : undefined;
}

/**
 * The format of a raw DynamoDB item (`{ fv: { N: '2' } }`), or of an unmarshalled one
 * (`{ fv: 2 }`); absent = {@link UNSTAMPED_FORMAT}; unreadable = undefined.
 */
export function itemFormatOf(item: Record<string, unknown>): number | undefined {
  const raw = item[FORMAT_ATTR];
  if (raw === undefined) return UNSTAMPED_FORMAT;
  if (raw !== null && typeof raw === 'object' && 'N' in raw) return parseFormat((raw as { N: unknown }).N);
  return parseFormat(raw);
}

/**
 * Refuses an item this build cannot read: a format newer than it knows, older than it still reads,
 * or unreadable. `what` names the item in the error, e.g. `log item RUN#r1 / EVT#...3`.
 */
export function assertItemFormat(item: Record<string, unknown>, family: FormatFamily, what: string): void {
  const found = itemFormatOf(item);
  const { current, oldest } = FORMATS[family];
  if (found !== undefined && found >= oldest && found <= current) return;
  const shown = found ?? JSON.stringify(item[FORMAT_ATTR]);
  throw new FormatError(
    `${what} is ${family} format ${shown}; this build of @portfolio/eve-world-aws reads ${family} formats ${oldest} to ${current}. ` +
      (found !== undefined && found > current
        ? `A newer build wrote it: upgrade this process to a build that reads format ${found} (${UPGRADE_DOC}).`
        : `It cannot be read by any build this one upgrades from (${UPGRADE_DOC}).`),
    typeof found === 'number' ? found : Number.NaN,
    { oldest, current },
  );
}

/** The stamp every item write adds: `{ fv: { N } }` for the family. */
export function formatStamp(family: Exclude<FormatFamily, 'messages'>): { [FORMAT_ATTR]: { N: string } } {
  return { [FORMAT_ATTR]: { N: String(FORMATS[family].current) } };
}

/**
 * Why this build must not deliver a message of format `found`, or undefined when it may. Newer:
 * the message is parked for a newer consumer (src/consumer/delivery/replace.ts), never misread.
 */
export function newerMessageFormat(found: number): string | undefined {
  const { current } = FORMATS.messages;
  if (found <= current) return undefined;
  return `message format ${found} is newer than this build reads (messages ${FORMATS.messages.oldest} to ${current}); parked for a consumer that reads format ${found} (upgrade this process: ${UPGRADE_DOC})`;
}
