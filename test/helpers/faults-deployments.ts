/**
 * The fault suite's deployment scenario (issue 39): two deployments of one app on a table with
 * deployment affinity, each served by its own consumer process (test/helpers/faults-consumer-child.mjs,
 * `deploymentId` set), with wire faults and duplicate deliveries injected between the Worlds and
 * the emulators. Runs are started alternately on both by two client Worlds (as the CLI starts them:
 * no deployment of their own, a fixed target); half-way, the old deployment is retired by force
 * while its process runs and its runs are in flight (src/cli/deployments.ts `retireDeployment`, the
 * command's code), as an operator does who gives up on draining it.
 *
 * What must hold (`deploymentViolations`), faults off for the checks:
 * - every run of the new deployment completes exactly once with the right value;
 * - every run of the old deployment either completed, or failed with `DEPLOYMENT_MISMATCH` exactly
 *   once, and only one the retirement named first (active when it was retired); every start on it
 *   afterwards is refused;
 * - every step body ran in a process of its run's own deployment (never on the other);
 * - dense logs, one terminal per step and run, an empty DLQ, a drained queue, nothing stranded.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { eventIdToSlot } from '@workflow/world';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { retireDeployment } from '../../src/cli/deployments.js';
import { createContext } from '../../src/context/world-context.js';
import { readDeployment } from '../../src/deployment/registry.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { reconcile } from '../../src/provision/index.js';
import { createTransport } from '../../src/queue/transport.js';
import { AFFINITY_MIN_READER } from '../../src/schema/formats.js';
import { createFixture } from './aws.js';
import { startFaultProxies } from './faults-proxy.js';
import { startChildren } from './faults-suite.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, '..', 'e2e', 'app', '.well-known', 'workflow', 'v1');
const OLD = 'dep-old';
const NEW = 'dep-new';
const RESULT = 3 + (0 + 1 + 2 + 3);

export interface DeploymentFaultReport {
  scenario: string;
  seed: number;
  runs: number;
  /** Runs started on each deployment (old: before the retirement returned, and refused after it). */
  startedOld: number;
  startedNew: number;
  refusedAfterRetire: number;
  /** Starts on the old deployment that were not refused after its retirement (must be 0). */
  acceptedAfterRetire: number;
  completedOld: number;
  completedNew: number;
  /** Old runs failed with DEPLOYMENT_MISMATCH; those started after the retirement returned (must be 0). */
  failedByRetire: number;
  failedLate: number;
  /** Runs the retirement named as failing (active when it was retired), and failed runs it did not name (must be 0). */
  namedFailing: number;
  failedUnnamed: number;
  /** Runs of the new deployment that did not complete, and runs ending any other way. */
  newNotCompleted: number;
  otherEnds: number;
  wrongResult: number;
  holeyLogs: number;
  badStepTerminals: number;
  badRunTerminals: number;
  /** Step bodies that ran in a process of the other deployment (must be 0). */
  bodiesOnOtherDeployment: number;
  extraBodies: number;
  dlqMessages: number;
  queueLeft: number;
  /** What was left in the queue, when anything was. */
  leftDetails?: string[];
  injected: Record<string, number>;
  seconds: number;
}

export async function runDeploymentScenario(opts: {
  stackEnv: Record<string, string>;
  runs: number;
  seed?: number;
  rate?: number;
  log?: (m: string) => void;
}): Promise<DeploymentFaultReport> {
  const t0 = performance.now();
  const seed = opts.seed ?? 1;
  const rate = opts.rate ?? 0.02;
  const log = opts.log ?? (() => {});
  const proxies = await startFaultProxies(opts.stackEnv, seed);
  const fixture = await createFixture({ EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10', ...proxies.env }, 'fdp');
  // `init --deployment-affinity`.
  await reconcile(fixture.clients, fixture.config, 'apply', { minReader: AFFINITY_MIN_READER, affinity: true });
  const ctx = createContext(fixture.config, fixture.clients);
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  const countedSteps = manifest.workflows['workflows/checklist.ts'].countedSteps;
  const [oldProcs, newProcs] = await Promise.all(
    [OLD, NEW].map((id) => startChildren(1, fixture.env, { deploymentId: id }, log)),
  );
  const clients: Record<string, AwsWorld> = {
    [OLD]: createWorld({ config: fixture.config, clients: fixture.clients, client: { deployment: OLD } }),
    [NEW]: createWorld({ config: fixture.config, clients: fixture.clients, client: { deployment: NEW } }),
  };
  setWorld(clients[NEW]);
  const report: DeploymentFaultReport = {
    scenario: `two deployments, the old retired by force half-way (${Math.round(rate * 100)}% throttle/5xx/lost responses, 10% duplicates)`,
    seed,
    runs: opts.runs,
    startedOld: 0,
    startedNew: 0,
    refusedAfterRetire: 0,
    acceptedAfterRetire: 0,
    completedOld: 0,
    completedNew: 0,
    failedByRetire: 0,
    failedLate: 0,
    namedFailing: 0,
    failedUnnamed: 0,
    newNotCompleted: 0,
    otherEnds: 0,
    wrongResult: 0,
    holeyLogs: 0,
    badStepTerminals: 0,
    badRunTerminals: 0,
    bodiesOnOtherDeployment: 0,
    extraBodies: 0,
    dlqMessages: 0,
    queueLeft: 0,
    injected: {},
    seconds: 0,
  };
  const prefix = `fdp-${seed}-${Date.now()}`;
  const started: Array<{ runId: string; on: string; label: string; beforeRetire: boolean }> = [];
  let retired: Promise<void> | undefined;
  let retiredReturned = false;
  const inFlight = new Set<Promise<unknown>>();
  const failing = new Set<string>();
  const retire = () =>
    retireDeployment(ctx, OLD, { force: true }).then((r) => {
      report.namedFailing = r.failing.length;
      for (const id of r.failing) failing.add(id);
      retiredReturned = true;
      log(`retired ${OLD} (${r.failing.length} active runs named; its process was live: ${r.wasLive})`);
    });
  proxies.dynamodb.setRules([
    { kind: 'throttle', rate },
    { kind: 'error5xx', rate },
    { kind: 'lose-response', rate },
  ]);
  proxies.sqs.setRules([
    { kind: 'duplicate', rate: 0.1 },
    { kind: 'throttle', rate },
    { kind: 'error5xx', rate },
    { kind: 'lose-response', rate, exceptOps: ['ReceiveMessage'] },
  ]);
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(8, opts.runs) }, async () => {
        while (next < opts.runs) {
          const i = next++;
          // Half-way the old deployment is retired by force (once), while its runs are in flight;
          // the second half starts once the command has returned.
          if (i >= Math.floor(opts.runs / 2)) {
            // Once the starts of the first half have returned, so the runs it names are all it fails.
            retired ??= Promise.allSettled([...inFlight]).then(() => retire());
            await retired;
          }
          const on = i % 2 === 0 ? OLD : NEW;
          const label = `${prefix}:${on}:${i}`;
          // Where the retirement stood when this start began: not begun, in flight, or returned.
          const phase = !retired ? 'before' : retiredReturned ? 'after' : 'during';
          try {
            const starting = start(countedSteps, [label, 3], { world: clients[on] } as never);
            inFlight.add(starting);
            const run = await starting.finally(() => inFlight.delete(starting));
            started.push({ runId: run.runId, on, label, beforeRetire: phase !== 'after' });
            if (on === OLD && phase === 'after') report.acceptedAfterRetire++;
          } catch (err) {
            const refused = /DeploymentUnavailableError|is retired/.test(String(err));
            if (on === OLD && phase !== 'before' && refused) report.refusedAfterRetire++;
            else throw new Error(`run ${label} failed to start: ${String(err)}`);
          }
        }
      }),
    );
    await retired;
    report.startedOld = started.filter((s) => s.on === OLD).length;
    report.startedNew = started.filter((s) => s.on === NEW).length;

    // Every run ends (a completion or, for the old deployment's, the retirement's failure).
    const reader = clients[NEW];
    const deadline = Date.now() + 180_000;
    for (;;) {
      const statuses = await Promise.all(started.map((s) => reader.runs.get(s.runId).then((r) => r.status)));
      if (statuses.every((st) => st !== 'pending' && st !== 'running') || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    for (const p of proxies.all) p.setRules([]);
    const bodyOwner = new Map<string, string>();
    for (const s of started) {
      const events = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await reader.events.list({
          runId: s.runId,
          pagination: { cursor, limit: 1000 },
          resolveData: 'all',
        });
        events.push(...page.data);
        if (!page.hasMore) break;
        cursor = page.cursor ?? undefined;
      }
      if (events.some((e, i) => eventIdToSlot(e.eventId) !== i + 1)) report.holeyLogs++;
      const steps = new Map<string, number>();
      const ends = events.filter((e) => ['run_completed', 'run_failed', 'run_cancelled'].includes(e.eventType));
      for (const e of events) {
        if (e.eventType === 'step_created') steps.set(e.correlationId ?? '', steps.get(e.correlationId ?? '') ?? 0);
        if (e.eventType === 'step_completed' || e.eventType === 'step_failed')
          steps.set(e.correlationId ?? '', (steps.get(e.correlationId ?? '') ?? 0) + 1);
      }
      const end = ends[0] as { eventType: string; eventData?: { errorCode?: string } } | undefined;
      // A run stopped by the retirement may leave a step without a terminal event, never one with two.
      const completed = end?.eventType === 'run_completed';
      for (const n of steps.values()) if (n > 1 || (completed && n !== 1)) report.badStepTerminals++;
      if (ends.length !== 1) report.badRunTerminals++;
      if (end?.eventType === 'run_completed') {
        if (s.on === OLD) report.completedOld++;
        else report.completedNew++;
        const { getRun } = await import('workflow/api');
        if ((await getRun(s.runId).returnValue) !== RESULT) report.wrongResult++;
      } else if (
        s.on === OLD &&
        end?.eventType === 'run_failed' &&
        end.eventData?.errorCode === 'DEPLOYMENT_MISMATCH'
      ) {
        report.failedByRetire++;
        if (!s.beforeRetire) report.failedLate++;
        if (!failing.has(s.runId)) report.failedUnnamed++;
      } else if (s.on === NEW) report.newNotCompleted++;
      else report.otherEnds++;
      bodyOwner.set(s.label, s.on);
    }
    // Step bodies: each in a process of its run's deployment.
    const bodies = [
      ...oldProcs.tally().map((k) => ({ k, in: OLD })),
      ...newProcs.tally().map((k) => ({ k, in: NEW })),
    ].filter((b) => b.k.startsWith(`${prefix}:`));
    const seen = new Set<string>();
    for (const b of bodies) {
      const label = b.k.split(':').slice(0, 3).join(':');
      if (bodyOwner.get(label) !== b.in) report.bodiesOnOtherDeployment++;
      if (seen.has(b.k)) report.extraBodies++;
      seen.add(b.k);
    }
    if ((await readDeployment(ctx, OLD, true))?.status !== 'retired') report.otherEnds++;

    const transport = createTransport(ctx);
    const count = async (url: string) => {
      const a = await fixture.clients.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      return Object.values(a.Attributes ?? {}).reduce((n, v) => n + Number(v), 0);
    };
    const drainEnd = Date.now() + 90_000;
    for (;;) {
      report.queueLeft = await count(await transport.queueUrl());
      if (report.queueLeft === 0 || Date.now() > drainEnd) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    report.dlqMessages = await count(await transport.dlqUrl());
    if (report.queueLeft > 0) {
      // What is left, for the report: each kind, and the visible ones' attributes.
      const a = await fixture.clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: await transport.queueUrl(), AttributeNames: ['All'] }),
      );
      const peek = await fixture.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: await transport.queueUrl(),
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 0,
          WaitTimeSeconds: 20,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      report.leftDetails = [
        JSON.stringify(a.Attributes),
        ...(peek.Messages ?? []).map((m) =>
          JSON.stringify({
            attrs: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue])),
            sys: m.Attributes,
            body: (m.Body ?? '').slice(0, 300),
          }),
        ),
      ];
    }
  } finally {
    for (const p of proxies.all) {
      p.setRules([]);
      for (const [k, v] of Object.entries(p.stats.injected)) report.injected[`${p.service} ${k}`] = v;
    }
    await Promise.all([oldProcs.stop(), newProcs.stop()]);
    setWorld(undefined as never);
    for (const w of Object.values(clients)) await w.close().catch(() => undefined);
    await proxies.close();
    report.seconds = (performance.now() - t0) / 1000;
  }
  return report;
}

/** Everything that must hold, as one list of violations (empty = all good). */
export function deploymentViolations(r: DeploymentFaultReport): string[] {
  const v: string[] = [];
  if (r.acceptedAfterRetire) v.push(`${r.acceptedAfterRetire} starts on the retired deployment were accepted`);
  if (r.newNotCompleted) v.push(`${r.newNotCompleted} runs of the new deployment did not complete`);
  if (r.otherEnds) v.push(`${r.otherEnds} runs ended otherwise than completed or failed by the retirement`);
  if (r.completedOld + r.failedByRetire !== r.startedOld)
    v.push(`${r.startedOld - r.completedOld - r.failedByRetire} runs of the old deployment did not end`);
  if (r.failedLate) v.push(`${r.failedLate} runs started after the retirement failed`);
  if (r.failedUnnamed) v.push(`${r.failedUnnamed} runs failed by the retirement were not named by it first`);
  if (r.wrongResult) v.push(`${r.wrongResult} runs returned a wrong value`);
  if (r.holeyLogs) v.push(`${r.holeyLogs} runs have event ids that are not dense slots`);
  if (r.badStepTerminals) v.push(`${r.badStepTerminals} steps without exactly one terminal event`);
  if (r.badRunTerminals) v.push(`${r.badRunTerminals} runs without exactly one terminal event`);
  if (r.bodiesOnOtherDeployment) v.push(`${r.bodiesOnOtherDeployment} step bodies ran on the other deployment`);
  if (r.dlqMessages) v.push(`${r.dlqMessages} messages in the DLQ`);
  if (r.queueLeft) v.push(`${r.queueLeft} messages left in the queue: ${(r.leftDetails ?? []).join('; ')}`);
  return v;
}
