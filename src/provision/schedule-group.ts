/**
 * The World's own EventBridge Scheduler schedule group (EVE_WORLD_AWS_SCHEDULER_GROUP, by default
 * named from the prefix like the table): where its long-wait schedules live, and the only group
 * whose schedules the Scheduler role trusts (`aws:SourceArn`). Reconciled only when a scheduler
 * role is configured; without one the World never calls the Scheduler.
 *
 * Modes as in ./settings.ts: `apply` creates a missing group (a group of that name that exists, or
 * that another `init` created a moment ago, is verified, never an error), `dry-run` says it would,
 * `verify` reports it missing. The account's shared `default` group is only ever used when
 * configured explicitly; it always exists, and {@link sharedScheduleGroupWarning} says what
 * trusting it means.
 */
import {
  CreateScheduleGroupCommand,
  GetScheduleGroupCommand,
  type GetScheduleGroupCommandOutput,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { isConflict, unlessMissing } from '../aws/sdk-errors.js';
import { SHARED_SCHEDULE_GROUP, VARIABLES, type WorldConfig } from '../config/index.js';
import type { ReconcileMode, ResourceReport } from './settings.js';

/**
 * The warning `init` prints when the scheduler role would be trusted for the account's shared
 * group (an explicit EVE_WORLD_AWS_SCHEDULER_GROUP=default); undefined otherwise.
 */
export function sharedScheduleGroupWarning(
  config: Pick<WorldConfig, 'schedulerRoleArn' | 'schedulerGroup' | 'prefix'>,
): string | undefined {
  if (!config.schedulerRoleArn || config.schedulerGroup !== SHARED_SCHEDULE_GROUP) return undefined;
  return (
    `${VARIABLES.schedulerGroup.name}=${SHARED_SCHEDULE_GROUP} is the account's shared "${SHARED_SCHEDULE_GROUP}" schedule group, ` +
    'so any schedule there may use the Scheduler role and send to the queue. ' +
    `Unset it to use this World's own group (${config.prefix}, created by \`eve-world-aws init\`) and update the role's trust policy ` +
    '(`eve-world-aws init --print-iam-policy --scheduler-role`; docs/security.md).'
  );
}

const getGroup = (scheduler: SchedulerClient, name: string) =>
  unlessMissing(scheduler.send(new GetScheduleGroupCommand({ Name: name })));

/** A group that exists: usable when ACTIVE; the shared group is named in the details. */
function verified(report: ResourceReport, group: GetScheduleGroupCommandOutput, config: WorldConfig): ResourceReport {
  if (group.State !== undefined && group.State !== 'ACTIVE') {
    report.state = 'drift';
    report.details.push(`state ${group.State}, expected ACTIVE (schedules cannot be created in it)`);
    report.fix = 'wait until the group is deleted, then run `eve-world-aws init` to create it again';
    return report;
  }
  report.details.push(`exists (${group.State ?? 'ACTIVE'})`);
  const warning = sharedScheduleGroupWarning(config);
  if (warning) report.details.push(`warning: ${warning}`);
  return report;
}

export async function reconcileScheduleGroup(
  scheduler: SchedulerClient,
  config: WorldConfig,
  mode: ReconcileMode,
): Promise<ResourceReport> {
  const name = config.schedulerGroup;
  const report: ResourceReport = { kind: 'schedule-group', name, state: 'present', details: [] };
  const existing = await getGroup(scheduler, name);
  if (existing) return verified(report, existing, config);
  if (mode !== 'apply') {
    report.state = mode === 'dry-run' ? 'would-create' : 'missing';
    report.details.push(
      `create schedule group ${name} (long-wait schedules; the Scheduler role trusts only this group)`,
    );
    if (mode === 'verify') report.fix = 'run `eve-world-aws init`';
    return report;
  }
  try {
    await scheduler.send(new CreateScheduleGroupCommand({ Name: name }));
  } catch (err) {
    // Created by someone else since the read (another `init`): verify that one.
    if (!isConflict(err)) throw err;
    const raced = await getGroup(scheduler, name);
    if (raced) return verified(report, raced, config);
    throw err;
  }
  report.state = 'created';
  report.details.push('created');
  return report;
}
