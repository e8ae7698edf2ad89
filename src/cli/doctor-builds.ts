/**
 * `doctor`'s "older builds" check: is a build older than the table's format writing to it? After a
 * rollback to 0.1.0, or a process an upgrade missed, such a build runs on a table its own code
 * never checks (0.1.0 has no table check) with core's 860 s inline-ownership lease and no step
 * lease (docs/operations.md, "Rolling back to 0.1.0").
 *
 * The signal is the format stamp every item carries (`fv`, src/schema/formats.ts; unstamped: format
 * 1, 0.1.0 or older). Read from the newest runs and the active ones
 * (src/storage/read/writer-formats.ts: one Query each), it names an older build two ways:
 * - **after a newer one, in one run's log** (no clock involved): a log item whose format is lower
 *   than an earlier item's of the same run, or than the format that created the run. A log item is
 *   put whole by its writer, so its stamp is its writer's.
 * - **creating a run after `init`**: a run view of a format below the table's recorded records
 *   format, created more than {@link SKEW_MARGIN_MS} after `init` wrote the format item. Two clocks
 *   meet there (the writer's `createdAt`, `init`'s `updatedAt`); AWS refuses requests signed more
 *   than 5 minutes off its time, so any two of them are within 10 minutes of each other.
 *
 * Fails where the table would refuse that build if it checked (format 1 writers read format 1 only:
 * a table whose `minReader` is above 1, e.g. after `init --deployment-affinity`, where 0.1.0 runs
 * other deployments' messages on its own code); warns otherwise (a rollback, or a rolling upgrade
 * in progress, which the fix says how to finish).
 */
import type { WorkflowRun, WorkflowRunStatus } from '@workflow/world';
import type { AwsClients } from '../aws/clients.js';
import { describeError } from '../aws/sdk-errors.js';
import type { WorldConfig } from '../config/index.js';
import { createContext } from '../context/world-context.js';
import { readTableFormat, type TableFormat } from '../preflight/format-check.js';
import { UNSTAMPED_FORMAT } from '../schema/formats.js';
import { createStorage, readWriterFormats, storageContext } from '../storage/index.js';
import { mapLimited } from '../util/concurrency.js';

/** How far apart two clocks AWS accepts requests from can be (2 x its 5-minute signing window). */
export const SKEW_MARGIN_MS = 10 * 60_000;
/** Runs read: the newest, and the newest active ones (each: one Query). */
const RUNS_SAMPLED = 20;

/** A doctor check (src/cli/doctor-checks.ts `Check`, narrowed to this check's name and results). */
export interface OlderBuildsCheck {
  check: 'older builds';
  status: 'pass' | 'warn' | 'fail';
  details: string;
  fix?: string;
}

/** One sign of an older build. */
export interface OlderWrite {
  runId: string;
  /** The older build's format (1: unstamped, 0.1.0 or older). */
  format: number;
  /** `after`: its log item follows one of `newer`'s; `created`: it created the run after `init`. */
  how: 'after' | 'created';
  slot?: number;
  newer?: number;
}

/** The build that writes `format`, as the check names it. */
export function olderBuildName(format: number): string {
  return format === UNSTAMPED_FORMAT
    ? '0.1.0 or older (a build from before format versions: no format stamps)'
    : `a build writing format ${format} (older than this table's; CHANGELOG.md lists each release's formats)`;
}

/** The signs of an older build in one run (see the module comment). */
export function olderWritesIn(
  run: Pick<WorkflowRun, 'runId' | 'createdAt'>,
  formats: { created?: number; log: { slot: number; format: number }[] },
  table: Pick<TableFormat, 'recorded' | 'formats' | 'updatedAt'>,
): OlderWrite[] {
  const out: OlderWrite[] = [];
  let newest = formats.created ?? 0;
  for (const item of formats.log) {
    if (item.format < newest) {
      out.push({ runId: run.runId, format: item.format, how: 'after', slot: item.slot, newer: newest });
      break;
    }
    newest = Math.max(newest, item.format);
  }
  const created = formats.created;
  if (
    created !== undefined &&
    table.recorded &&
    table.updatedAt !== undefined &&
    created < table.formats.records &&
    run.createdAt.getTime() > table.updatedAt + SKEW_MARGIN_MS
  )
    out.push({ runId: run.runId, format: created, how: 'created' });
  return out;
}

function describeWrite(w: OlderWrite): string {
  return w.how === 'after'
    ? `run ${w.runId}: log slot ${w.slot} written by format ${w.format} after format ${w.newer}`
    : `run ${w.runId}: created by format ${w.format} after \`init\` recorded the table's format`;
}

/** The check on `config`'s table (see the module comment): its format item read, then its runs. */
export async function checkOlderBuilds(config: WorldConfig, clients: AwsClients): Promise<OlderBuildsCheck> {
  const check = 'older builds';
  let table: TableFormat;
  try {
    table = await readTableFormat(clients.ddb, config.tableName);
  } catch (err) {
    return { check, status: 'warn', details: `could not read the table's format: ${describeError(err)}` };
  }
  const ctx = createContext(config, clients);
  const storage = createStorage(ctx);
  const sctx = storageContext(ctx);
  let runs: Pick<WorkflowRun, 'runId' | 'createdAt'>[];
  let writes: OlderWrite[];
  try {
    const page = (status?: WorkflowRunStatus[]) =>
      storage.runs.list({ pagination: { limit: RUNS_SAMPLED }, resolveData: 'none', ...(status ? { status } : {}) });
    const [newest, active] = await Promise.all([page(), page(['pending', 'running'])]);
    runs = [...new Map([...newest.data, ...active.data].map((r) => [r.runId, r])).values()];
    writes = (
      await mapLimited(runs, 8, async (run) => olderWritesIn(run, await readWriterFormats(sctx, run.runId), table))
    ).flat();
  } catch (err) {
    return {
      check,
      status: 'warn',
      details: `could not read the runs: ${describeError(err)}`,
      fix: 'check the permissions (`eve-world-aws init --print-iam-policy --operator`)',
    };
  }
  if (writes.length === 0)
    return {
      check,
      status: 'pass',
      details: `no older build wrote the ${runs.length} run${runs.length === 1 ? '' : 's'} read (the newest and the active)`,
    };
  const oldest = Math.min(...writes.map((w) => w.format));
  const shown = writes.slice(0, 3).map(describeWrite);
  const more = writes.length > shown.length ? `\n(${writes.length - shown.length} more)` : '';
  const details = `${olderBuildName(oldest)} is writing to this table:\n${shown.join('\n')}${more}`;
  if (oldest === UNSTAMPED_FORMAT && table.minReader > UNSTAMPED_FORMAT)
    return {
      check,
      status: 'fail',
      details,
      fix:
        `stop it: the table allows readers from format ${table.minReader} on, and 0.1.0 never checks (it ignores eve.dep and ` +
        'runs any deployment\'s messages on its own code); upgrade it to this release (docs/operations.md, "Rolling back to 0.1.0")',
    };
  return {
    check,
    status: 'warn',
    details,
    fix: table.recorded
      ? 'upgrade it to this release; if you rolled back to it on purpose, set WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS=20 on every process of it (docs/operations.md, "Rolling back to 0.1.0")'
      : 'a rolling upgrade is in progress: deploy this release to every process, then run `eve-world-aws init` (docs/operations.md, "The upgrade procedure")',
  };
}
