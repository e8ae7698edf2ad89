/**
 * Provisioning: the AWS resources the World needs (one table and its format item, one queue with
 * its DLQ, one bucket, with EVE_WORLD_AWS_SCHEDULER_ROLE_ARN its own schedule group, and with
 * EVE_WORLD_AWS_KMS_KEY_ID their encryption at rest) and {@link reconcile}, which creates what is
 * missing and reports drift in what exists. Used by `init` (apply / dry run), `emulate`, `doctor`
 * (verify), the CDK construct (the IAM table) and the test harness.
 *
 * A layer of its own above the World's parts: no runtime module imports it
 * (test/unit/layers.test.ts), so a Lambda cold start never loads it. Only standard AWS APIs are
 * used, so the same code runs against real AWS and the emulators.
 */
import type { AwsClients } from '../aws/clients.js';
import type { WorldConfig } from '../config/index.js';
import { reconcileEncryption } from './at-rest.js';
import { reconcileBucket } from './bucket.js';
import { reconcileQueues } from './queues.js';
import { reconcileScheduleGroup } from './schedule-group.js';
import type { ReconcileMode, ResourceReport } from './settings.js';
import { reconcileTable } from './table.js';
import { reconcileTableFormat, withFormat } from './table-format.js';

export { TLS_ONLY_SID } from './bucket.js';
export { iamPolicy } from './iam-policy.js';
export { queueDrift } from './queues.js';
export { sharedScheduleGroupWarning } from './schedule-group.js';
export type {
  ReconcileMode,
  ResourceKind,
  ResourceReport,
  ResourceState,
  SettingReport,
  SettingState,
} from './settings.js';

/** Create (apply), plan (dry-run) or check (verify) every resource, in dependency order. */
export async function reconcile(
  clients: AwsClients,
  config: WorldConfig,
  mode: ReconcileMode,
  /**
   * `minReader`: the oldest reader the table allows after `init` at most; `affinity`: record
   * deployment affinity (both: `init --deployment-affinity`).
   */
  options: { minReader?: number; affinity?: boolean } = {},
): Promise<ResourceReport[]> {
  const schema = await reconcileTable(clients.ddb, config.tableName, mode);
  // The table's format item (src/schema/formats.ts), reported with the table: recorded, upgraded
  // (additive) or checked.
  const table = withFormat(
    schema,
    await reconcileTableFormat(
      clients.ddb,
      config.tableName,
      mode,
      schema.state !== 'would-create' && schema.state !== 'missing',
      options.minReader,
      options.affinity,
    ),
  );
  const { dlq, queue } = await reconcileQueues(clients.sqs, config, mode);
  const bucket = await reconcileBucket(await clients.s3(), config.bucket, mode, config.region, config.retentionDays);
  // With a scheduler role: the World's own schedule group (without one the Scheduler is never
  // called).
  const group = config.schedulerRoleArn ? [await reconcileScheduleGroup(await clients.scheduler(), config, mode)] : [];
  // With EVE_WORLD_AWS_KMS_KEY_ID: the key and SSE-KMS on all of the above (./at-rest.ts).
  return [table, dlq, queue, bucket, ...group, ...(await reconcileEncryption(clients, config, mode))];
}

export function hasProblems(reports: ResourceReport[]): boolean {
  return reports.some((r) => r.state === 'drift' || r.state === 'missing');
}
