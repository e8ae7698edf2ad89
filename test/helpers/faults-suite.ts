/**
 * The fault suite: real workflows (test/e2e/app, compiled by the Workflow DevKit builder) run by
 * the real `@workflow/core` on eve-world-aws, with faults injected on the wire by one
 * {@link startFaultProxy} per emulator endpoint. Used by test/e2e/faults.test.ts (small size) and
 * bench/faults.mjs (large size).
 *
 * What a scenario checks, once every run has returned (faults off for the checks themselves):
 * - every run completed with the right value;
 * - every run's event ids are dense slots 1..n;
 * - exactly one terminal event per step and per run;
 * - the DLQ is empty, the queue drains (nothing left visible, in flight or delayed), no run is
 *   left pending/running and no idempotency claim is left pending (nothing stranded).
 * Duplicated step bodies (a body that ran more than once: side effects, not the event log) are
 * counted and reported separately, split by whether the step was mid-body in a process paused
 * past its step lease (SIGSTOP: the lease's known limit) or not; a SIGKILLed body runs again by
 * design. So are the liveness backstop's wakes (runs a gap left with no message;
 * test/helpers/faults-backstop.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { eventIdToSlot } from '@workflow/world';
import { start } from 'workflow/api';
import { setWorld } from 'workflow/runtime';
import { createClients, destroyClients } from '../../src/aws/clients.js';
import { loadConfig, type WorldTuning } from '../../src/config/index.js';
import { createContext, type WorldContext } from '../../src/context/world-context.js';
import { type AwsWorld, createWorld } from '../../src/index.js';
import { createTransport } from '../../src/queue/transport.js';
import { stepLeaseTtlMs } from '../../src/storage/write/step-lease.js';
import { consoleLogger } from '../../src/telemetry/log.js';
import { createFixture } from '../helpers/aws.js';
import { ensureDist } from './dist.js';
import { BackstopTally } from './faults-backstop.js';
import { type FaultRule, startFaultProxies } from './faults-proxy.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const wellKnown = path.join(here, '..', 'e2e', 'app', '.well-known', 'workflow', 'v1');

export interface FaultScenario {
  name: string;
  dynamodb?: FaultRule[];
  sqs?: FaultRule[];
  s3?: FaultRule[];
  /** A second World consuming the same queue, so duplicate copies are handled at once by two consumers. */
  secondConsumer?: boolean;
  /** Extra config env. */
  env?: Record<string, string>;
  /** Tuning options (e.g. a low payload threshold, so S3 carries the payloads), also for the consumer processes. */
  tuning?: Partial<WorldTuning>;
  /** Consumer processes (test/helpers/faults-consumer-child.mjs on dist/) next to the in-process one. */
  childConsumers?: number;
  /** SIGKILL a consumer process mid-body at most this often and start a replacement. */
  killEveryMs?: number;
  /** Stop killing after this many kills (each costs a visibility timeout of recovery). */
  maxKills?: number;
  /**
   * The clock of each consumer process, by index, this far ahead of the others' (negative:
   * behind), for everything it does (EVE_TEST_CLOCK_SKEW_MS); a replacement keeps its index's.
   */
  childSkewsMs?: number[];
  /** The workflow: countedSteps (default), or slowCountedSteps whose step bodies take `bodyMs`. */
  bodyMs?: number;
  /** SIGSTOP a consumer process mid-body at most this often, for `pauseMs`, then SIGCONT it. */
  pauseEveryMs?: number;
  pauseMs?: number;
  /** Stop pausing after this many pauses. */
  maxPauses?: number;
  /** How long the queue may take to drain after the last run (default 30 s). */
  drainMs?: number;
}

export interface FaultReport {
  scenario: string;
  seed: number;
  runs: number;
  completed: number;
  failedToStart: number;
  wrongResult: number;
  /** Runs whose event ids are not exactly slots 1..n. */
  holeyLogs: number;
  /** Steps with != 1 terminal event; runs with != 1 terminal event. */
  badStepTerminals: number;
  badRunTerminals: number;
  dlqMessages: number;
  /** What is in the DLQ, when anything is: logical queue, message id, receive count. */
  dlqDetails: string[];
  /** Messages still in the queue (visible + in flight + delayed) after the drain wait. */
  queueLeft: number;
  nonTerminalRuns: number;
  pendingClaims: number;
  /** Step bodies: expected (one per step), ran, extra (ran - distinct). */
  bodiesExpected: number;
  bodiesRan: number;
  extraBodies: number;
  extraBodiesPct: number;
  /** Step bodies that ran in the consumer processes (the rest ran in this process). */
  bodiesInChildren: number;
  /**
   * Extra bodies of steps that were mid-body in a process paused past its step lease (the known
   * limit, docs/design.md "Step lease"), and of every other step: the latter must be 0 wherever
   * no process was killed.
   */
  extraBodiesPaused: number;
  extraBodiesUnpaused: number;
  /** Each extra body not attributed to a pause: the step's key and every body's process and time (s since the start). */
  unpausedDetails: string[];
  /** Consumer processes' lines about leases taken over, revoked or lost (s since the start), for the clock scenario. */
  leaseNotes: string[];
  /** Consumer processes' clock skews (ms), by index; SIGSTOPs sent, and how many lasted past the lease ttl. */
  skewsMs: number[];
  paused: number;
  pausedPastLease: number;
  /** Wakes the liveness backstop sent (every process's), and the distinct runs they were for. */
  backstopWakes: number;
  backstopRuns: number;
  /** Injected faults by `service kind:operation`; consumer processes SIGKILLed. */
  injected: Record<string, number>;
  killed: number;
  /** Runs not finished by the deadline: id, status and last event. */
  stuck: string[];
  requests: Record<string, number>;
  seconds: number;
}

/** The default mixed wire-fault scenario: throttling, 5xx and lost responses on all three services. */
export function wireFaults(rate = 0.03): FaultScenario {
  // Lost ReceiveMessage responses hide the received messages for the queue's visibility timeout
  // (900 s by default) until the consumer receives with its own short visibility; left out here.
  return {
    name: `wire faults (${Math.round(rate * 100)}% throttle, ${Math.round(rate * 100)}% 5xx, ${Math.round(rate * 100)}% lost responses)`,
    dynamodb: [
      { kind: 'throttle', rate },
      { kind: 'error5xx', rate },
      { kind: 'lose-response', rate },
    ],
    sqs: [
      { kind: 'throttle', rate },
      { kind: 'error5xx', rate },
      { kind: 'lose-response', rate, exceptOps: ['ReceiveMessage'] },
    ],
    s3: [
      { kind: 'throttle', rate },
      { kind: 'error5xx', rate },
      { kind: 'lose-response', rate },
    ],
    // Payloads and message bodies over 64 bytes go through S3, so S3 faults are on the path.
    tuning: { payloadThresholdBytes: 64 },
  };
}

/** Duplicate SQS deliveries at `rate`, consumed at once by this process and a consumer process. */
export function duplicateDeliveries(rate = 0.1): FaultScenario {
  return {
    name: `duplicate deliveries (${Math.round(rate * 100)}% of sends, two consumer processes)`,
    sqs: [{ kind: 'duplicate', rate }],
    childConsumers: 1,
  };
}

/**
 * Consumer processes SIGKILLed mid-work (right after one starts a step body), at most every
 * `everyMs`, with 10% duplicate deliveries. The queue's
 * visibility is 10 s here: with the default (900 s) a killed consumer's messages come back only
 * after 15 minutes until the consumer receives with its own short visibility.
 */
export function sigkillConsumers(
  everyMs = 3000,
  maxKills = Number(process.env.EVE_FAULTS_MAX_KILLS ?? 4),
): FaultScenario {
  return {
    maxKills,
    name: `SIGKILL a consumer process mid-body every ${everyMs / 1000} s, up to ${maxKills} times (2 processes, visibility 10 s, 10% duplicates)`,
    sqs: [{ kind: 'duplicate', rate: 0.1 }],
    childConsumers: 2,
    killEveryMs: everyMs,
    env: { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10' },
    // A kill can strand a run (e.g. between an idempotency claim and its send): the liveness
    // backstop (src/backstop/) is what wakes it, so the suite runs it at a scale that fits the
    // run deadline (bound 2(B + T) + the step lease: about 30 s here, 3 min at the defaults).
    tuning: { backstopSeconds: 5, backstopTickSeconds: 2 },
  };
}

/**
 * Consumer processes whose clocks run 60 s ahead and 60 s behind beside this healthy one, with 10%
 * duplicates and step bodies that take `bodyMs` (copies and core's polls of a running step
 * arrive mid-body, to any of them), the backstop shortened (B = 5 s, T = 2 s: every quiet run with a
 * running step is judged); one process SIGSTOPped mid-body for `pauseMs` at most every
 * `pauseEveryMs`. The step lease and the backstop compare no clocks across processes, so no step
 * body runs twice but one mid-body in a process paused past its lease (15 s at the default 30 s
 * visibility).
 */
export function clockSkew(
  bodyMs = 3000,
  pauseEveryMs = 20_000,
  pauseMs = 20_000,
  maxPauses = Number(process.env.EVE_FAULTS_MAX_PAUSES ?? 2),
): FaultScenario {
  return {
    name: `consumer processes 60 s ahead and 60 s behind among healthy ones, step bodies of ${bodyMs / 1000} s, 10% duplicates, one SIGSTOPped mid-body for ${pauseMs / 1000} s up to ${maxPauses} times`,
    sqs: [{ kind: 'duplicate', rate: 0.1 }],
    childConsumers: 2,
    childSkewsMs: [60_000, -60_000],
    bodyMs,
    pauseEveryMs,
    pauseMs,
    maxPauses,
    tuning: { backstopSeconds: 5, backstopTickSeconds: 2 },
    // Core in the process 60 s behind delays its wake of a step another invocation runs by what
    // it takes to be left of that invocation's ownership (20 s): up to 80 s. Those wakes (no-ops
    // once the run is over) are what the queue holds after the last run.
    drainMs: 150_000,
    // Debug lines: each backstop check's lease watch (what the report's lease notes quote).
    env: { EVE_WORLD_AWS_LOG_LEVEL: 'debug' },
  };
}

const STEPS_PER_RUN = 3 + 4;
const STUCK = Symbol('stuck'); // countedSteps(prefix, 3): 3 sequential + a fan-out of 4

type FlowPost = (req: Request) => Promise<Response>;

export async function runFaultScenario(
  scenario: FaultScenario,
  opts: {
    stackEnv: Record<string, string>;
    runs: number;
    seed?: number;
    inFlight?: number;
    log?: (m: string) => void;
    /** A run not finished this long after its start counts as stuck (reported, not awaited). Default 120 s. */
    runDeadlineMs?: number;
  },
): Promise<FaultReport> {
  const t0 = performance.now();
  const seed = opts.seed ?? 1;
  const log = opts.log ?? (() => {});
  const proxies = await startFaultProxies(opts.stackEnv, seed);
  const fixture = await createFixture(
    { EVE_WORLD_AWS_CONCURRENCY: '16', ...scenario.env, ...proxies.env },
    'flt',
    scenario.tuning,
  );
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  const workflows = manifest.workflows['workflows/checklist.ts'] as Record<string, { workflowId: string }>;
  const flow = (await import(path.join(wellKnown, 'flow.mjs'))) as { POST: FlowPost };
  const tally = () =>
    ((globalThis as Record<string, unknown>).__e2eStepTally as Map<string, number> | undefined) ??
    new Map<string, number>();

  // The backstop's wakes, from every process's log lines.
  const backstop = new BackstopTally();
  const leaseNotes: string[] = [];
  const children = scenario.childConsumers
    ? await startChildren(
        scenario.childConsumers,
        fixture.env,
        scenario.tuning ?? {},
        log,
        (pid, text) => {
          backstop.chunk(String(pid), text);
          for (const l of text.split('\n'))
            if (/revoked|lost the lease|stood still/.test(l))
              leaseNotes.push(`${pid}@${((performance.now() - t0) / 1000).toFixed(1)} ${l.slice(0, 300)}`);
        },
        scenario.childSkewsMs ?? [],
      )
    : undefined;
  const counted = backstop.logger(consoleLogger);
  const note = (l: string) => {
    if (/revoked|lost the lease|stood still/.test(l))
      leaseNotes.push(`here@${((performance.now() - t0) / 1000).toFixed(1)} ${l.slice(0, 300)}`);
  };
  const consumer = {
    logger: {
      ...counted,
      debug: (m: string, f?: Record<string, unknown>) => {
        note(m);
        counted.debug?.(m, f);
      },
      error: (m: string, f?: Record<string, unknown>) => {
        note(m);
        counted.error(m, f);
      },
    },
  };
  const worlds: AwsWorld[] = [createWorld({ config: fixture.config, clients: fixture.clients, consumer })];
  const extraClients = scenario.secondConsumer ? createClients(loadConfig(fixture.env)) : undefined;
  if (extraClients) worlds.push(createWorld({ config: fixture.config, clients: extraClients, consumer }));
  for (const w of worlds) w.registerHandler('__wkf_workflow_', (req) => flow.POST(req));
  setWorld(worlds[0]);
  for (const w of worlds) await w.start();

  proxies.dynamodb.setRules(scenario.dynamodb ?? []);
  proxies.sqs.setRules(scenario.sqs ?? []);
  proxies.s3.setRules(scenario.s3 ?? []);

  const prefix = `flt-${seed}-${Date.now()}`;
  const report: FaultReport = {
    scenario: scenario.name,
    seed,
    runs: opts.runs,
    completed: 0,
    failedToStart: 0,
    wrongResult: 0,
    holeyLogs: 0,
    badStepTerminals: 0,
    badRunTerminals: 0,
    dlqMessages: 0,
    dlqDetails: [],
    queueLeft: 0,
    nonTerminalRuns: 0,
    pendingClaims: 0,
    bodiesExpected: opts.runs * STEPS_PER_RUN,
    bodiesRan: 0,
    extraBodies: 0,
    extraBodiesPct: 0,
    bodiesInChildren: 0,
    extraBodiesPaused: 0,
    extraBodiesUnpaused: 0,
    unpausedDetails: [],
    leaseNotes: [],
    skewsMs: scenario.childSkewsMs ?? [],
    paused: 0,
    pausedPastLease: 0,
    injected: {},
    backstopWakes: 0,
    backstopRuns: 0,
    killed: 0,
    stuck: [],
    requests: {},
    seconds: 0,
  };
  const runIds: string[] = [];
  // Kills are driven by work, not by the clock: a consumer process is SIGKILLed right after it
  // starts a step body (so it dies mid-work whatever the machine's speed), at most every
  // `killEveryMs`. A kill counts when the signal is sent.
  let lastKill = 0;
  let seenLines = 0;
  let killing = false;
  const killer =
    children && scenario.killEveryMs
      ? setInterval(() => {
          if (killing || report.killed >= (scenario.maxKills ?? Number.POSITIVE_INFINITY)) return;
          if (performance.now() - lastKill < (scenario.killEveryMs ?? 0)) return;
          const lines = children.tallyLines();
          if (lines.length <= seenLines) return;
          seenLines = lines.length;
          const pid = Number(lines[lines.length - 1].split('\t')[1]);
          killing = true;
          const restarted = children.kill(pid);
          if (!restarted) {
            killing = false;
            return;
          }
          report.killed++;
          lastKill = performance.now();
          restarted.then(
            () => {
              killing = false;
            },
            (err) => {
              killing = false;
              log(`could not restart a consumer: ${String(err)}`);
            },
          );
        }, 25)
      : undefined;
  // Pauses, driven by work like the kills: a consumer process is SIGSTOPped right after it starts a
  // step body. An extra body is the pause's when it began while (or shortly after) the process
  // that ran the step's earlier body was paused past its lease, that body having begun before the
  // pause: a takeover of its lapsed lease. Times are this process's, when it saw each body begin
  // (tally lines, polled every 25 ms; its own bodies, timed as they begin).
  const leaseTtlMs = stepLeaseTtlMs(fixture.config.consumerVisibilitySeconds);
  const lineSeenAt: number[] = [];
  const pauses: Array<{ pid: number; start: number; end: number }> = [];
  let lastPause = 0;
  let pausing = false;
  const pauser =
    children && scenario.pauseEveryMs
      ? setInterval(() => {
          const lines = children.tallyLines();
          while (lineSeenAt.length < lines.length) lineSeenAt.push(performance.now());
          if (pausing || report.paused >= (scenario.maxPauses ?? Number.POSITIVE_INFINITY)) return;
          if (performance.now() - lastPause < (scenario.pauseEveryMs ?? 0)) return;
          if (lines.length === 0 || performance.now() - lineSeenAt[lines.length - 1] > 100) return;
          const pid = Number(lines[lines.length - 1].split('\t')[1]);
          const at = performance.now();
          const pauseMs = scenario.pauseMs ?? 0;
          const resumed = children.pause(pid, pauseMs);
          if (!resumed) return;
          pausing = true;
          report.paused++;
          lastPause = at;
          if (pauseMs > leaseTtlMs) {
            report.pausedPastLease++;
            pauses.push({ pid, start: at, end: at + pauseMs });
          }
          resumed.then(() => {
            pausing = false;
          });
        }, 25)
      : undefined;
  const ownBodies = timedTally();
  try {
    // A bounded number of runs in flight, like a steady stream of work.
    let next = 0;
    const inFlight = Math.min(opts.inFlight ?? 20, opts.runs);
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < opts.runs) {
          const i = next++;
          let run: Awaited<ReturnType<typeof start>>;
          try {
            run =
              scenario.bodyMs === undefined
                ? await start(workflows.countedSteps as never, [`${prefix}:${i}`, 3])
                : await start(workflows.slowCountedSteps as never, [`${prefix}:${i}`, 3, scenario.bodyMs]);
          } catch (err) {
            report.failedToStart++;
            log(`run ${i} failed to start: ${String(err)}`);
            continue;
          }
          runIds.push(run.runId);
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<typeof STUCK>((resolve) => {
            timer = setTimeout(() => resolve(STUCK), opts.runDeadlineMs ?? 120_000);
          });
          const value = await Promise.race([run.returnValue, late]);
          clearTimeout(timer);
          if (value === STUCK) {
            const events = (
              await worlds[0].events.list({ runId: run.runId, pagination: { limit: 1000 }, resolveData: 'none' })
            ).data;
            const last = events[events.length - 1];
            report.stuck.push(
              `${run.runId} (${events.length} events, last ${last?.eventType} ${last?.correlationId ?? ''} at ${String(last?.createdAt)})`,
            );
            continue;
          }
          report.completed++;
          if (value !== 3 + (0 + 1 + 2 + 3)) report.wrongResult++;
          if (report.completed % 100 === 0) log(`${report.completed}/${opts.runs} runs completed`);
        }
      }),
    );

    // Checks run without faults (and without kills or pauses).
    if (killer) clearInterval(killer);
    if (pauser) clearInterval(pauser);
    for (const p of proxies.all) p.setRules([]);
    const world = worlds[0];
    for (const runId of runIds) {
      const events = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await world.events.list({ runId, pagination: { cursor, limit: 1000 }, resolveData: 'none' });
        events.push(...page.data);
        if (!page.hasMore) break;
        cursor = page.cursor ?? undefined;
      }
      if (events.some((e, i) => eventIdToSlot(e.eventId) !== i + 1)) report.holeyLogs++;
      const steps = new Map<string, number>();
      let runTerminals = 0;
      for (const e of events) {
        if (e.eventType === 'step_created') steps.set(e.correlationId ?? '', steps.get(e.correlationId ?? '') ?? 0);
        if (e.eventType === 'step_completed' || e.eventType === 'step_failed')
          steps.set(e.correlationId ?? '', (steps.get(e.correlationId ?? '') ?? 0) + 1);
        if (e.eventType === 'run_completed' || e.eventType === 'run_failed' || e.eventType === 'run_cancelled')
          runTerminals++;
      }
      for (const n of steps.values()) if (n !== 1) report.badStepTerminals++;
      if (runTerminals !== 1) report.badRunTerminals++;
    }

    const sqs = fixture.clients.sqs;
    const attrs = async (url: string) => {
      const a = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      const n = (k: string) => Number((a.Attributes as Record<string, string> | undefined)?.[k] ?? 0);
      return {
        visible: n('ApproximateNumberOfMessages'),
        inFlight: n('ApproximateNumberOfMessagesNotVisible'),
        delayed: n('ApproximateNumberOfMessagesDelayed'),
      };
    };
    const { queueUrl, dlqUrl } = await queueUrls(createContext(fixture.config, fixture.clients));
    // Duplicates of the last messages may still be in flight: give them a moment to drain.
    const drainEnd = Date.now() + (scenario.drainMs ?? 30_000);
    for (;;) {
      const q = await attrs(queueUrl);
      report.queueLeft = q.visible + q.inFlight + q.delayed;
      if (report.queueLeft === 0 || Date.now() > drainEnd) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    report.dlqMessages = Object.values(await attrs(dlqUrl)).reduce((a, b) => a + b, 0);
    if (report.dlqMessages > 0) {
      const peek = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: dlqUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 0,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      for (const m of peek.Messages ?? []) {
        const a = m.MessageAttributes ?? {};
        report.dlqDetails.push(
          `${a['eve.queue']?.StringValue} ${a['eve.id']?.StringValue} receives=${m.Attributes?.ApproximateReceiveCount} body=${(m.Body ?? '').slice(0, 120)}`,
        );
      }
    }
    report.nonTerminalRuns = (
      await world.runs.list({ status: ['pending', 'running'], resolveData: 'none', pagination: { limit: 100 } })
    ).data.length;
    report.pendingClaims = await countItems(fixture.clients, fixture.config.tableName, 'QKEY#', 'pending');

    const counts = new Map([...tally().entries()].filter(([k]) => k.startsWith(`${prefix}:`)));
    for (const k of children?.tally() ?? []) {
      if (!k.startsWith(`${prefix}:`)) continue;
      counts.set(k, (counts.get(k) ?? 0) + 1);
      report.bodiesInChildren++;
    }
    report.bodiesRan = [...counts.values()].reduce((n, c) => n + c, 0);
    report.extraBodies = report.bodiesRan - counts.size;
    // Each body's process and when it began, to attribute the extra ones.
    const began = new Map<string, Array<{ pid: number; at: number }>>();
    const add = (k: string, pid: number, at: number) => began.set(k, [...(began.get(k) ?? []), { pid, at }]);
    for (const [k, times] of ownBodies.at)
      if (k.startsWith(`${prefix}:`)) for (const t of times) add(k, process.pid, t);
    (children?.tallyLines() ?? []).forEach((l, i) => {
      const [k, pid] = l.split('\t');
      if (k.startsWith(`${prefix}:`)) add(k, Number(pid), lineSeenAt[i] ?? Number.POSITIVE_INFINITY);
    });
    for (const [key, runs] of began) {
      runs.sort((a, b) => a.at - b.at);
      for (const later of runs.slice(1)) {
        const paused = pauses.some(
          (p) =>
            runs.some((e) => e.pid === p.pid && e.at <= p.start && e !== later) &&
            later.at >= p.start &&
            later.at <= p.end + 2 * leaseTtlMs,
        );
        if (paused) report.extraBodiesPaused++;
        else {
          report.extraBodiesUnpaused++;
          const when = (t: number) => ((t - t0) / 1000).toFixed(1);
          report.unpausedDetails.push(
            `${key}: ${runs.map((e) => `${e.pid === process.pid ? 'here' : e.pid}@${when(e.at)}`).join(', ')}; pauses ${pauses.map((p) => `${p.pid}@${when(p.start)}-${when(p.end)}`).join(', ') || 'none'}; skews ${JSON.stringify(children?.pids() ?? [])}`,
          );
        }
      }
    }
    report.extraBodiesPct = counts.size ? (100 * report.extraBodies) / counts.size : 0;
  } finally {
    if (killer) clearInterval(killer);
    if (pauser) clearInterval(pauser);
    await children?.stop();
    for (const p of proxies.all) {
      p.setRules([]);
      for (const [k, v] of Object.entries(p.stats.injected)) report.injected[`${p.service} ${k}`] = v;
      report.requests[p.service] = p.stats.requests;
    }
    setWorld(undefined as never);
    for (const w of worlds) await w.close().catch(() => undefined);
    if (extraClients) destroyClients(extraClients);
    await proxies.close();
    report.backstopWakes = backstop.wakes;
    report.leaseNotes = leaseNotes.slice(0, 50);
    report.backstopRuns = backstop.runs.size;
    report.seconds = (performance.now() - t0) / 1000;
  }
  return report;
}

/** This process's step tally (`globalThis.__e2eStepTally`), timing each body as it begins. */
class TimedTally extends Map<string, number> {
  readonly at = new Map<string, number[]>();
  override set(key: string, value: number): this {
    this.at?.set(key, [...(this.at.get(key) ?? []), performance.now()]);
    return super.set(key, value);
  }
}

function timedTally(): TimedTally {
  const g = globalThis as Record<string, unknown>;
  if (!(g.__e2eStepTally instanceof TimedTally)) {
    const t = new TimedTally();
    for (const [k, v] of (g.__e2eStepTally as Map<string, number> | undefined) ?? []) Map.prototype.set.call(t, k, v);
    g.__e2eStepTally = t;
  }
  return g.__e2eStepTally as TimedTally;
}

async function queueUrls(ctx: WorldContext): Promise<{ queueUrl: string; dlqUrl: string }> {
  const t = createTransport(ctx);
  return { queueUrl: await t.queueUrl(), dlqUrl: await t.dlqUrl() };
}

/** Items whose PK starts with `prefix` (and whose `state` is `state`, when given). */
async function countItems(
  clients: ReturnType<typeof createClients>,
  tableName: string,
  prefix: string,
  state?: string,
): Promise<number> {
  let n = 0;
  let start: Record<string, never> | undefined;
  do {
    const out = await clients.ddb.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: state === undefined ? 'begins_with(PK, :q)' : 'begins_with(PK, :q) AND #state = :state',
        ...(state === undefined ? {} : { ExpressionAttributeNames: { '#state': 'state' } }),
        ExpressionAttributeValues: { ':q': { S: prefix }, ...(state === undefined ? {} : { ':state': { S: state } }) },
        ExclusiveStartKey: start,
      }),
    );
    n += out.Count ?? 0;
    start = out.LastEvaluatedKey as Record<string, never> | undefined;
  } while (start);
  return n;
}

/** Everything that must hold, as one list of violations (empty = all good). */
export function violations(r: FaultReport): string[] {
  const v: string[] = [];
  if (r.failedToStart) v.push(`${r.failedToStart} runs failed to start`);
  if (r.completed !== r.runs - r.failedToStart)
    v.push(`${r.runs - r.completed} runs did not complete: ${r.stuck.join('; ')}`);
  if (r.wrongResult) v.push(`${r.wrongResult} runs returned a wrong value`);
  if (r.holeyLogs) v.push(`${r.holeyLogs} runs have event ids that are not dense slots`);
  if (r.badStepTerminals) v.push(`${r.badStepTerminals} steps without exactly one terminal event`);
  if (r.badRunTerminals) v.push(`${r.badRunTerminals} runs without exactly one terminal event`);
  if (r.dlqMessages) v.push(`${r.dlqMessages} messages in the DLQ: ${r.dlqDetails.join('; ')}`);
  if (r.queueLeft) v.push(`${r.queueLeft} messages left in the queue`);
  if (r.nonTerminalRuns) v.push(`${r.nonTerminalRuns} runs left pending/running`);
  // A SIGKILL between an accepted send and its `sent` mark leaves a pending claim behind; it is
  // harmless (the next queue() with the key takes it over after the lease), so only a run without
  // kills must leave none.
  if (r.pendingClaims && !r.killed) v.push(`${r.pendingClaims} idempotency claims left pending`);
  if (r.bodiesRan - r.extraBodies !== r.bodiesExpected)
    v.push(`${r.bodiesExpected - (r.bodiesRan - r.extraBodies)} step bodies never ran`);
  return v;
}

// ------------------------------------------------------------------ consumer processes

/** dist/ for the child processes: test/helpers/dist.ts (re-exported for the files that take it from here). */
export { ensureDist };

export async function startChildren(
  n: number,
  env: Record<string, string>,
  tuning: Partial<WorldTuning>,
  log: (m: string) => void,
  /** Each chunk of a consumer process's stdout (its log lines). */
  onStdout: (pid: number, text: string) => void = () => {},
  /** Clock skew (ms) of the process at each index. */
  skewsMs: number[] = [],
) {
  const distUrl = ensureDist();
  const dir = mkdtempSync(path.join(tmpdir(), 'eve-faults-'));
  const tallyFile = path.join(dir, 'tally.txt');
  writeFileSync(tallyFile, '');
  const script = path.join(here, 'faults-consumer-child.mjs');
  const spawnOne = (index: number) =>
    new Promise<ChildProcess>((resolve, reject) => {
      const skew = skewsMs[index] ? { EVE_TEST_CLOCK_SKEW_MS: String(skewsMs[index]) } : {};
      const child: ChildProcess = spawn(
        process.execPath,
        ['--no-warnings', script, distUrl, path.join(wellKnown, 'flow.mjs'), tallyFile, JSON.stringify(tuning)],
        {
          env: { ...process.env, ...env, ...skew },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      spawned.push(child);
      indexOf.set(child, index);
      let err = '';
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
        if (err.length > 20_000) err = err.slice(-10_000);
        if (/lost the lease/.test(d.toString())) onStdout(child.pid ?? 0, d.toString());
      });
      child.stdout?.on('data', (d: Buffer) => {
        const text = d.toString();
        onStdout(child.pid ?? 0, text);
        if (text.includes('ready')) resolve(child);
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`consumer process exited before it was ready (${code ?? signal}): ${err.slice(-2000)}`)),
      );
    });
  const spawned: ChildProcess[] = [];
  const indexOf = new Map<ChildProcess, number>();
  const procs = await Promise.all(Array.from({ length: n }, (_, i) => spawnOne(i)));
  const stopped = new Set<ChildProcess>();
  let restarting: Promise<void> | undefined;
  return {
    /**
     * SIGKILL the consumer process `pid` (if it is still one of ours) and start its replacement;
     * returns the replacement's readiness, or undefined when `pid` is not a live consumer.
     */
    kill(pid: number): Promise<void> | undefined {
      const i = procs.findIndex((p) => p.pid === pid && p.exitCode === null && p.signalCode === null);
      if (i < 0 || restarting) return undefined;
      procs[i].kill('SIGKILL');
      log(`SIGKILLed consumer process ${pid}`);
      restarting = spawnOne(i).then(
        (p) => {
          procs[i] = p;
          restarting = undefined;
        },
        (err) => {
          restarting = undefined;
          throw err;
        },
      );
      return restarting;
    },
    /**
     * SIGSTOP the consumer process `pid` for `ms`, then SIGCONT it; resolves once continued, or
     * undefined when `pid` is not a live, running consumer.
     */
    pause(pid: number, ms: number): Promise<void> | undefined {
      const p = procs.find((c) => c.pid === pid && c.exitCode === null && c.signalCode === null);
      if (!p || stopped.has(p)) return undefined;
      p.kill('SIGSTOP');
      stopped.add(p);
      log(`SIGSTOPped consumer process ${pid} for ${ms} ms`);
      return new Promise<void>((resolve) =>
        setTimeout(() => {
          if (stopped.delete(p)) p.kill('SIGCONT');
          resolve();
        }, ms),
      );
    },
    /** Each consumer process that ran, with its clock skew (ms). */
    pids: () => spawned.map((p, i) => `${p.pid}:${skewsMs[indexOf.get(p) ?? i] ?? 0}`),
    /** Raw tally lines, `<key>\t<pid>`, one per step body run in a consumer process. */
    tallyLines: () => readFileSync(tallyFile, 'utf8').split('\n').filter(Boolean),
    /** Step-body keys run in consumer processes. */
    tally: () =>
      readFileSync(tallyFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]),
    async stop() {
      await restarting?.catch(() => undefined);
      for (const p of stopped) p.kill('SIGCONT');
      stopped.clear();
      await stopChildren(procs);
    },
    dir,
  };
}

/** Stop child processes: SIGTERM, then SIGKILL after 10 s; resolves once every one has exited. */
export async function stopChildren(procs: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.exitCode !== null || p.signalCode !== null) return resolve();
          const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
          p.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
          p.kill('SIGTERM');
        }),
    ),
  );
}
