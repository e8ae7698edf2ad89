/**
 * `eve-world-aws destroy`: remove what `init` created for this configuration (the reverse of
 * `init`; src/provision/destroy.ts decides what that is and never touches anything else).
 *
 * A plan by default; `--yes` deletes. A table, bucket, queue or schedule group that holds data
 * stops the deletion (nothing is deleted) unless `--force` is given as well: told twice.
 */
import { Command } from 'commander';
import { createClients, destroyClients } from '../aws/clients.js';
import { loadConfig } from '../config/index.js';
import { type DestroyReport, destroyResources } from '../provision/destroy.js';
import { exitCodes, type HelpSpec, withHelp } from './shared/help-text.js';
import { CliError, type Label, paintLabel, palette, printJson, renderTable, tableReport } from './shared/output.js';
import { explainAwsError } from './shared/world.js';

interface DestroyCliOptions {
  yes?: boolean;
  force?: boolean;
  json?: boolean;
}

const LABEL: Record<DestroyReport['state'], Label> = {
  absent: ['absent'],
  'would-delete': ['would delete', 'yellow'],
  deleted: ['deleted', 'green'],
  kept: ['KEPT (holds data)', 'red'],
  'not-deleted': ['not deleted'],
};

function render(reports: DestroyReport[], opts: DestroyCliOptions, kmsKeyId?: string): string {
  const p = palette();
  const out = [
    renderTable(
      ['Resource', 'Name', 'State', 'Details'],
      reports.map((r) => [r.kind, r.name, paintLabel(p, LABEL[r.state]), r.detail]),
    ),
  ];
  const kept = reports.filter((r) => r.state === 'kept');
  const todo = reports.filter((r) => r.state === 'would-delete').length;
  if (kept.length > 0)
    out.push(
      `${kept.map((r) => `${r.kind} ${r.name}`).join(', ')} hold${kept.length === 1 ? 's' : ''} data, so nothing ${opts.yes ? 'was' : 'would be'} deleted. ` +
        'Add --force --yes to delete it with everything else (the data is lost).',
    );
  else if (!opts.yes)
    out.push(
      todo > 0 ? `Dry run: would delete ${todo} resource(s); run again with --yes to delete.` : 'Nothing to delete.',
    );
  else out.push(`Deleted ${reports.filter((r) => r.state === 'deleted').length} resource(s).`);
  if (kmsKeyId) out.push(`The KMS key ${kmsKeyId} is yours and is never deleted.`);
  return tableReport(out);
}

const DESTROY_HELP: HelpSpec = {
  notes: [
    'Only the resources this configuration names (EVE_WORLD_AWS_PREFIX, _TABLE, _QUEUE, _DLQ, _BUCKET, _SCHEDULER_GROUP) are touched, never the account\'s shared "default" schedule group, the KMS key or the Scheduler role. If any of them holds data, nothing is deleted unless --force is given too. A CDK deployment is removed with `cdk destroy` instead.',
  ],
  examples: [
    ['eve-world-aws destroy', 'the plan'],
    ['eve-world-aws destroy --yes', 'delete; refuses if anything holds data'],
    ['eve-world-aws destroy --yes --force', 'delete, data included'],
  ],
  exitCodes: exitCodes(
    'deleted, or nothing there, or a plan',
    'refused because a resource holds data, or an AWS error',
  ),
};

export function destroyCommand(): Command {
  return withHelp(new Command('destroy'), DESTROY_HELP)
    .description('Remove what `init` created (schedule group, queue, DLQ, bucket, table): a plan unless --yes')
    .option('--yes', 'delete (without it: print what would be deleted, change nothing)')
    .option('--force', 'also delete resources that hold data (runs, objects, messages, schedules); needs --yes')
    .option('--json', 'print {deleted, resources: [...]} as JSON')
    .action(async (opts: DestroyCliOptions) => {
      const config = loadConfig();
      const clients = createClients(config);
      let reports: DestroyReport[];
      try {
        reports = await destroyResources(clients, config, { apply: opts.yes === true, force: opts.force === true });
      } catch (err) {
        throw explainAwsError(err, config);
      } finally {
        destroyClients(clients);
      }
      const refused = opts.yes === true && reports.some((r) => r.state === 'kept');
      if (opts.json) printJson({ deleted: reports.some((r) => r.state === 'deleted'), resources: reports });
      else process.stdout.write(render(reports, opts, config.kmsKeyId));
      if (refused)
        throw new CliError('nothing was deleted: a resource holds data (see above; add --force to delete it too)');
    });
}
