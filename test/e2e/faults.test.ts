/**
 * Fault suite (#12), small size: real workflows through real core while the fault proxy injects
 * throttling, 5xx and lost responses (DynamoDB, SQS, S3), duplicate SQS deliveries consumed by
 * two Worlds at once, SIGKILLed consumers, or consumers with clocks 60 s ahead and behind (one
 * paused past its lease now and then). Every invariant in test/helpers/faults-suite.ts
 * `violations()` must hold; duplicated step bodies are reported (console), and asserted only in the
 * clock scenario: there the step lease (src/storage/write/step-lease.ts) compares no clocks, so a
 * body runs twice only where its process was paused past its lease. A body killed mid-way runs
 * again by design.
 *
 * And two deployments on a table with deployment affinity, the old one retired by force half-way
 * (test/helpers/faults-deployments.ts): no run of the new one fails, no run of the old one
 * started after the retirement does, no step body runs on the other deployment.
 *
 * Larger sizes: `node bench/faults.mjs --runs 1000` (sets EVE_FAULTS_RUNS / EVE_FAULTS_REPORT).
 */
import { writeFileSync } from 'node:fs';
import { afterAll, describe, expect, test } from 'vitest';
import { stackEnv } from '../helpers/aws.js';
import {
  type DeploymentFaultReport,
  deploymentViolations,
  runDeploymentScenario,
} from '../helpers/faults-deployments.js';
import {
  clockSkew,
  duplicateDeliveries,
  type FaultReport,
  runFaultScenario,
  sigkillConsumers,
  violations,
  wireFaults,
} from '../helpers/faults-suite.js';

const RUNS = Number(process.env.EVE_FAULTS_RUNS ?? 12);
const SEED = Number(process.env.EVE_FAULTS_SEED ?? 1);
/** `wire`, `dup`, `kill`, `clock` or `deploy`: run only that scenario (bench/faults.mjs --only). */
const ONLY = process.env.EVE_FAULTS_ONLY;
const reports: Array<FaultReport | DeploymentFaultReport> = [];

afterAll(() => {
  if (process.env.EVE_FAULTS_REPORT)
    writeFileSync(process.env.EVE_FAULTS_REPORT, `${JSON.stringify(reports, null, 2)}\n`);
});

const timeout = 240_000 + RUNS * 2_000;

describe.sequential('fault suite', { tags: ['scenario'] }, () => {
  test.skipIf(ONLY !== undefined && ONLY !== 'wire')(
    'throttling, 5xx and lost responses on DynamoDB, SQS and S3: every run completes exactly once, nothing stranded',
    async () => {
      const r = await runFaultScenario(wireFaults(Number(process.env.EVE_FAULTS_RATE ?? 0.03)), {
        stackEnv: stackEnv(),
        runs: RUNS,
        seed: SEED,
      });
      reports.push(r);
      console.log(`[faults] ${r.scenario}: ${JSON.stringify(r)}`);
      // The proxy really injected every kind of fault on every service.
      for (const svc of ['dynamodb', 'sqs', 's3']) {
        for (const kind of ['throttle', 'error5xx', 'lose-response']) {
          expect(
            Object.keys(r.injected).some((k) => k.startsWith(`${svc} ${kind}:`)),
            `${svc} ${kind}`,
          ).toBe(true);
        }
      }
      expect(violations(r)).toEqual([]);
      expect(r.completed).toBe(RUNS);
    },
    timeout,
  );

  test.skipIf(ONLY !== undefined && ONLY !== 'dup')(
    'duplicate SQS deliveries handled by two consumer processes at once: every run completes exactly once; extra step bodies reported',
    async () => {
      const r = await runFaultScenario(duplicateDeliveries(Number(process.env.EVE_FAULTS_DUP_RATE ?? 0.1)), {
        stackEnv: stackEnv(),
        runs: RUNS,
        seed: SEED,
      });
      reports.push(r);
      console.log(
        `[faults] ${r.scenario}: extra step bodies ${r.extraBodies}/${r.bodiesExpected} (${r.extraBodiesPct.toFixed(2)}%); ${JSON.stringify(r)}`,
      );
      expect(r.injected['sqs duplicate:SendMessage'] ?? 0).toBeGreaterThan(0);
      expect(r.bodiesInChildren).toBeGreaterThan(0); // the consumer process did take part
      expect(violations(r)).toEqual([]);
      expect(r.completed).toBe(RUNS);
    },
    timeout,
  );

  test.skipIf(ONLY !== undefined && ONLY !== 'kill')(
    'consumer processes SIGKILLed mid-work (with duplicates): every run completes exactly once, nothing stranded',
    async () => {
      const r = await runFaultScenario(sigkillConsumers(), { stackEnv: stackEnv(), runs: RUNS, seed: SEED });
      reports.push(r);
      console.log(
        `[faults] ${r.scenario}: killed ${r.killed}; backstop woke ${r.backstopRuns} runs (${r.backstopWakes} wakes); extra step bodies ${r.extraBodies}/${r.bodiesExpected} (${r.extraBodiesPct.toFixed(2)}%); ${JSON.stringify(r)}`,
      );
      expect(r.killed).toBeGreaterThan(0);
      expect(r.bodiesInChildren).toBeGreaterThan(0);
      expect(violations(r)).toEqual([]);
      expect(r.completed).toBe(RUNS);
    },
    timeout,
  );

  test.skipIf(ONLY !== undefined && ONLY !== 'deploy')(
    'two deployments, the old retired by force half-way under wire faults: its runs complete or fail once, later starts are refused, no body on the other deployment',
    async () => {
      const r = await runDeploymentScenario({
        stackEnv: stackEnv(),
        runs: RUNS,
        seed: SEED,
        rate: Number(process.env.EVE_FAULTS_RATE ?? 0.02),
      });
      reports.push(r);
      console.log(`[faults] ${r.scenario}: ${JSON.stringify(r)}`);
      expect(r.startedNew).toBeGreaterThan(0);
      expect(r.completedOld + r.failedByRetire).toBeGreaterThan(0);
      expect(r.refusedAfterRetire).toBeGreaterThan(0); // starts did reach the retired deployment
      expect(deploymentViolations(r)).toEqual([]);
    },
    timeout,
  );

  test.skipIf(ONLY !== undefined && ONLY !== 'clock')(
    'consumer processes 60 s ahead and behind among healthy ones (slow bodies, duplicates, a pause past the lease): every run completes exactly once, no extra body but a paused one',
    async () => {
      // A run may take minutes here: core in the process 60 s behind waits out another
      // invocation's inline ownership 60 s longer (a clock use that decides when, design.md "Clocks").
      const r = await runFaultScenario(clockSkew(), {
        stackEnv: stackEnv(),
        runs: RUNS,
        seed: SEED,
        runDeadlineMs: 300_000,
      });
      reports.push(r);
      console.log(
        `[faults] ${r.scenario}: paused ${r.paused} (${r.pausedPastLease} past the lease); extra step bodies ${r.extraBodies}/${r.bodiesExpected} (paused ${r.extraBodiesPaused}, others ${r.extraBodiesUnpaused}); backstop woke ${r.backstopRuns} runs; ${JSON.stringify(r)}`,
      );
      expect(r.skewsMs).toEqual([60_000, -60_000]);
      expect(r.bodiesInChildren).toBeGreaterThan(0); // the skewed processes did take part
      expect(r.injected['sqs duplicate:SendMessage'] ?? 0).toBeGreaterThan(0);
      expect(violations(r)).toEqual([]);
      expect(r.completed).toBe(RUNS);
      // The step lease and the backstop compare no clocks across processes: a step body runs
      // twice only where its process was paused past its lease.
      expect(r.extraBodiesUnpaused).toBe(0);
    },
    timeout + 330_000, // its drain wait and run deadline
  );
});
