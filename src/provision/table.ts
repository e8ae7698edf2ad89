/**
 * The table: one PAY_PER_REQUEST table with the key schema and indexes of {@link TABLE_SCHEMA},
 * created when missing, reported as drift (never changed) when its keys or indexes differ, and
 * hardened with TTL on the expiry attribute and point-in-time recovery.
 */
import {
  CreateTableCommand,
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type TableDescription,
  UpdateContinuousBackupsCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { isValidation, unlessMissing } from '../aws/sdk-errors.js';
import { sleep } from '../aws/sleep.js';
import { GSI1, GSI2, TABLE_SCHEMA } from '../schema/keys.js';
import { applySettings, type ReconcileMode, type ResourceReport, reconcileSettings, type Setting } from './settings.js';

function tableDrift(t: TableDescription): string[] {
  const problems: string[] = [];
  const ks = (t.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
  if (ks !== 'PK:HASH,SK:RANGE') problems.push(`key schema is ${ks}, expected PK (HASH) + SK (RANGE)`);
  for (const g of TABLE_SCHEMA.gsis) {
    const found = t.GlobalSecondaryIndexes?.find((x) => x.IndexName === g.name);
    if (!found) {
      problems.push(`global secondary index ${g.name} is missing`);
      continue;
    }
    const gks = (found.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
    if (gks !== `${g.pk}:HASH,${g.sk}:RANGE`)
      problems.push(`index ${g.name} has keys ${gks}, expected ${g.pk} + ${g.sk}`);
    const want = g.projection;
    const got = found.Projection;
    const attrs = (a: readonly string[] | undefined) => [...(a ?? [])].sort().join(',');
    if (got?.ProjectionType !== want.ProjectionType || attrs(got?.NonKeyAttributes) !== attrs(want.NonKeyAttributes)) {
      problems.push(
        `index ${g.name} projects ${got?.ProjectionType}${got?.NonKeyAttributes ? ` (${attrs(got.NonKeyAttributes)})` : ''}, ` +
          `expected ${want.ProjectionType} (${attrs(want.NonKeyAttributes)})`,
      );
    }
  }
  return problems;
}

/** The table's hardening: TTL on `ttl` (expiry of finished runs and claims) and point-in-time recovery. */
function tableSettings(ddb: DynamoDBClient, table: string): Setting[] {
  const attr = TABLE_SCHEMA.ttlAttribute;
  return [
    {
      name: 'time to live',
      want: `enable TTL on attribute "${attr}"`,
      async check() {
        const d = (await ddb.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription;
        const on = d?.TimeToLiveStatus === 'ENABLED' || d?.TimeToLiveStatus === 'ENABLING';
        if (on && d?.AttributeName === attr) return { ok: true, detail: `enabled on "${attr}"` };
        if (on) {
          return {
            ok: false,
            problem: `enabled on attribute "${d?.AttributeName}", expected "${attr}"`,
            manualFix: 'a table has one TTL attribute; use another table (EVE_WORLD_AWS_TABLE)',
          };
        }
        return { ok: false, problem: `not enabled (status ${d?.TimeToLiveStatus ?? 'unknown'})` };
      },
      async apply() {
        try {
          const spec = { AttributeName: attr, Enabled: true };
          await ddb.send(new UpdateTimeToLiveCommand({ TableName: table, TimeToLiveSpecification: spec }));
        } catch (err) {
          // An SDK retry after a lost response finds its own change applied: that is success.
          if (!(isValidation(err) && /already enabled/i.test(String((err as Error).message)))) throw err;
        }
      },
    },
    {
      name: 'point-in-time recovery',
      want: 'enable point-in-time recovery',
      async check() {
        const d = (await ddb.send(new DescribeContinuousBackupsCommand({ TableName: table })))
          .ContinuousBackupsDescription;
        const status = d?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
        if (status === 'ENABLED') return { ok: true, detail: 'enabled' };
        return { ok: false, problem: `not enabled (status ${status ?? 'unknown'})` };
      },
      async apply() {
        await ddb.send(
          new UpdateContinuousBackupsCommand({
            TableName: table,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        );
      },
    },
  ];
}

export async function reconcileTable(ddb: DynamoDBClient, table: string, mode: ReconcileMode): Promise<ResourceReport> {
  const report: ResourceReport = { kind: 'table', name: table, state: 'present', details: [] };
  const desc = (await unlessMissing(ddb.send(new DescribeTableCommand({ TableName: table }))))?.Table;
  if (!desc) {
    if (mode !== 'apply') {
      report.state = mode === 'dry-run' ? 'would-create' : 'missing';
      report.details.push(
        `create table ${table} (PAY_PER_REQUEST, PK/SK, ${GSI1} + ${GSI2}, TTL on "${TABLE_SCHEMA.ttlAttribute}", point-in-time recovery)`,
      );
      if (mode === 'verify') report.fix = 'run `eve-world-aws init`';
      return report;
    }
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [...TABLE_SCHEMA.keySchema],
        AttributeDefinitions: [...TABLE_SCHEMA.attributeDefinitions],
        GlobalSecondaryIndexes: TABLE_SCHEMA.gsis.map((g) => ({
          IndexName: g.name,
          KeySchema: [
            { AttributeName: g.pk, KeyType: 'HASH' },
            { AttributeName: g.sk, KeyType: 'RANGE' },
          ],
          Projection: {
            ProjectionType: g.projection.ProjectionType,
            NonKeyAttributes: [...g.projection.NonKeyAttributes],
          },
        })),
      }),
    );
    // Real DynamoDB takes a few seconds to become ACTIVE; UpdateTimeToLive needs ACTIVE.
    for (let i = 0; i < 120; i++) {
      const t = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
      if (t?.TableStatus === 'ACTIVE') break;
      await sleep(1000);
    }
    report.state = 'created';
    report.details.push('created (PAY_PER_REQUEST, 2 GSIs)');
  } else {
    const problems = tableDrift(desc);
    if (problems.length > 0) {
      report.state = 'drift';
      report.details.push(...problems);
      report.fix =
        `the table was not created by eve-world-aws or was changed. Use another table (EVE_WORLD_AWS_TABLE), ` +
        `or fix it: ${problems.map((p) => p.replace(/ is missing$/, '')).join('; ')}`;
    } else {
      report.details.push(`keys, ${GSI1} and ${GSI2} as expected`);
    }
  }
  applySettings(report, await reconcileSettings(tableSettings(ddb, table), mode), 'eve-world-aws init');
  return report;
}
