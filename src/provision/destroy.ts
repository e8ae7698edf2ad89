/**
 * Removing what `init` created, behind `eve-world-aws destroy`: the World's own schedule group
 * (with a scheduler role), the queue, its DLQ, the bucket and the table, in that order (the queue
 * names the DLQ in its redrive policy; the table goes last, as it holds the runs).
 *
 * Only the resources this config names are ever touched, by exact name: never the account's shared
 * `default` schedule group, never the KMS key (EVE_WORLD_AWS_KMS_KEY_ID is the operator's) nor the
 * Scheduler role (created outside `init`). A resource that holds data (a table with an item besides
 * its format item, a bucket with an object, a queue with a message, a group with a schedule) stops
 * the whole deletion unless `force`; without `apply` nothing is changed and the report is the plan.
 * Safe twice: a resource already gone is reported `absent`; one deleted by someone else meanwhile
 * counts as deleted.
 */
import { DeleteTableCommand, DescribeTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import {
  DeleteBucketCommand,
  DeleteObjectsCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import {
  DeleteScheduleGroupCommand,
  GetScheduleGroupCommand,
  ListSchedulesCommand,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { DeleteQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { queueNameOf } from '../aws/arn.js';
import type { AwsClients } from '../aws/clients.js';
import { readInput } from '../aws/expression.js';
import { unlessMissing } from '../aws/sdk-errors.js';
import { SHARED_SCHEDULE_GROUP, type WorldConfig } from '../config/index.js';
import { ATTR, keys } from '../schema/keys.js';
import { queueUrl } from './queues.js';
import type { ResourceKind } from './settings.js';

/**
 * `absent`: not there (nothing to do); `would-delete`: the plan; `deleted`; `kept`: it holds data
 * and `force` was not given (with `apply`, or in the plan: it would be kept); `not-deleted`: empty,
 * but left because another resource is kept (with `apply`: all or nothing).
 */
export type DestroyState = 'absent' | 'would-delete' | 'deleted' | 'kept' | 'not-deleted';

export interface DestroyReport {
  kind: Exclude<ResourceKind, 'encryption'>;
  name: string;
  state: DestroyState;
  /** What it holds, e.g. `holds items`, `empty`. */
  detail: string;
  /** It holds data (deleted only with `force`). */
  holdsData: boolean;
}

interface Target {
  kind: DestroyReport['kind'];
  name: string;
  /** undefined: absent; else whether it holds data and a one-phrase description. */
  inspect(): Promise<{ holdsData: boolean; detail: string } | undefined>;
  /** Delete it (a resource already gone counts as deleted). */
  remove(): Promise<unknown>;
}

function tableTarget(clients: AwsClients, name: string): Target {
  const { ddb } = clients;
  return {
    kind: 'table',
    name,
    async inspect() {
      if (!(await unlessMissing(ddb.send(new DescribeTableCommand({ TableName: name }))))) return undefined;
      // The table's format item (src/preflight/format-check.ts) is the World's own, written by
      // `init`: a table holding only it is empty. Two keys suffice: any second item is data.
      const format = keys.tableFormat();
      const page = await ddb.send(
        new ScanCommand({ TableName: name, Limit: 2, ...readInput({ projection: [ATTR.pk, ATTR.sk] }) }),
      );
      const holdsData = (page.Items ?? []).some((i) => !(i.PK?.S === format.PK && i.SK?.S === format.SK));
      return { holdsData, detail: holdsData ? 'holds items (runs, events, streams)' : 'empty' };
    },
    remove: () => unlessMissing(ddb.send(new DeleteTableCommand({ TableName: name }))),
  };
}

function queueTarget(sqs: SQSClient, kind: 'queue' | 'dlq', ref: string): Target {
  let url: string | undefined;
  return {
    kind,
    name: queueNameOf(ref),
    async inspect() {
      url = await queueUrl(sqs, ref);
      if (!url) return undefined;
      const names = [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ] as const;
      const attrs =
        (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: [...names] }))).Attributes ?? {};
      const count = names.reduce((n, a) => n + Number(attrs[a] ?? 0), 0);
      return { holdsData: count > 0, detail: count > 0 ? `holds about ${count} message(s)` : 'empty' };
    },
    remove: () => unlessMissing(sqs.send(new DeleteQueueCommand({ QueueUrl: url }))),
  };
}

function bucketTarget(s3: S3Client, name: string): Target {
  return {
    kind: 'bucket',
    name,
    async inspect() {
      if (!(await unlessMissing(s3.send(new HeadBucketCommand({ Bucket: name }))))) return undefined;
      const page = await s3.send(new ListObjectsV2Command({ Bucket: name, MaxKeys: 1 }));
      const holdsData = (page.KeyCount ?? page.Contents?.length ?? 0) > 0;
      return { holdsData, detail: holdsData ? 'holds objects (payloads, stream chunks)' : 'empty' };
    },
    async remove() {
      // A bucket must be empty to be deleted: delete its objects, a page (<= 1000) at a time.
      let token: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket: name, ContinuationToken: token }));
        const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key as string }));
        if (keys.length > 0)
          await s3.send(new DeleteObjectsCommand({ Bucket: name, Delete: { Objects: keys, Quiet: true } }));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      await unlessMissing(s3.send(new DeleteBucketCommand({ Bucket: name })));
    },
  };
}

function scheduleGroupTarget(scheduler: SchedulerClient, name: string): Target {
  return {
    kind: 'schedule-group',
    name,
    async inspect() {
      if (!(await unlessMissing(scheduler.send(new GetScheduleGroupCommand({ Name: name }))))) return undefined;
      const page = await scheduler.send(new ListSchedulesCommand({ GroupName: name, MaxResults: 1 }));
      const holdsData = (page.Schedules?.length ?? 0) > 0;
      return { holdsData, detail: holdsData ? 'holds schedules (pending long waits)' : 'empty' };
    },
    remove: () => unlessMissing(scheduler.send(new DeleteScheduleGroupCommand({ Name: name }))),
  };
}

/** The resources `init` creates for `config`, in deletion order. */
async function targets(clients: AwsClients, config: WorldConfig): Promise<Target[]> {
  // The account's shared group is never this World's to delete.
  const ownGroup = config.schedulerRoleArn && config.schedulerGroup !== SHARED_SCHEDULE_GROUP;
  return [
    ...(ownGroup ? [scheduleGroupTarget(await clients.scheduler(), config.schedulerGroup)] : []),
    queueTarget(clients.sqs, 'queue', config.queue),
    queueTarget(clients.sqs, 'dlq', config.deadLetterQueue),
    bucketTarget(await clients.s3(), config.bucket),
    tableTarget(clients, config.tableName),
  ];
}

/**
 * Plan (`apply: false`) or delete what `init` created for `config` (see the header). All or
 * nothing: when a resource holds data and `force` is not given, nothing is deleted (a queue left
 * without its DLQ, or a table without its bucket, would be worse than either).
 */
export async function destroyResources(
  clients: AwsClients,
  config: WorldConfig,
  /** `apply`: delete (false: report the plan only); `force`: also delete resources that hold data. */
  opts: { apply: boolean; force: boolean },
): Promise<DestroyReport[]> {
  const found = [];
  for (const t of await targets(clients, config)) found.push({ t, state: await t.inspect() });
  const refused = !opts.force && found.some((f) => f.state?.holdsData);
  const reports: DestroyReport[] = [];
  for (const { t, state } of found) {
    const base = { kind: t.kind, name: t.name };
    if (!state) {
      reports.push({ ...base, state: 'absent', detail: 'not there', holdsData: false });
      continue;
    }
    const { holdsData, detail } = state;
    if (refused || !opts.apply) {
      const state = holdsData && !opts.force ? 'kept' : opts.apply ? 'not-deleted' : 'would-delete';
      reports.push({ ...base, state, detail, holdsData });
      continue;
    }
    await t.remove();
    reports.push({ ...base, state: 'deleted', detail, holdsData });
  }
  return reports;
}
